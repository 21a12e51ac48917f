"""Entry point of `python -m core.tune`; the command lives in core/tools/tune.py."""

from core.tools.tune import main

if __name__ == "__main__":
    main()
