"""Settings in the URL, so a teacher can share a link that reopens — and with `run=1` reruns — a given run.

A link carries every value that changes the output: each `app.settings.Settings` field (prompt, mode,
drafter, routes, γ, length, sampling, temperature, top-p, seed, thresholds, copy settings) and, when
the visitor loaded other models, `verifier` and `drafter_model` (and `drafter_quant` when the visitor chose a drafter
setting other than the pair's recommended one). `?prompt=...&run=1` fills the
Generate tab's widgets on page load and then runs them on the server (a chained event, not a
scripted click on Run, so it cannot miss the button). The parsing and the link are pure functions of
`Settings`; a bad value in a link is skipped with one warning (the rest still applies), never a traceback.

A value a link leaves out takes the engine's default (`LINK_BASE`), not the app's opening preset:
links written before copy_evidence, draft_stop_below and audit_span were in the link (and before
the app opened on prompt lookup) carry none of them, and they must reopen the run they shared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from typing import Any
from urllib.parse import urlencode

import gradio as gr
from gradio.components import Component

from app.guard import reports_errors
from app.model_thread import MODEL, model_event
from app.session import SESSIONS, session_id
from app.settings import Settings
from core import EMBEDDED_ID
from core.config import DecodeConfig
from core.errors import ConfigError

URL_FIELDS = tuple(Settings.names())
"""The settings a link carries, in the order it writes them: every decoding widget."""
MODEL_FIELDS = ("verifier", "drafter_model")
"""The models a link carries when they are not the embedded default (the Models panel's two boxes)."""
QUANT_FIELD = "drafter_quant"
"""The drafter setting a link carries when the visitor chose one (core.models.drafter_quant)."""
LINK_BASE = Settings.of(DecodeConfig(max_new_tokens=48))
"""What a link's missing values fall back to: the engine's defaults (and the 48 tokens links always had)."""

TYPES = {f.name: f.type for f in fields(Settings)}
PREFIX_ORIGIN = ("(q) => (q && q.startsWith('?')) ? window.location.origin + window.location.pathname + q : q")
"""Browser-side: turn the query string into a full link to this page (works behind a Space's proxy)."""
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def _parse(name: str, text: str) -> Any:
    kind = TYPES[name]
    if kind == "int":
        return int(float(text))
    if kind == "float":
        return float(text)
    if kind == "bool":
        word = str(text).strip().lower()
        if word not in TRUE + FALSE:
            raise ValueError(text)
        return word in TRUE
    return text


def settings_from_query(params: Mapping[str, str], base: Settings | None = None) -> tuple[Settings | None, list[str]]:
    """The settings a link asks for on top of `base` (None when they do not validate together), and one
    problem sentence per value it could not use."""
    base = base or LINK_BASE
    chosen: dict[str, Any] = {}
    problems: list[str] = []
    for name in URL_FIELDS:
        if name not in params:
            continue
        try:
            chosen[name] = _parse(name, params[name])
        except (TypeError, ValueError, OverflowError):
            kind = "true or false" if TYPES[name] == "bool" else "a number"
            problems.append(f"{name}={params[name]!r} is not {kind}")
    settings = base.with_(**chosen)
    try:
        settings.config()
    except ConfigError as exc:
        return None, [*problems, f"{exc} (the link's settings were not applied)"]
    return settings, problems


def models_from_query(params: Mapping[str, str]) -> tuple[str, str] | None:
    """(verifier, drafter model) a link names, or None for the embedded model."""
    verifier, drafter = (params.get(name, "").strip() for name in MODEL_FIELDS)
    if (verifier or EMBEDDED_ID) == EMBEDDED_ID and not drafter:
        return None
    return verifier or EMBEDDED_ID, drafter


def quant_from_query(params: Mapping[str, str]) -> str | None:
    """The drafter setting a link names (None: the pair's recommended one)."""
    return params.get(QUANT_FIELD, "").strip() or None


def query_of(settings: Settings, run: bool = True, models: tuple[str, str] | None = None,
             drafter_quant: str | None = None) -> str:
    """The query string (with its leading '?') that reopens `settings` (on `models`, with `drafter_quant`, when
    given); `run` also runs it on load."""
    values: dict[str, Any] = {name: getattr(settings, name) for name in URL_FIELDS}
    if models is not None:
        values.update(zip(MODEL_FIELDS, models, strict=True))
        if drafter_quant:
            values[QUANT_FIELD] = drafter_quant
    if run:
        values["run"] = 1
    return "?" + urlencode({k: (str(v).lower() if isinstance(v, bool) else v) for k, v in values.items()})


def wants_run(params: Mapping[str, str]) -> bool:
    return str(params.get("run", "")).lower() in TRUE


@reports_errors("status")
def _load_linked(models: tuple[str, str], session: str, drafter_quant: str | None = None) -> dict:
    SESSIONS.choose(session, *models, drafter_quant=drafter_quant)
    return {}


class SharePanel:
    """A "link to these settings" button and a copyable box (shown once pressed); `wire` also applies a link's
    settings on load and runs them when the link says `run=1`."""

    def __init__(self) -> None:
        self.button = gr.Button("Link to these settings", size="sm", elem_id="viasd-share")
        self.link = gr.Textbox(label="Share this link: it opens these settings and runs them", buttons=["copy"],
                               interactive=False, elem_id="viasd-share-link", visible=False, lines=1)
        self.autorun = gr.State(None)  # the models to run on (None: do not run), set by a link's run=1

    def wire(self, demo: gr.Blocks, widgets: dict[str, Component], example: gr.Dropdown,
             run: Callable[..., Iterator[dict]], outputs: dict[str, Component],
             model_boxes: tuple[gr.Textbox, gr.Textbox]) -> None:
        """Attach page-load and button events. `widgets` are the Generate tab's Settings inputs by field name,
        `run` its Run handler (yielding updates for `outputs`, its outputs by name), `model_boxes` the Models
        panel's verifier and drafter boxes."""
        targets = {name: widgets[name] for name in URL_FIELDS}
        choices = {value for _, value in example.choices}

        def apply(request: gr.Request = None) -> dict:
            params = dict(getattr(request, "query_params", None) or {})
            if not any(name in params for name in (*URL_FIELDS, *MODEL_FIELDS)):
                return {self.autorun: None}
            settings, problems = settings_from_query(params)
            for problem in problems:
                gr.Warning(f"link: {problem}")
            if settings is None:
                return {self.autorun: None}
            models = models_from_query(params)
            update: dict = {widget: getattr(settings, name) for name, widget in targets.items()}
            update[example] = settings.prompt if settings.prompt in choices else None
            # the boxes name the link's models; a link that names none runs on the embedded model
            models = models or (EMBEDDED_ID, "")
            update.update(zip(model_boxes, models, strict=True))
            return {**update, self.autorun: (*models, quant_from_query(params)) if wants_run(params) else None}

        @model_event
        def autorun(models: tuple | None, request: gr.Request = None, **values: Any):
            if models is None:  # no run=1: change nothing (an empty dict would count as one output value)
                yield {outputs["status"]: gr.update()}
                return
            verifier, drafter, *quant = models
            if (verifier, drafter) != (EMBEDDED_ID, ""):
                failed = _load_linked((verifier, drafter), session_id(request), *quant[:1])
                if failed:
                    yield {outputs["status"]: failed["status"]}
                    return
            yield from run(request, **values)

        def link(request: gr.Request = None, **values: Any) -> dict:
            session = session_id(request)
            query = query_of(Settings.from_values(**values), models=SESSIONS.choice(session),
                             drafter_quant=SESSIONS.drafter_quant(session))
            return gr.update(value=query, visible=True)

        # no queue, no spinner: a page opened without a link must be usable at once (nothing changes)
        demo.load(apply, None, [*targets.values(), example, *model_boxes, self.autorun],
                  api_visibility="private", queue=False, show_progress="hidden").then(
            autorun, None, list(outputs.values()), inputs_kwargs={**widgets, "models": self.autorun},
            api_visibility="private", show_progress="hidden", **MODEL)
        self.button.click(link, None, self.link, inputs_kwargs=widgets, api_visibility="private", queue=False).then(
            None, self.link, self.link, js=PREFIX_ORIGIN, queue=False, api_visibility="private")
