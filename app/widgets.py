"""Widget behaviour the app needs beyond Gradio's defaults."""

from __future__ import annotations

import gradio as gr


def lenient(slider: gr.Slider) -> gr.Slider:
    """Let a typed-in out-of-range value reach the handler instead of Gradio's raw error.

    Gradio's Slider raises "Value 1.7 is greater than maximum value 1.0" before any handler runs;
    with this, the number passes on, `Settings.config()` answers with one friendly sentence and the
    last good result stays on screen. (An instance override, not a subclass: Gradio writes a .pyi
    stub next to every module that subclasses a component.)
    """
    slider.preprocess = lambda payload: gr.Number.round_to_precision(payload, slider.precision)  # type: ignore[method-assign]
    return slider
