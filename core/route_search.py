"""Entry point of `python -m core.route_search`; the command lives in core/tools/route_search.py."""

from core.tools.route_search import main

if __name__ == "__main__":
    main()
