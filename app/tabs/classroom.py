"""Tab 3, Classroom: a run replayed round by round, with captions to read aloud (app.views.round_replay).

Laid out for a projector: the replay controls come first, so at 1024x768 the previous / next
buttons, the round slider and the text stay above the fold; the walkthrough's notes go below.
Presenter mode (a body class set in the browser, no server round trip) enlarges the type and
hides the app's header; later rounds stay hidden until reached unless the teacher shows them.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.gpu import on_gpu, seconds_for_tokens
from app.guard import message, reports_errors
from app.model_thread import MODEL, model_event
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from app.views import render, walkthroughs
from app.views import round_replay as classroom
from core import attach_fidelity, generate
from core.errors import ConfigError
from core.trace import Trace
from examples import expectations_for, load_walkthroughs, walkthrough_files

OUTPUTS = ("heading", "round_slider", "tokens", "round_table", "caption", "trace", "notes", "details")
CLASS_TOKENS_ID = "viasd-class-tokens"
PRESENTER_CLASS = "viasd-presenter"
EMPTY = classroom.EMPTY

CSS = f"""
:root body.{PRESENTER_CLASS} {{--viasd-class-caption: 21px; --viasd-class-caption-dense: 20px; --viasd-class-text: 23px;
  --viasd-class-table: 17px; --viasd-cell-pad: 0 6px; --viasd-class-box: 3.2em;
  --viasd-class-notes: 20px; --viasd-class-button: 19px; --layout-gap: 6px;}}
#viasd-presenter-keys {{display: none;}}
body.{PRESENTER_CLASS} #viasd-class-options {{gap: 2px; justify-content: center; padding: 2px 8px;}}
body.{PRESENTER_CLASS} #viasd-class-options label {{padding: 0; font-size: 15px; white-space: nowrap;}}
body.{PRESENTER_CLASS} #viasd-presenter, body.{PRESENTER_CLASS} #viasd-show-future {{padding: 1px 6px !important;
  border-width: 0 !important; box-shadow: none !important; background: none !important; min-height: 0;}}
body.{PRESENTER_CLASS} #viasd-intro, body.{PRESENTER_CLASS} #viasd-class-plan {{display: none;}}
body.{PRESENTER_CLASS} #viasd-walk-pick [data-testid="block-info"] {{display: none;}}
body.{PRESENTER_CLASS} #viasd-walk-row, body.{PRESENTER_CLASS} #viasd-replay-controls {{gap: 8px;}}
body.{PRESENTER_CLASS} #viasd-walk-row > *, body.{PRESENTER_CLASS} #viasd-replay-controls > * {{min-height: 0;}}
body.{PRESENTER_CLASS} #viasd-walk-row button, body.{PRESENTER_CLASS} #viasd-replay-controls button {{
  min-height: 0; padding: 4px 10px; line-height: 1.2;}}
body.{PRESENTER_CLASS} #viasd-walk-row button {{font-size: 16px;}}
body.{PRESENTER_CLASS} #viasd-walk-pick, body.{PRESENTER_CLASS} #viasd-round-slider {{padding: 2px 8px;}}
body.{PRESENTER_CLASS} #viasd-round-slider .min_value, body.{PRESENTER_CLASS} #viasd-round-slider .max_value
  {{display: none;}}
body.{PRESENTER_CLASS} #{CLASS_TOKENS_ID} {{line-height: 1.55; min-height: 0; padding-block: 0.1rem;}}
body.{PRESENTER_CLASS} #viasd-caption .viasd-caption.dense {{font-size: var(--viasd-class-caption-dense);}}
body.{PRESENTER_CLASS} #viasd-round table, body.{PRESENTER_CLASS} .viasd-caption {{margin: 0;}}
body.{PRESENTER_CLASS} #viasd-walk-pick input {{padding-top: 2px; padding-bottom: 2px;}}
body.{PRESENTER_CLASS} #viasd-classroom-heading p {{white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}}
body.{PRESENTER_CLASS} .viasd-round th, body.{PRESENTER_CLASS} .viasd-round td {{line-height: 1.25;}}
#viasd-round td.why, #viasd-round td.decision, #viasd-round th {{white-space: nowrap;}}
#viasd-round td.tokcell {{white-space: pre-wrap; word-break: break-word; max-width: 16em;}}
#viasd-caption .viasd-caption {{font-size: var(--viasd-class-caption, 1.15rem); line-height: 1.3;
  color: var(--viasd-fg, inherit);}}
.viasd-caption ol {{margin: 0.1rem 0 0.1rem 1.4rem; padding: 0;}} #viasd-classroom-heading p {{margin: 0;}}
.viasd-caption li, .viasd-caption p {{margin: 0.1rem 0; line-height: 1.3;}}
#{CLASS_TOKENS_ID} {{font-size: var(--viasd-class-text, 1.2rem); max-height: var(--viasd-class-box, 6.5em);
  overflow-y: auto;}}
#viasd-round table {{font-size: var(--viasd-class-table, 1.05rem);}}
#viasd-round td.rejected {{text-decoration: line-through; text-decoration-thickness: 2px;}}
#viasd-classroom-heading, #viasd-classroom-notes {{font-size: var(--viasd-class-notes, 1.05rem);}}
#viasd-prev, #viasd-next {{font-size: var(--viasd-class-button, 1rem);}}
"""
"""Classroom styles (added to the app's CSS in app.ui). Presenter sizes are variables set on <body>: Gradio
copies every rule under its container prefix, out-ranking a plain `body.presenter x` rule (:root out-ranks the
dark theme's `:root .dark` --layout-gap). In presenter mode the controls shrink to two short rows, the text box
keeps about two lines and scrolls to the current round (FOLLOW_ROUND), so the controls, the text, the caption and
the round's table fit a 1024x768 projector on every round of every walkthrough (tests/app/test_classroom_browser.py)."""

FOLLOW_ROUND = (f"() => {{ const box = document.getElementById('{CLASS_TOKENS_ID}'); "
                "const now = box && box.querySelector('.tok.current'); "
                "if (now) box.scrollTop = now.offsetTop - box.offsetTop - 8; }")
"""Scroll the replay's text box (not the page) so the current round's first token is in view."""

TOGGLE_PRESENTER = f"(on) => {{ document.body.classList.toggle('{PRESENTER_CLASS}', !!on); return on; }}"

PRESENTER_KEYS = f"""
if (!window.viasdPresenterKeys) {{
  window.viasdPresenterKeys = true;
  const typing = (el) => el && (el.isContentEditable || el.tagName === 'TEXTAREA' ||
    (el.tagName === 'INPUT' && !['range', 'checkbox', 'button'].includes(el.type)));
  const step = (key) => ({{ArrowRight: 'viasd-next', PageDown: 'viasd-next', ' ': 'viasd-next',
                          ArrowLeft: 'viasd-prev', PageUp: 'viasd-prev'}})[key];
  const handle = (event) => {{
    if (!document.body.classList.contains('{PRESENTER_CLASS}') || typing(event.target)) return;
    const id = step(event.key);
    const button = id && document.getElementById(id);
    if (!button || !button.offsetParent || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault(); event.stopPropagation();
    if (event.type === 'keydown') button.click();
  }};
  document.addEventListener('keydown', handle, true);
  document.addEventListener('keyup', handle, true);
}}
"""
"""A presenter's clicker: →, PageDown and Space step to the next round, ← and PageUp back (presenter mode only,
never while typing). Installed once on the page by an empty gr.HTML (Gradio 6 runs its js_on_load on mount);
keyup is swallowed too, so a focused button or checkbox does not also act on the Space."""


def _walkthroughs() -> dict[str, dict]:
    return {w["title"]: w for w in load_walkthroughs()}


def _choices() -> list[tuple[str, str]]:
    """The picker's entries, numbered as the list shows them ("3. Classic …"); a value is a title, as notes cite it."""
    return [(walkthroughs.numbered(i, title), title) for i, title in enumerate(_walkthroughs(), start=1)]


def _number(title: str) -> int:
    return list(_walkthroughs()).index(title) + 1


def _decoder(trace: Trace) -> classroom.Decode:
    """Token-id decoder of the model that wrote `trace`; a saved trace whose model is not loaded (a recorded
    walkthrough) spells draft tokens from its own tokens instead, never with another model's tokenizer."""
    tokenizer = SESSIONS.tokenizer_for(trace.models.get("verifier", ""))  # the embedded one when that model is gone

    def decode(token_id: int) -> str:
        return tokenizer.decode([token_id], skip_special_tokens=False)

    sample = trace.tokens[:8]
    return decode if all(decode(t.token_id) == t.text for t in sample) else classroom.trace_decoder(trace)


def show_round(trace: Trace | None, round_number: float, show_future: bool = False) -> dict:
    """One round of the replay (round_number from 1): the text so far, the round's table, a caption."""
    if trace is None or not trace.rounds:
        return {"tokens": render.tokens_html(None, placeholder="Load a walkthrough to begin.", elem_id=CLASS_TOKENS_ID),
                "round_table": "", "caption": f"<div class='viasd-caption'><p>{EMPTY}</p></div>"}
    index = max(0, min(int(round_number or 1) - 1, len(trace.rounds) - 1))
    table, caption = classroom.round_view(trace, index, _decoder(trace))
    shown = classroom.visible_trace(trace, index, bool(show_future))
    # cut=: tokens this round's audit cut stand struck through (with show_future none of them is in the text)
    return {"tokens": render.tokens_html(shown, current_round=index, elem_id=CLASS_TOKENS_ID, cut=shown.rolled_back),
            "round_table": table, "caption": caption}


def _opened(trace: Trace, heading: str, notes: str, details: str, show_future: bool) -> dict:
    return {"heading": heading, "notes": notes, "details": details, "trace": trace,
            "round_slider": gr.update(minimum=1, maximum=max(1, len(trace.rounds)), value=1, step=1),
            **show_round(trace, 1, show_future)}


def _walkthrough_seconds(title: str, *_: Any, **__: Any) -> int:
    """GPU time to ask for (ZeroGPU): fitted to the walkthrough's token count (its fix runs it twice, with fidelity)."""
    walkthrough = _walkthroughs().get(title, {})
    try:
        config = walkthroughs.walkthrough_config(walkthrough) if walkthrough else None
    except ConfigError:
        config = None
    runs = 4 if walkthrough.get("fixed_config") else 1
    return seconds_for_tokens(config.max_new_tokens if config else 64, runs=runs)


def _pick(title: str) -> dict:
    walkthroughs = _walkthroughs()
    if title not in walkthroughs:
        raise ConfigError(f"unknown walkthrough '{title}': pick one from the list")
    return walkthroughs[title]


@on_gpu(_walkthrough_seconds)
def _run_walkthrough(title: str, session: str) -> Trace:
    walkthrough = _pick(title)
    config = walkthroughs.walkthrough_config(walkthrough)
    with PREFETCHER.foreground():  # on this visitor's models (the embedded pair unless they loaded others)
        return generate(SESSIONS.bundle(session), walkthrough["prompt"], config, replay=True)


@on_gpu(_walkthrough_seconds)
def _run_fix(title: str, session: str) -> tuple[Trace, Trace]:
    """The walkthrough's run and its fix's run, both with fidelity measured (so the notes can compare them)."""
    walkthrough = _pick(title)
    fixed = walkthroughs.walkthrough_config(walkthrough, fixed=True)
    if fixed is None:
        raise ConfigError(f"the walkthrough '{title}' has no fix to run")
    bundle = SESSIONS.bundle(session)
    with PREFETCHER.foreground():
        before = generate(bundle, walkthrough["prompt"], walkthroughs.walkthrough_config(walkthrough), replay=True)
        after = generate(bundle, walkthrough["prompt"], fixed, replay=True)
        for trace in (before, after):
            attach_fidelity(bundle, trace, expectations=expectations_for(walkthrough["prompt"]))
    return before, after


@reports_errors("heading")
def _walkthrough(title: str, session: str, show_future: bool) -> dict:
    """Open a walkthrough: replayed from its saved trace when it names one (no model loads), else run here."""
    w = _pick(title)
    trace = walkthroughs.recorded_trace(w) or _run_walkthrough(title, session)
    heading = walkthroughs.walkthrough_heading(w, trace, _number(title))
    return _opened(trace, heading, walkthroughs.walkthrough_notes(w, trace), walkthroughs.provenance(w, trace),
                   show_future)


@reports_errors("heading")
def _fix(title: str, session: str, show_future: bool) -> dict:
    before, after = _run_fix(title, session)
    w = _walkthroughs()[title]
    heading = walkthroughs.walkthrough_heading(w, after, _number(title), fix=True)
    notes = walkthroughs.fix_notes(w, before, after, list(classroom.recorded_cuts(after)))
    return _opened(after, heading, notes, walkthroughs.provenance(w, after), show_future)


def _has_fix(title: str) -> bool:
    return bool(_walkthroughs().get(title, {}).get("fixed_config"))


class ClassroomTab:
    """Replay controls first (projector-friendly), then the text, the caption, the round's table, the notes."""

    def __init__(self) -> None:
        choices = _choices()
        first = choices[0][1] if choices else None
        with gr.Accordion("A 15-minute class, step by step", open=False, elem_id="viasd-class-plan"):
            gr.Markdown(walkthroughs.class_plan([p.stem for p in walkthrough_files()], list(_walkthroughs())))
        with gr.Row(equal_height=True, elem_id="viasd-walk-row"):
            self.walk = gr.Dropdown(choices, value=first, label="Walkthrough", scale=4, min_width=340,
                                    elem_id="viasd-walk-pick")
            self.walk_btn = gr.Button("Load walkthrough", variant="primary", scale=1, min_width=150,
                                      elem_id="viasd-walk")
            self.fix_btn = gr.Button("Run the fix", scale=1, min_width=110, elem_id="viasd-walk-fix",
                                     visible=_has_fix(first) if first else False)
            self.last_btn = gr.Button("Use my last run", scale=1, min_width=120, elem_id="viasd-last-run")
            with gr.Column(scale=1, min_width=190, elem_id="viasd-class-options"):
                self.presenter = gr.Checkbox(False, label="Presenter mode", elem_id="viasd-presenter",
                                             container=False)
                self.future = gr.Checkbox(False, label="Show later rounds", elem_id="viasd-show-future",
                                          container=False)
        with gr.Row(equal_height=True, elem_id="viasd-replay-controls"):
            self.prev_btn = gr.Button("◀ Previous", scale=1, min_width=130, elem_id="viasd-prev")
            round_slider = gr.Slider(1, 2, value=1, step=1, label="Round", scale=4, elem_id="viasd-round-slider")
            self.next_btn = gr.Button("Next ▶", scale=1, min_width=130, elem_id="viasd-next")
        gr.HTML("", js_on_load=PRESENTER_KEYS, elem_id="viasd-presenter-keys")
        heading = gr.Markdown("Pick a walkthrough and press **Load**, then step through it round by round "
                              "(in presenter mode: → / Space / PageDown next, ← / PageUp back).",
                              elem_id="viasd-classroom-heading")
        tokens = gr.HTML(render.tokens_html(None, placeholder="Load a walkthrough to begin.", elem_id=CLASS_TOKENS_ID))
        caption = gr.HTML(f"<div class='viasd-caption'><p>{EMPTY}</p></div>", elem_id="viasd-caption")
        round_table = gr.HTML("")
        gr.HTML(render.legend_html(elem_id="viasd-class-legend"))
        notes = gr.Markdown("", elem_id="viasd-classroom-notes")
        with gr.Accordion("Details: where this run comes from", open=False, elem_id="viasd-class-details"):
            details = gr.Markdown("", elem_id="viasd-classroom-details")
        self.out = {"heading": heading, "round_slider": round_slider, "tokens": tokens, "round_table": round_table,
                    "caption": caption, "trace": gr.State(None), "notes": notes, "details": details}
        assert tuple(self.out) == OUTPUTS

    def _keyed(self, update: dict[str, Any]) -> dict:
        return {self.out[name]: value for name, value in update.items()}

    @model_event
    def load_walkthrough(self, title: str, show_future: bool = False, request: gr.Request = None) -> dict:
        """Run a ready walkthrough on this visitor's models (memo allowed) and show its first round."""
        return self._keyed(_walkthrough(title, session_id(request), show_future))

    @model_event
    def load_fix(self, title: str, show_future: bool = False, request: gr.Request = None) -> dict:
        """Run the walkthrough's fix (its `fixed_config`) and replay it, with notes comparing it to the walkthrough."""
        return self._keyed(_fix(title, session_id(request), show_future))

    def use_last_run(self, trace: Trace | None, show_future: bool = False) -> dict:
        """Replay the last Generate-tab run in the classroom."""
        if trace is None:
            gr.Warning("no run yet: press Run in Generate & tune first")
            return self._keyed({"heading": message("No run yet: press Run in Generate & tune first.")})
        heading = walkthroughs.walkthrough_heading({"title": "Your last run", "prompt": trace.prompt}, trace)
        return self._keyed(_opened(trace, heading, "", walkthroughs.provenance({}, trace), show_future))

    def show(self, trace: Trace | None, round_number: float, show_future: bool = False) -> dict:
        return self._keyed(show_round(trace, round_number, show_future))

    @staticmethod
    def step(trace: Trace | None, round_number: float, delta: int) -> float:
        if trace is None or not trace.rounds:
            return 1
        return max(1, min(len(trace.rounds), int(round_number or 1) + delta))

    def wire(self, last_trace: gr.State) -> None:
        out, state, slider = list(self.out.values()), self.out["trace"], self.out["round_slider"]
        view = [self.out[n] for n in ("tokens", "round_table", "caption")]
        quiet = {"api_visibility": "private", "show_progress": "hidden"}
        self.walk_btn.click(self.load_walkthrough, [self.walk, self.future], out, api_name="walkthrough", **MODEL)
        self.fix_btn.click(self.load_fix, [self.walk, self.future], out, api_name="walkthrough_fix", **MODEL)
        self.walk.change(lambda title: gr.update(visible=_has_fix(title)), self.walk, self.fix_btn, queue=False,
                         api_visibility="private")
        self.last_btn.click(self.use_last_run, [last_trace, self.future], out, api_visibility="private")
        slider.change(self.show, [state, slider, self.future], view, **quiet).then(
            None, js=FOLLOW_ROUND, queue=False, api_visibility="private")
        self.future.change(self.show, [state, slider, self.future], view, **quiet)
        self.prev_btn.click(lambda t, r: self.step(t, r, -1), [state, slider], slider, **quiet)
        self.next_btn.click(lambda t, r: self.step(t, r, +1), [state, slider], slider, **quiet)
        self.presenter.change(None, self.presenter, None, js=TOGGLE_PRESENTER, queue=False, api_visibility="private")
