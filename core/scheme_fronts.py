"""Entry point of `python -m core.sweep`; the command lives in core/tools/sweep.py."""

from core.tools.sweep import main

if __name__ == "__main__":
    main()
