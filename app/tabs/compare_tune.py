"""Compare tab, last section: tune over an uploaded prompt set and take the setting to a server.

The file is read by core.prompt_sets (the command's parser: text or JSONL, one line per bad file); the grid, the
pick on the tuning half and the held-apart check are core.analysis.tuning's; the export is
core.analysis.serving_export's. The panel only reads files, calls those and draws the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app.exports import export_json
from app.guard import reports_errors
from app.model_thread import MODEL, model_event
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from app.settings import Settings
from app.views.acceptance_chart import acceptance_figure
from app.widgets import stop_requested_js
from core.analysis.serving_export import build_export
from core.analysis.tuning import SPEED, Target, grid_configs, held_apart, tune
from core.errors import ConfigError, PromptError, shown
from core.prompt_sets import halves, parse_prompt_set

APP_HALF = 4
"""Prompts per half the app tunes on (the first four of each); `python -m core.tools.tune --count` takes more."""
DEFAULT_VALUES = "0.5, 0.8, 1.0"
TUNE_OUTPUTS = ("status", "plot", "table", "export")
STOP_JS = stop_requested_js("■ Stop requested: tuning ends after the setting running now.")
COLUMNS = {"prompts": "prompts", SPEED: "modelled speed-up", "words_differing": "words differing",
           "agreement": "token agreement", "expectations_met": "must / must-not met",
           "mean_acceptance_length": "mean acceptance length", "draft_acceptance_rate": "draft acceptance rate"}


def parse_values(text: str) -> list[float]:
    """'0.3, 0.5, 1' -> [0.3, 0.5, 1.0]; raises ConfigError with a readable message."""
    text = text if isinstance(text, str) else ""
    try:
        values = sorted({round(float(v), 4) for v in text.replace(";", ",").split(",") if v.strip()})
    except ValueError:
        raise ConfigError(f"cannot read threshold values '{shown(text)}': write them like 0.3, 0.5, 0.9") from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise ConfigError("threshold values must be numbers within [0, 1], e.g. 0.3, 0.5, 0.9")
    if len(values) > 8:
        raise ConfigError("at most 8 threshold values (43 pairs) per grid")
    return values


def halves_table(rows: dict[str, dict] | None) -> pd.DataFrame:
    """One row per half (tuning, held apart): the figures the export carries."""
    records = [{"half": half, **{label: row.get(key) for key, label in COLUMNS.items()}}
               for half, row in (rows or {}).items()]
    return pd.DataFrame(records, columns=["half", *COLUMNS.values()]).round(3)


def _ceiling(value: object) -> float:
    try:
        ceiling = float(value)
    except (TypeError, ValueError):
        raise ConfigError("type a words-differing ceiling in percent, e.g. 1") from None
    if not 0.0 <= ceiling <= 100.0:
        raise ConfigError("the words-differing ceiling is a percentage within [0, 100]")
    return ceiling / 100


@reports_errors("status", " (nothing changed; the app keeps working)")
def _tune_set(settings: Settings, session: str, path: str | None, values_text: str, ceiling: object,
              progress: Any):
    if not path:
        raise PromptError("choose a prompt file first: one prompt per line, or JSONL lines such as "
                          '{"prompt": "...", "must": ["..."]}')
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError:
        raise PromptError(f"cannot read the uploaded file '{shown(file.name)}': upload it again") from None
    tuning, held = halves(parse_prompt_set(raw, file.name), APP_HALF, file.name)
    target, values = Target("words_differing", _ceiling(ceiling)), parse_values(values_text)
    config = settings.config()
    base = config.with_(mode="via")
    configs = grid_configs(base, values, [config.gamma], [config.draft_signal], [config.slim_route],
                           [config.draft_stop_below])
    expectations = {p.text: p.expectations for p in tuning + held}
    yield {"status": f"… Tuning {len(configs)} settings on {len(tuning)} prompts of {file.name} "
                     f"({len(held)} held apart)…"}
    with SESSIONS.job(session) as should_stop, PREFETCHER.foreground():
        bundle = SESSIONS.bundle(session)
        try:
            result = tune(bundle, [p.text for p in tuning], target, configs, should_stop=should_stop,
                          expectations=expectations,
                          on_progress=lambda done, total: progress(done / (total + 1), desc=f"setting {done}/{total}"))
        except ConfigError:
            if not should_stop():
                raise
            yield {"status": "**Stopped** before any setting met the target: nothing to recommend yet."}
            return
        stopped = should_stop()
        progress(len(result.grid) / (len(configs) + 1), desc="held-apart half")
        result.held_apart = held_apart(bundle, [p.text for p in held], base, result.recommended, False,
                                       expectations=expectations)
        export = build_export(result, bundle, base, len(tuning))
    rec, rows = result.recommended, {"tuning": {"prompts": len(tuning), **result.recommended},
                                     "held apart": result.held_apart}
    setting = (f"τ_accept {rec['tau_accept']}, τ_slim {rec['tau_slim']}, γ {rec['gamma']}, drafter {rec['drafter']}, "
               f"slim route {export['via_sd']['slim_route']['name']}")
    yield {"status": f"**{'Stopped early' if stopped else 'Done'}:** {len(result.grid)} of {len(configs)} settings. "
                     f"Recommended for {target.describe()} on the tuning half: {setting}. The held-apart row is the "
                     "honest one (not chosen on it). Speed-up is modelled; the export maps the setting to "
                     "transformers, vLLM and SGLang and says what each loses.",
           "plot": acceptance_figure({half: row["serving"] for half, row in rows.items()}),
           "table": halves_table(rows), "export": export_json(export, "via_sd_tuned")}


class PromptSetPanel:
    """Upload a prompt file, tune over it (progress, Stop), see acceptance by draft position, download the export."""

    def __init__(self) -> None:
        gr.Markdown("### Tune over your prompt set\nUpload a file (one prompt per line, or JSONL: "
                    '`{"prompt": "...", "must": [...], "must_not": [...]}` per line). Odd-numbered prompts tune '
                    "(the first four), even-numbered ones are held apart and only reported. Uses the models and "
                    "settings of **Generate & tune**; the threshold values form the grid.")
        with gr.Row():
            self.file = gr.File(label="Prompt file (.txt or .jsonl)", file_types=[".txt", ".jsonl", ".json"],
                                type="filepath", elem_id="viasd-tune-file", scale=2)
            with gr.Column(scale=2):
                self.values = gr.Textbox(DEFAULT_VALUES, label="Threshold values", elem_id="viasd-tune-values")
                self.ceiling = gr.Number(1, label="Words-differing ceiling (%)", minimum=0, maximum=100,
                                         elem_id="viasd-tune-ceiling")
        with gr.Row():
            self.button = gr.Button("Tune over the prompt set", variant="primary", elem_id="viasd-tune")
            self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="viasd-tune-stop")
        self.out = {"status": gr.Markdown("", elem_id="viasd-tune-status"),
                    "plot": gr.Plot(acceptance_figure(None), label="Acceptance by draft position",
                                    elem_id="viasd-tune-plot"),
                    "table": gr.Dataframe(halves_table(None), label="Both halves (the export carries these)",
                                          interactive=False, wrap=True, elem_id="viasd-tune-table"),
                    "export": gr.File(label="Export: VIA-SD, transformers, vLLM, SGLang (JSON)", interactive=False,
                                      elem_id="viasd-tune-export")}
        assert tuple(self.out) == TUNE_OUTPUTS

    @model_event
    def run(self, request: gr.Request = None, progress: gr.Progress = gr.Progress(),  # noqa: B008
            path: str | None = None, values_text: str = DEFAULT_VALUES, ceiling: object = 1, **values: Any):
        """Tune over the uploaded prompt set with the Generate tab's models and settings."""
        for update in _tune_set(Settings.from_values(**values), session_id(request), path, values_text, ceiling,
                                progress):
            yield {self.out[name]: value for name, value in update.items()}

    def stop(self, request: gr.Request = None) -> dict:
        """The page said "Stop requested" already (see app.widgets.stop_requested_js)."""
        if SESSIONS.request_stop(session_id(request)):
            return {self.out["status"]: gr.skip()}
        return {self.out["status"]: "Nothing to stop: no tuning of yours is running."}

    def wire(self, widgets: dict[str, gr.components.Component]) -> None:
        self.button.click(self.run, None, list(self.out.values()),
                          inputs_kwargs={**widgets, "path": self.file, "values_text": self.values,
                                         "ceiling": self.ceiling}, api_name="tune_set", **MODEL)
        status = self.out["status"]
        self.stop_btn.click(None, status, status, js=STOP_JS, queue=False, api_visibility="private")
        self.stop_btn.click(self.stop, None, status, api_visibility="private", queue=False)
