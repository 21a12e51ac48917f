"""Widget behaviour the app needs beyond Gradio's defaults."""

from __future__ import annotations

import gradio as gr

_LENIENT_IDS: set[str] = set()
_slider_preprocess = gr.Slider.preprocess


def _preprocess(self: gr.Slider, payload: float | None) -> float | None:
    if getattr(self, "elem_id", None) in _LENIENT_IDS:
        return gr.Number.round_to_precision(payload, self.precision)
    return _slider_preprocess(self, payload)


gr.Slider.preprocess = _preprocess  # type: ignore[method-assign]


def lenient(slider: gr.Slider) -> gr.Slider:
    """Let a typed-in out-of-range value reach the handler instead of Gradio's raw error.

    Gradio's Slider raises "Value 1.7 is greater than maximum value 1.0" before any handler runs;
    with this, the number passes on, `Settings.config()` answers with one friendly sentence and the
    last good result stays on screen. Keyed by `elem_id`, not an instance attribute: once an event
    updates a slider, Gradio keeps a per-session copy rebuilt from its constructor arguments, and an
    instance override would be lost on that copy (a subclass would make Gradio write a .pyi stub).
    """
    if not slider.elem_id:
        raise ValueError("a lenient slider needs an elem_id")
    _LENIENT_IDS.add(slider.elem_id)
    return slider


def stop_requested_js(line: str) -> str:
    """A Stop button's page-side handler: while a run streams (its status line starts with "…"), `line` at once.
    The server's reply to a stop that was requested writes nothing: sent later, it could land after the run's own
    "Stopped" line and put a stale one back."""
    return f"(status) => (status || '').startsWith('…') ? {line!r} : status"
