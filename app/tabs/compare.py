"""Tab 2, Compare: plain, classic SD and VIA-SD on the Generate tab's prompt, and a threshold grid.

Each mode's text appears as soon as that mode finishes (plain first: it is the reference the
others are diffed against); the table comes when all three have their fidelity measured.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.gpu import compare_seconds, on_gpu
from app.guard import reports_errors
from app.model_thread import MODEL, model_event
from app.prefetch import PREFETCHER
from app.session import SESSIONS, session_id
from app.settings import DEFAULT, Settings
from app.tabs.compare_tune import PromptSetPanel, parse_values
from app.views import tables
from app.views.diff import diff_html
from app.views.grid_chart import row_name, tradeoff_figure
from app.views.numbers import speed_text
from app.views.recommend import DEFAULT_BUDGET, recommendation
from app.views.tradeoff_chart import tradeoff_chart
from app.widgets import stop_requested_js
from core import attach_fidelity, generate, summarize
from core.analysis.tradeoffs import scheme_points, sweep_schemes, threshold_grid
from core.round_policy import threshold_text
from examples import expectations_for

DEFAULT_GRID = "0.3, 0.5, 0.7, 0.9, 1.0"
MODES = {"plain": "Plain decoding", "sd": "Classic speculative decoding", "via": "VIA-SD (three tiers)"}
EXPLAIN = {"plain": "the full model alone: the reference the others are compared with",
           "sd": "every draft token checked by the full model", "via": "three tiers at the thresholds below"}
COMPARE_OUTPUTS = ("plain", "sd", "via", "table", "status")
COMPARE_STOP_JS = stop_requested_js("■ Stop requested: the mode running now ends after its current round.")
GRID_OUTPUTS = ("tradeoff_plot", "grid_table", "grid_status", "grid")
SCHEME_OUTPUTS = ("schemes_plot", "schemes_status", "points", "schemes_table")


def mode_label(mode: str, trace: Any = None, short: bool = False) -> str:
    """A human name for a mode; VIA-SD's says which thresholds it used (`short`: for the table)."""
    if mode == "via" and trace is not None:
        a, s = threshold_text(trace.policy.tau_accept), threshold_text(trace.policy.tau_slim)
        name = trace.policy.name  # VIA-SD with both tiers off is classic SD, and says so
        return f"{name} (τa {a}, τs {s})" if short else f"{name} (τ_accept {a}, τ_slim {s})"
    return {"plain": "Plain", "sd": "Classic SD"}.get(mode, mode) if short else MODES.get(mode, mode)


def _text(mode: str, trace: Any, plain: Any) -> str:
    """One mode's text, differences from plain marked; VIA-SD's says which thresholds it used."""
    used = (f'<div class="viasd-note">{mode_label(mode, trace)} · modelled speed-up '
            f'{speed_text(summarize(trace)["modelled_speedup"])}</div>')
    return diff_html(trace, plain, f"viasd-compare-{mode}") + used


@reports_errors("status")
@on_gpu(compare_seconds)
def _compare(settings: Settings, session: str, real_timing: bool):
    config = settings.config()
    with SESSIONS.job(session) as should_stop, PREFETCHER.foreground():  # a job from its first line: Stop sees it
        yield {"status": "… Loading the model…" if not SESSIONS.is_loaded() else "… Running plain decoding…"}
        bundle = SESSIONS.bundle(session)
        traces = {}
        for mode in MODES:
            trace = generate(bundle, settings.prompt, config.with_(mode=mode), replay=not real_timing,
                             should_stop=should_stop)
            traces[mode] = trace
            if should_stop():
                yield {"status": f"**Stopped** during {mode}: the modes finished so far are shown."}
                return
            following = [m for m in MODES if m not in traces]
            yield {mode: _text(mode, trace, traces["plain"]),
                   "status": f"… {len(traces)}/3 done" + (f"; running {following[0]}…" if following else
                                                          "; measuring fidelity…")}
        reference = traces["plain"].token_ids if config.greedy else None
        for trace in traces.values():
            attach_fidelity(bundle, trace, reference, expectations=expectations_for(settings.prompt))
    # replayed wall clock means nothing: without real timing the measured columns are left out
    table = tables.compare_table(traces, {mode: mode_label(mode, traces[mode], short=True) for mode in traces},
                                 measured=real_timing)
    note = ("Timing: every pass ran for real, so tokens/s and measured speed-up are honest." if real_timing else
            "Timing: replayed from the memo, so the measured columns are NOT meaningful; modelled ones are.")
    texts = {mode: _text(mode, trace, traces["plain"]) for mode, trace in traces.items()}
    yield {**texts, "table": table, "status": f"**Done.** {note}"}


@reports_errors("grid_status")
def _grid(settings: Settings, session: str, values_text: str, progress: Any) -> dict:
    config = settings.config()
    values = sorted({*parse_values(values_text), config.tau_accept, config.tau_slim})  # the star is always there
    bundle = SESSIONS.bundle(session)
    should_stop = SESSIONS.start_job(session)
    with PREFETCHER.foreground():
        grid = threshold_grid(bundle, settings.prompt, config, values, should_stop=should_stop,
                              on_progress=lambda done, total: progress(done / total, desc=f"pair {done}/{total}"))
    stopped = " (stopped early)" if should_stop() else ""
    return {"tradeoff_plot": tradeoff_figure(grid, config.tau_accept, config.tau_slim),
            "grid_table": tables.grid_table(grid), "grid": grid,
            "grid_status": f"**Grid done{stopped}:** {len(grid)} threshold pairs (the sliders' pair, "
                           f"{row_name(config.tau_accept, config.tau_slim)}, included, starred). Speed-up is "
                           "modelled; words differing measured."}


@reports_errors("schemes_status")
def _schemes(settings: Settings, session: str, progress: Any) -> dict:
    config = settings.config()
    bundle = SESSIONS.bundle(session)
    should_stop = SESSIONS.start_job(session)
    with PREFETCHER.foreground():
        rows = sweep_schemes(bundle, [settings.prompt], config, should_stop=should_stop,
                             on_progress=lambda done, total: progress(done / total, desc=f"setting {done}/{total}"))
    points = scheme_points(rows) if len(rows) else None
    stopped = " (stopped early)" if should_stop() else ""
    measure = str(rows["difference_measure"].iloc[0]) if len(rows) else "words differing"
    return {"schemes_plot": tradeoff_chart(points), "points": points, "schemes_table": tables.schemes_table(points),
            "schemes_status":
            f"**Schemes done{stopped}:** {len(rows)} settings on this prompt. Speed-up is modelled (accelerator "
            f"cost model); x = {measure} from the full model's own output. Each scheme's exact setting is classic "
            "SD; the fronts show what each trades for speed."}


class CompareTab:
    """Three texts side by side, a table, and the trade-off grid; inputs come from the Generate tab."""

    def __init__(self) -> None:
        gr.Markdown("Uses the prompt and settings from **Generate & tune**. Highlighted words differ from the "
                    "full model's own (plain) output.")
        with gr.Row():
            self.button = gr.Button("Compare plain / classic SD / VIA‑SD", variant="primary", elem_id="viasd-compare")
            self.real_timing = gr.Checkbox(True, label="Real timing (every pass runs; slower but honest tokens/s)")
            self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="viasd-compare-stop")
        status = gr.Markdown("", elem_id="viasd-compare-status")
        texts = {}
        with gr.Row():
            for mode, title in MODES.items():
                with gr.Column(min_width=280):
                    gr.Markdown(f"**{title}**: {EXPLAIN[mode]}")
                    texts[mode] = gr.HTML(elem_id=f"viasd-compare-{mode}-box")
        table = gr.Dataframe(tables.empty_compare_table(), label="Side by side (measured columns say so; modelled = "
                             "accelerator cost model)", interactive=False, wrap=True, elem_id="viasd-compare-table")
        self.compare_out = {**texts, "table": table, "status": status}
        gr.Markdown("### Trade-off over threshold pairs\nRuns VIA-SD for every pair τ_slim ≤ τ_accept from "
                    "the values below, and τ_slim 1 (tier 2 off) with every τ_accept (memo on, so only new prefixes "
                    "cost time). Both at 1 is classic SD. The star is the current sliders' pair.")
        with gr.Row():
            self.grid_values = gr.Textbox(DEFAULT_GRID, label="Threshold values", scale=3)
            self.grid_btn = gr.Button("Run threshold grid", variant="primary", scale=1, elem_id="viasd-grid")
        grid_status = gr.Markdown("")
        self.tradeoff_plot = gr.Plot(tradeoff_figure(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                     label="Trade-off (camera icon: save as PNG)", elem_id="viasd-grid-plot")
        grid_table = gr.Dataframe(tables.grid_table(None), label="Grid, fastest first", interactive=False, wrap=True,
                                  elem_id="viasd-grid-table")
        gr.Markdown("### VIA-SD beside the other lossy schemes\nBiLD (fallback and rollback thresholds; Kim et al., "
                    "2023) and Speculative Cascades (Chow / Diff / OPT deferral; Narasimhan et al., 2025) run in the "
                    "same loop with the same drafter, over small grids of their own parameters (memo on).")
        with gr.Row():
            self.schemes_btn = gr.Button("Run VIA‑SD, BiLD and cascades", variant="primary", elem_id="viasd-schemes")
            schemes_status = gr.Markdown("")
        self.points_state = gr.State(None)
        self.schemes_out = {"schemes_plot": gr.Plot(tradeoff_chart(None), label="Pareto fronts per scheme",
                                                    elem_id="viasd-schemes-plot"),
                            "schemes_status": schemes_status, "points": self.points_state,
                            "schemes_table": gr.Dataframe(tables.schemes_table(None), label="Schemes, fastest first",
                                                          interactive=False, wrap=True, elem_id="viasd-schemes-table")}
        with gr.Row(equal_height=True):
            self.budget = gr.Number(DEFAULT_BUDGET, label="Words-differing budget (%)", minimum=0, maximum=100,
                                    step=1, scale=1, min_width=160, elem_id="viasd-budget")
            self.advice = gr.Markdown(recommendation(None, None, DEFAULT_BUDGET), elem_id="viasd-recommend")
        self.grid_state = gr.State(None)
        self.grid_out = {"tradeoff_plot": self.tradeoff_plot, "grid_table": grid_table, "grid_status": grid_status,
                         "grid": self.grid_state}
        self.prompt_set = PromptSetPanel()
        assert tuple(self.compare_out) == COMPARE_OUTPUTS and tuple(self.grid_out) == GRID_OUTPUTS
        assert tuple(self.schemes_out) == SCHEME_OUTPUTS

    @model_event
    def compare(self, request: gr.Request = None, real_timing: bool = True, **values: Any):
        """Plain, classic SD and VIA-SD on the same prompt, each shown as it finishes."""
        for update in _compare(Settings.from_values(**values), session_id(request), bool(real_timing)):
            yield {self.compare_out[name]: value for name, value in update.items()}

    @model_event
    def grid(self, request: gr.Request = None, progress: gr.Progress = gr.Progress(),  # noqa: B008
             values_text: str = DEFAULT_GRID, **values: Any) -> dict:
        """VIA-SD over every ordered threshold pair from the values; modelled speed-up vs fidelity."""
        update = _grid(Settings.from_values(**values), session_id(request), values_text, progress)
        return {self.grid_out[name]: value for name, value in update.items()}

    @model_event
    def schemes(self, request: gr.Request = None, progress: gr.Progress = gr.Progress(),  # noqa: B008
                **values: Any) -> dict:
        """Every scheme's small parameter grid on this prompt: Pareto fronts of speed-up vs difference."""
        update = _schemes(Settings.from_values(**values), session_id(request), progress)
        return {self.schemes_out[name]: value for name, value in update.items()}

    def stop(self, request: gr.Request = None) -> dict:
        """As the Generate tab's Stop: the page said "Stop requested" already (a reply saying it again could land
        after the comparison's own "Stopped" line); only "nothing to stop" comes from here."""
        if SESSIONS.request_stop(session_id(request)):
            return {self.compare_out["status"]: gr.skip()}
        return {self.compare_out["status"]: "Nothing to stop: no comparison of yours is running."}

    def wire(self, widgets: dict[str, gr.components.Component]) -> None:
        # API order: the Generate tab's settings first, then this tab's own input
        self.button.click(self.compare, None, list(self.compare_out.values()),
                          inputs_kwargs={**widgets, "real_timing": self.real_timing}, api_name="compare",
                          show_progress="minimal", **MODEL)
        advise = {"fn": recommendation, "inputs": [self.grid_state, self.points_state, self.budget],
                  "outputs": self.advice, "api_visibility": "private", "show_progress": "hidden"}
        self.grid_btn.click(self.grid, None, list(self.grid_out.values()),
                            inputs_kwargs={**widgets, "values_text": self.grid_values}, api_name="grid",
                            **MODEL).then(**advise)
        self.schemes_btn.click(self.schemes, None, list(self.schemes_out.values()), inputs_kwargs=widgets,
                               api_name="schemes", **MODEL).then(**advise)
        self.budget.change(**advise)
        status = self.compare_out["status"]
        self.stop_btn.click(None, status, status, js=COMPARE_STOP_JS, queue=False, api_visibility="private")
        self.stop_btn.click(self.stop, None, status, api_visibility="private", queue=False)
        self.prompt_set.wire(widgets)

