"""The command-line tools, each run as `python -m core.tools.<name>` (benchmark, calibrate, profile, tune,
record_sweep, ...); nothing in the library imports them."""
