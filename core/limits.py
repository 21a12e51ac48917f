"""The one place for size limits: the app, the CLI and the engine all read them from here."""

MAX_NEW_TOKENS = 512
"""Upper bound on tokens generated in one run (a 2-core CPU does about 10 tokens/s)."""

MAX_PROMPT_TOKENS = 2048
"""Upper bound on prompt length after the chat template, in tokens."""

MAX_PROMPT_CHARS = 20_000
"""Checked before tokenising, so a huge paste is refused cheaply."""

MAX_GAMMA = 16
"""Longest draft per round."""

MEMO_BYTES = 512 * 2**20
"""Memory budget of the per-prefix prediction memo that makes threshold dragging live."""
