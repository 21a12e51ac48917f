"""Entry point, also for a Hugging Face Space: `python app.py`.

Server name and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT when set (Spaces set them).
"""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from app import held_log, native_memory  # noqa: E402

native_memory.limit_arenas()  # before torch and Gradio start their threads (app/native_memory.py says why)
native_memory.bound_kernel_caches()  # before the first model pass

from app.session import SESSIONS  # noqa: E402  (the env default must be set before gradio is imported)
from app.ui import build_demo, launch_kwargs  # noqa: E402

demo = build_demo()
demo.queue(default_concurrency_limit=4)

if __name__ == "__main__":
    SESSIONS.warm_up_in_background()
    native_memory.start_trimmer()
    held_log.start_if_asked(lambda: getattr(demo, "state_holder", None))
    demo.launch(**launch_kwargs())
