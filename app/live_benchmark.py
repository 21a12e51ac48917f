"""Entry point of `python -m app.live_benchmark`; the command lives in app/tools/live_benchmark.py."""

from app.tools.live_benchmark import main

if __name__ == "__main__":
    main()
