"""Entry point of `python -m app.latency`; the command lives in app/tools/latency.py."""

from app.tools.latency import main

if __name__ == "__main__":
    main()
