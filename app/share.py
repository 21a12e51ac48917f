"""Settings in the URL, so a teacher can share a link that opens a given run.

`?prompt=...&tau_accept=0.7&tau_slim=0.4&gamma=4&mode=via&drafter=self&max_new_tokens=48&run=1`
fills the Generate tab's widgets on page load and, with `run=1`, presses Run. The parsing and the
link are pure functions of `app.settings.Settings`; a bad value in a link is skipped with one
warning (the rest still applies), never a traceback.

A value a link leaves out takes the engine's default (`LINK_BASE`), not the app's opening preset:
links written before copy_evidence, draft_stop_below and audit_span were in the link (and before
the app opened on prompt lookup) carry none of them, and they must reopen the run they shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any
from urllib.parse import urlencode

import gradio as gr

from app.settings import Settings
from core.config import DecodeConfig
from core.errors import ConfigError

URL_FIELDS = ("prompt", "mode", "drafter", "gamma", "tau_accept", "tau_slim", "max_new_tokens", "copy_evidence",
              "draft_stop_below", "audit_span")
"""The settings a link carries, in the order it writes them."""
LINK_BASE = Settings.of(DecodeConfig(max_new_tokens=48))
"""What a link's missing values fall back to: the engine's defaults (and the 48 tokens links always had)."""

TYPES = {f.name: f.type for f in fields(Settings)}
PREFIX_ORIGIN = ("(q) => (q && q.startsWith('?')) ? window.location.origin + window.location.pathname + q : q")
"""Browser-side: turn the query string into a full link to this page (works behind a Space's proxy)."""
PRESS_RUN = "(go) => { if (go) { setTimeout(() => document.querySelector('#viasd-run')?.click(), 50); } return go; }"


def _parse(name: str, text: str) -> Any:
    kind = TYPES[name]
    if kind == "int":
        return int(float(text))
    if kind == "float":
        return float(text)
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
            problems.append(f"{name}={params[name]!r} is not a number")
    settings = base.with_(**chosen)
    try:
        settings.config()
    except ConfigError as exc:
        return None, [*problems, f"{exc} (the link's settings were not applied)"]
    return settings, problems


def query_of(settings: Settings, run: bool = True) -> str:
    """The query string (with its leading '?') that reopens `settings`; `run` also presses Run on load."""
    values = {name: getattr(settings, name) for name in URL_FIELDS}
    if run:
        values["run"] = 1
    return "?" + urlencode(values)


def wants_run(params: Mapping[str, str]) -> bool:
    return str(params.get("run", "")).lower() in ("1", "true", "yes")


class SharePanel:
    """A "link to these settings" button and a copyable box (shown once pressed); `wire` also applies a link's
    settings on load."""

    def __init__(self) -> None:
        self.button = gr.Button("Link to these settings", size="sm", elem_id="viasd-share")
        self.link = gr.Textbox(label="Share this link: it opens these settings and runs them", buttons=["copy"],
                               interactive=False, elem_id="viasd-share-link", visible=False, lines=1)
        self.autorun = gr.State(False)

    def wire(self, demo: gr.Blocks, widgets: dict[str, gr.components.Component]) -> None:
        """Attach page-load and button events; `widgets` are the Generate tab's Settings inputs by field name."""
        targets = {name: widgets[name] for name in URL_FIELDS}

        def apply(request: gr.Request = None) -> dict:
            params = dict(getattr(request, "query_params", None) or {})
            if not any(name in params for name in URL_FIELDS):
                return {self.autorun: False}
            settings, problems = settings_from_query(params)
            for problem in problems:
                gr.Warning(f"link: {problem}")
            if settings is None:
                return {self.autorun: False}
            update: dict = {widget: getattr(settings, name) for name, widget in targets.items()}
            return {**update, self.autorun: wants_run(params)}

        def link(**values: Any) -> dict:
            return gr.update(value=query_of(Settings.from_values(**values)), visible=True)

        demo.load(apply, None, [*targets.values(), self.autorun], api_visibility="private").then(
            None, self.autorun, None, js=PRESS_RUN, queue=False, api_visibility="private")
        self.button.click(link, None, self.link, inputs_kwargs=widgets, api_visibility="private", queue=False).then(
            None, self.link, self.link, js=PREFIX_ORIGIN, queue=False, api_visibility="private")
