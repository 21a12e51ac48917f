"""The `python -m core.<command>` tools (benchmark, calibrate, profile, tune, sweep, ...); nothing imports them."""
