import sys

from core.tools.cli import main

sys.exit(main())
