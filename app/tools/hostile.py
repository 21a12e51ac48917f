"""Hostile values by declared parameter type, and how to tell the app's answer to them from a failure.

Shared by the fuzz test (tests/app/test_app_fuzz.py: every endpoint, one parameter at a time) and the
soak (app/tools/soak.py: 12 % of its requests). An answer is fine when it is a value or a Gradio error
whose message is one readable line. Two answers belong to Gradio, not the app: a value of the wrong
JSON type for a slider (None, "abc") fails inside Gradio's own preprocessing with its generic "has not
enabled verbose error reporting" notice, and Gradio's "not in the list of choices" message echoes the
value it refused, however long. Gradio's notice for a *well-typed* value is a failure: then it was the
app's own code that raised.
"""

from __future__ import annotations

import math

LONG = "x" * 100_000
HOSTILE = {
    "str": ["", LONG, "\x00\x1b[2J\u202eevil\u202c", "\ud800", "שלום مرحبا 🙂" * 200, "<script>alert(1)</script>",
            "../../../etc/passwd", None, "{{7*7}}\n<|im_end|>"],
    "choice": ["bogus", "", "\u202e", LONG, None],
    "float": [math.nan, math.inf, -math.inf, -1e308, 1e308, 2**70, -1, None, "abc"],
    "int": [2**70, -(2**70), math.nan, 1.5, -1, None, "abc"],
    "bool": [None, "yes", 2],
    "other": [None, LONG, -1],
    "file": [None, LONG, -1, "../../../etc/passwd"],
}
SAFE = {"prompt": "Name a colour.", "max_new_tokens": 4, "gamma": 2, "mode": "via", "values_text": "0.5, 1",
        "verifier": "", "drafter_id": "", "real_timing": False, "sampling": False}
"""Short, valid values for the parameters a hostile call does not attack."""
UNHANDLED = "has not enabled verbose error reporting"
GRADIO_CHOICE_ERROR = "is not in the list of choices"


def kind_of(parameter: dict) -> str:
    """The hostile class of one parameter of the app's API description (`view_api`)."""
    declared = parameter["python_type"]["type"]
    if declared.startswith("Literal["):
        return "choice"
    if declared == "filepath":  # an upload: Gradio takes only a file description ({"path": ...}) it stored itself
        return "file"
    return declared if declared in HOSTILE else "other"


def wrong_json_type(kind: str, value: object) -> bool:
    """A value Gradio's own preprocessing refuses before any app code runs."""
    if kind in ("float", "int"):
        return value is None or isinstance(value, str)
    if kind == "file":  # a bare string or number is not a file Gradio stored: it refuses it before any app code
        return value is not None and not isinstance(value, dict)
    return kind == "bool" and not isinstance(value, bool)


def problem(text: str, refused_by_gradio: bool = False) -> str:
    """Why an answer is not one readable line from the app ('' when it is)."""
    if UNHANDLED in text and not refused_by_gradio:
        return "an unhandled exception in the app (Gradio's generic notice for a well-typed value)"
    if "Traceback" in text or "internal error" in text:
        return f"untyped error: {text[:200]}"
    return ""


def error_problem(message: str, kind: str, value: object) -> str:
    """Why an error raised by a hostile call is a failure ('' when it is one short readable line or Gradio's)."""
    by_gradio = (UNHANDLED in message and wrong_json_type(kind, value)) or GRADIO_CHOICE_ERROR in message
    if problem(message, by_gradio):
        return problem(message, by_gradio)
    if not by_gradio and (not message or "\n" in message or len(message) > 500):
        return f"not one short line: {message[:200]!r}"
    return ""
