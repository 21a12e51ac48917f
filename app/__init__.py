"""VIA-SD Explorer's Gradio app: renders traces from core; never decides a token itself."""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no outside connections unless asked for
