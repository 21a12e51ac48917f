"""Entry point of `python -m core.scheme_fronts`; the command lives in core/tools/scheme_fronts.py."""

from core.tools.scheme_fronts import main

if __name__ == "__main__":
    main()
