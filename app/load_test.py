"""Entry point of `python -m app.load_test`; the command lives in app/tools/load_test.py."""

import sys

from app.tools.load_test import main

if __name__ == "__main__":
    sys.exit(main())
