"""The Classroom's last section: the real pair's speed against fidelity, stepped through a few τ_accept values.

A radio picks the step (one click, any order, no state to keep); the text, the step's numbers and sentences
sit beside a small chart that marks the step, so one step fits a 1024x768 screen. The content is
`app.views.tradeoff_lesson`, read from the opening's recorded sweep; without it the section is one line.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app import recorded
from app.views import tradeoff_lesson as lesson

CSS = f"""
#{lesson.TOKENS_ID} {{max-height: 13em; overflow-y: auto; font-size: 1.05rem; line-height: 1.45;}}
.viasd-lesson-step p {{margin: 0.15rem 0; line-height: 1.35;}}
.viasd-lesson-numbers {{font-size: 1.1rem;}}
#{lesson.LEGEND_ID} {{font-size: 0.85rem;}}
"""
"""The lesson's styles (added to the app's CSS in app.ui): the text box scrolls past about 13 lines."""


def _view(grid: Any, choice: str) -> dict[str, Any]:
    steps = lesson.lesson_steps(grid)
    labels = [lesson.choice_label(s) for s in steps]
    index = labels.index(choice) if choice in labels else 0
    return {"step": lesson.step_html(steps, index), "tokens": lesson.step_tokens(steps, index),
            "chart": lesson.lesson_chart(grid, steps[index].tau)}


class TradeoffLesson:
    """The speed-against-fidelity lesson on the recorded Qwen2.5-Coder sweep (a closed accordion until opened)."""

    def __init__(self) -> None:
        grid = recorded.load(recorded.OPENING)
        self.steps = lesson.lesson_steps(grid)
        self.radio = None
        with gr.Accordion("The trade-off on the real pair: step τ_accept down and watch speed against fidelity",
                          open=False, elem_id="viasd-lesson"):
            if not self.steps:
                gr.HTML(lesson.missing_line(recorded.PROBLEMS.get(recorded.OPENING, "")))
                return
            labels = [lesson.choice_label(s) for s in self.steps]
            first = _view(grid, labels[0])
            self.radio = gr.Radio(labels, value=labels[0], label="τ_accept (tier 2 off, the recorded run's γ)",
                                  elem_id="viasd-lesson-pick")
            with gr.Row(equal_height=False):
                with gr.Column(scale=3, min_width=420):
                    self.step = gr.HTML(first["step"], elem_id="viasd-lesson-says")
                    self.tokens = gr.HTML(first["tokens"])
                with gr.Column(scale=2, min_width=300):
                    self.chart = gr.Plot(first["chart"], show_label=False, elem_id="viasd-lesson-chart")

    def show(self, choice: str) -> tuple[str, str, Any]:
        """The step picked in the radio: its numbers and sentences, its text, the chart marking it."""
        view = _view(recorded.load(recorded.OPENING), choice)
        return view["step"], view["tokens"], view["chart"]

    def wire(self) -> None:
        if self.radio is not None:
            self.radio.change(self.show, self.radio, [self.step, self.tokens, self.chart], api_visibility="private",
                              show_progress="hidden")
