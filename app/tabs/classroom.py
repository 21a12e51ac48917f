"""Tab 3, Classroom: a run replayed round by round, with captions to read aloud (app.classroom)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app import classroom, render
from app.guard import message, reports_errors
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from core import DecodeConfig, generate
from core.errors import ConfigError
from core.trace import Trace
from examples import load_walkthroughs

MODEL = {"concurrency_id": "model", "concurrency_limit": 1}
OUTPUTS = ("intro", "round_slider", "tokens", "round_table", "caption", "trace")
CLASS_TOKENS_ID = "viasd-class-tokens"


def _walkthroughs() -> dict[str, dict]:
    return {w["title"]: w for w in load_walkthroughs()}


def _decoder(trace: Trace):
    """Token-id decoder of the model that wrote `trace` (draft tokens that were thrown away have no text)."""
    tokenizer = SESSIONS.tokenizer_for(trace.models.get("verifier", ""))
    return lambda token_id: tokenizer.decode([token_id], skip_special_tokens=False)


def show_round(trace: Trace | None, round_number: float) -> dict:
    """One round of the replay (1-based round number): the text so far, the round's table, a caption."""
    if trace is None or not trace.rounds:
        return {"tokens": render.tokens_html(None, placeholder="Load a walkthrough to begin.", elem_id=CLASS_TOKENS_ID),
                "round_table": "", "caption": "Load a walkthrough or use your last run to start the replay."}
    index = max(0, min(int(round_number or 1) - 1, len(trace.rounds) - 1))
    table, caption = classroom.round_view(trace, index, _decoder(trace))
    return {"tokens": render.tokens_html(trace, current_round=index, elem_id=CLASS_TOKENS_ID),
            "round_table": table, "caption": caption}


def _opened(trace: Trace, intro: str) -> dict:
    return {"intro": intro, "round_slider": gr.update(minimum=1, maximum=max(1, len(trace.rounds)), value=1, step=1),
            "trace": trace, **show_round(trace, 1)}


@reports_errors("intro")
def _walkthrough(title: str, session: str) -> dict:
    walkthroughs = _walkthroughs()
    if title not in walkthroughs:
        raise ConfigError(f"unknown walkthrough '{title}': pick one from the list")
    w = walkthroughs[title]
    config = DecodeConfig(**w["config"]).validate()
    with PREFETCHER.foreground():
        trace = generate(SESSIONS.bundle(session), w["prompt"], config, replay=True)
    return _opened(trace, classroom.walkthrough_intro(w))


class ClassroomTab:
    """Walkthrough picker, round controls, the text with the current round outlined, table and caption."""

    def __init__(self) -> None:
        titles = list(_walkthroughs())
        with gr.Row():
            self.walk = gr.Dropdown(titles, value=titles[0] if titles else None, label="Walkthrough", scale=3)
            self.walk_btn = gr.Button("Load walkthrough", variant="primary", scale=1, elem_id="viasd-walk")
            self.last_btn = gr.Button("Use my last run", scale=1)
        intro = gr.Markdown("Pick a walkthrough and press **Load**, then step through it round by round.")
        with gr.Row():
            self.prev_btn = gr.Button("◀ Previous round")
            round_slider = gr.Slider(1, 2, value=1, step=1, label="Round", scale=3, elem_id="viasd-round-slider")
            self.next_btn = gr.Button("Next round ▶")
        tokens = gr.HTML(render.tokens_html(None, placeholder="Load a walkthrough to begin.", elem_id=CLASS_TOKENS_ID))
        round_table = gr.HTML("")
        caption = gr.Markdown("", elem_id="viasd-caption")
        gr.HTML(render.legend_html())
        self.out = {"intro": intro, "round_slider": round_slider, "tokens": tokens, "round_table": round_table,
                    "caption": caption, "trace": gr.State(None)}
        assert tuple(self.out) == OUTPUTS

    def _keyed(self, update: dict[str, Any]) -> dict:
        return {self.out[name]: value for name, value in update.items()}

    def load_walkthrough(self, title: str, request: gr.Request = None) -> dict:
        """Run a ready walkthrough on this visitor's models (memo allowed) and show its first round."""
        return self._keyed(_walkthrough(title, session_id(request)))

    def use_last_run(self, trace: Trace | None) -> dict:
        """Replay the last Generate-tab run in the classroom."""
        if trace is None:
            gr.Warning("no run yet: press Run in Generate & tune first")
            return self._keyed({"intro": message("No run yet: press Run in Generate & tune first.")})
        intro = (f"### Your last run\n\n**Prompt:** {trace.prompt}\n\nMode `{trace.config['mode']}`, τ_accept "
                 f"{trace.config['tau_accept']}, τ_slim {trace.config['tau_slim']}, gamma {trace.config['gamma']}.")
        return self._keyed(_opened(trace, intro))

    def show(self, trace: Trace | None, round_number: float) -> dict:
        return self._keyed(show_round(trace, round_number))

    @staticmethod
    def step(trace: Trace | None, round_number: float, delta: int) -> float:
        if trace is None or not trace.rounds:
            return 1
        return max(1, min(len(trace.rounds), int(round_number or 1) + delta))

    def wire(self, last_trace: gr.State) -> None:
        out, state, slider = list(self.out.values()), self.out["trace"], self.out["round_slider"]
        view = [self.out[n] for n in ("tokens", "round_table", "caption")]
        self.walk_btn.click(self.load_walkthrough, self.walk, out, api_name="walkthrough", **MODEL)
        self.last_btn.click(self.use_last_run, last_trace, out, api_visibility="private")
        slider.change(self.show, [state, slider], view, api_visibility="private", show_progress="hidden")
        self.prev_btn.click(lambda t, r: self.step(t, r, -1), [state, slider], slider, api_visibility="private",
                            show_progress="hidden")
        self.next_btn.click(lambda t, r: self.step(t, r, +1), [state, slider], slider, api_visibility="private",
                            show_progress="hidden")
