"""Entry point of `python -m core.benchmark`; the command lives in core/tools/benchmark.py."""

from core.tools.benchmark import main

if __name__ == "__main__":
    main()
