"""Entry point of `python -m core.profile`; the command lives in core/tools/profile.py."""

from core.tools.profile import main

if __name__ == "__main__":
    main()
