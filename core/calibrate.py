"""Entry point of `python -m core.calibrate`; the command lives in core/tools/calibrate.py."""

from core.tools.calibrate import main

if __name__ == "__main__":
    main()
