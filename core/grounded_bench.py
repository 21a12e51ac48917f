"""Entry point of `python -m core.grounded_bench`; the command lives in core/tools/grounded_bench.py."""

from core.tools.grounded_bench import main

if __name__ == "__main__":
    main()
