"""Tab 1, Generate & tune: prompt, run / stop, live thresholds, coloured text, metrics and charts.

Handlers turn the widget values into one `Settings`, run `app.streaming`, and map its name-keyed
updates onto this tab's components. Threshold and γ sliders re-route on release (no button).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import gradio as gr

from app import streaming
from app.gpu import on_gpu, settings_seconds
from app.guard import reports_errors
from app.prefetch import STEP
from app.session import SESSIONS, session_id
from app.settings import DEFAULT, DEFAULT_PROMPT, THREE_TIER, Settings
from app.views import cards, charts, render
from app.views.breakeven_chart import breakeven_figure
from app.views.insight import prediction_markdown
from app.views.reliability_chart import confidence_histogram_figure, reliability_figure
from app.widgets import lenient
from core.config import COPY_EVIDENCE
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS
from core.models.layer_routes import PRESETS
from core.round_policy import thresholds_apply
from examples import FAMILIES, load_prompts

MODEL = {"concurrency_id": "model", "concurrency_limit": 1}
MODE_CHOICES = [("VIA-SD (three tiers)", "via"), ("classic speculative decoding", "sd"), ("plain decoding", "plain")]
DRAFTER_CHOICES = [("self: the model with layers skipped", "self"), ("prompt lookup (n-gram copy)", "ngram"),
                   ("separate drafter model (load it under Models)", "model")]
COPY_EVIDENCE_CHOICES = [
    ("audit: keep copies now, the full model checks them in its next pass (output = full model's)", "audit"),
    ("verifier: a model checks every copy before it is kept", "verifier"),
    ("slim: keep a copy only if the slim verifier also trusts it", "slim"),
    ("statistic only: trust the copy count, no model (can copy typos back)", "statistic")]
"""Plain words for core.config.COPY_EVIDENCE, in the order a visitor should consider them."""
assert {value for _, value in COPY_EVIDENCE_CHOICES} == set(COPY_EVIDENCE), "one label per copy_evidence choice"
OUTPUTS = ("tokens", "status", "legend", "metrics", "metrics_json", "conf_plot", "timeline_plot", "files", "trace",
           "headline", "why", "prediction", "breakeven_plot", "reliability_plot", "strip_plot", "reliability", "effect",
           "effect_button")
"""Output names of /generate, /rerun_real and /reroute in API order (/reroute adds "tradeoff_plot")."""
THREE_TIER_LABEL = "Show the trade-off: three tiers with the self-drafter on a chat prompt"
OPENING_EFFECT = ("**With the opening settings** (prompt lookup, copies audited, greedy, τ_slim off) **the "
                  "sliders trade speed only:** whatever tiers 1 and 2 keep is audited by the full model, so the text "
                  "is the full model's at any threshold. The button below opens a run where both thresholds move "
                  "speed *and* fidelity.")
OPENING_NAMED = ("mode", "drafter", "copy_evidence", "sampling")
"""The settings OPENING_EFFECT speaks of: it stays only while they are the opening's."""
SLIDER_LABELS = {"tau_accept": "τ_accept — trust the drafter directly at or above",
                 "tau_slim": "τ_slim — let the slim verifier decide at or above"}
OFF_IN = {"sd": "off in classic SD: every draft token goes to the full model", "plain": "off in plain decoding: "
          "nothing is drafted"}
READY = "Ready. Pick an example or type a prompt, then press **Run**."


def _example_choices(family: str) -> list[tuple[str, str]]:
    return [(p.label, p.text) for p in load_prompts(None if family == "all" else family)]


@reports_errors("status")
@on_gpu(settings_seconds)
def _run(settings: Settings, session: str, replay: bool):
    yield from streaming.run(settings, session, replay=replay)


@reports_errors("status", suffix=" — still showing the last good result")
@on_gpu(settings_seconds)
def _reroute(settings: Settings, session: str, previous: Any, grid: Any, reliability: Any):
    settings.config()  # a bad value stops here, before anything on screen changes
    refusal = streaming.reroute_refusal(settings, previous)
    if refusal is not None:
        yield {"status": refusal}
        return
    phase = f"Re-routed in {{seconds:.2f}} s to τ {settings.tau_accept:g} / {settings.tau_slim:g}"
    for update in streaming.run(settings, session, replay=True, phase=phase,
                                previous=previous, reliability=reliability):
        if "files" in update and grid is not None:  # the last update: the trade-off chart's star moves too
            update["tradeoff_plot"] = charts.tradeoff_figure(grid, settings.tau_accept, settings.tau_slim)
        yield update


class GenerateTab:
    """Builds the tab inside the current Blocks; `widgets` holds the `Settings` inputs by field name."""

    def __init__(self) -> None:
        with gr.Row(equal_height=False, elem_id="viasd-cockpit"):
            with gr.Column(scale=5, min_width=520):
                with gr.Row():
                    self.family = gr.Dropdown(["all", *FAMILIES], value="all", label="Example family", scale=1,
                                              min_width=140)
                    self.example = gr.Dropdown(_example_choices("all"), value=DEFAULT_PROMPT, label="Example prompt",
                                               elem_id="viasd-example", scale=3)
                prompt = gr.Textbox(label="Prompt", lines=2, max_lines=6, value=DEFAULT_PROMPT,
                                    placeholder="Type a prompt or pick an example", elem_id="viasd-prompt")
                with gr.Row():
                    self.run_btn = gr.Button("▶ Run", variant="primary", elem_id="viasd-run", min_width=90, scale=2)
                    self.real_btn = gr.Button("Re-run for real timing", elem_id="viasd-real", min_width=200, scale=3)
                    self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="viasd-stop", min_width=90, scale=2)
                status = gr.Markdown(READY, elem_id="viasd-status")
                tokens = gr.HTML(render.tokens_html(None), elem_id="viasd-tokens-box")
                legend = gr.HTML(render.legend_html(), elem_id="viasd-legend-box")
                self.insight_why = gr.Markdown("", elem_id="viasd-why")
            with gr.Column(scale=3, min_width=340):
                headline = gr.HTML(cards.headline_html({}), elem_id="viasd-headline-box")
                tau_accept = lenient(gr.Slider(0.0, 1.0, value=DEFAULT.tau_accept, step=STEP,
                                               elem_id="viasd-tau-accept", label=SLIDER_LABELS["tau_accept"]))
                tau_slim = lenient(gr.Slider(0.0, 1.0, value=DEFAULT.tau_slim, step=STEP, elem_id="viasd-tau-slim",
                                             label=SLIDER_LABELS["tau_slim"]))
                gamma = lenient(gr.Slider(1, MAX_GAMMA, value=DEFAULT.gamma, step=1, label="γ — draft length",
                                          elem_id="viasd-gamma"))
                gr.Markdown("Release a slider (or type a value and press Tab): the text re-routes at once. "
                            "τ_slim ≤ τ_accept; 1.0 switches a tier off.", elem_classes="viasd-hint")
                effect = gr.Markdown(OPENING_EFFECT, elem_id="viasd-effect")
                self.three = gr.Button(THREE_TIER_LABEL, size="sm", elem_id="viasd-three-tier")
                with gr.Accordion("Decoding settings", open=False, elem_id="viasd-decoding"):
                    mode = gr.Radio(MODE_CHOICES, value=DEFAULT.mode, label="Mode")
                    drafter = gr.Radio(DRAFTER_CHOICES, value=DEFAULT.drafter, label="Drafter")
                    copy_evidence = gr.Dropdown(COPY_EVIDENCE_CHOICES, value=DEFAULT.copy_evidence,
                                                label="Copies (prompt lookup): what a copy needs before it is kept",
                                                elem_id="viasd-copy-evidence")
                    with gr.Row():
                        draft_stop_below = lenient(gr.Slider(
                            0.0, 1.0, value=DEFAULT.draft_stop_below, step=0.05, elem_id="viasd-stop-below",
                            label="Stop a draft below", info="end a draft or copy at its first token under this "
                                                              "confidence (0 = never)"))
                        audit_span = lenient(gr.Slider(
                            1, MAX_NEW_TOKENS, value=DEFAULT.audit_span, step=1, elem_id="viasd-audit-span",
                            label="Audit span", info="most copies kept on trust before the full model audits them"))
                    with gr.Row():
                        draft_route = gr.Dropdown(list(PRESETS), value=DEFAULT.draft_route, label="Draft route",
                                                  allow_custom_value=True,
                                                  info="layers the self-drafter runs; or type layers:0-3,8")
                        slim_route = gr.Dropdown(list(PRESETS), value=DEFAULT.slim_route, label="Slim route",
                                                 allow_custom_value=True, info="layers the slim verifier runs")
                    max_tokens = gr.Slider(1, MAX_NEW_TOKENS, value=Settings.max_new_tokens, step=1,
                                           label="Max new tokens", elem_id="viasd-max-tokens")
                    sampling = gr.Checkbox(Settings.sampling, label="Sample (off = greedy)")
                    with gr.Row():
                        temperature = gr.Slider(0.05, 2.0, value=Settings.temperature, step=0.05, label="Temperature")
                        top_p = gr.Slider(0.05, 1.0, value=Settings.top_p, step=0.05, label="Top-p")
                    seed = gr.Number(Settings.seed, precision=0, label="Seed (sampling)")
                self.models_box = gr.Column()  # the Models panel (app.tabs.models) goes here
        self.widgets: dict[str, gr.components.Component] = {
            "prompt": prompt, "mode": mode, "drafter": drafter, "draft_route": draft_route, "slim_route": slim_route,
            "gamma": gamma, "max_new_tokens": max_tokens, "sampling": sampling, "temperature": temperature,
            "top_p": top_p, "seed": seed, "tau_accept": tau_accept, "tau_slim": tau_slim,
            "copy_evidence": copy_evidence, "draft_stop_below": draft_stop_below, "audit_span": audit_span}
        assert list(self.widgets) == Settings.names(), "widgets must follow Settings' field (API) order"
        metrics = gr.HTML(cards.metrics_html({}), elem_id="viasd-metrics-box")
        prediction = gr.Markdown(prediction_markdown(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                 elem_id="viasd-prediction")
        with gr.Row():
            conf_plot = gr.Plot(confidence_histogram_figure(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                label="Confidence distribution (camera icon: save as PNG)", elem_id="viasd-conf-plot")
            timeline_plot = gr.Plot(charts.timeline_figure(None), label="Per-round timeline",
                                    elem_id="viasd-timeline-plot")
        with gr.Row(elem_id="viasd-more-charts"):
            breakeven_plot = gr.Plot(breakeven_figure(None), label="Break-even: when does drafting pay?",
                                     elem_id="viasd-breakeven-plot")
            reliability_plot = gr.Plot(reliability_figure(None), label="Reliability of each confidence",
                                       elem_id="viasd-reliability-plot")
        with gr.Accordion("Per-token confidences of this run (strip chart)", open=False):
            strip_plot = gr.Plot(charts.confidence_figure(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                 label="Confidences per token", elem_id="viasd-strip-plot")
        gr.Markdown("*Confidence distribution:* teacher-forced on the last full run's text, each model's confidence "
                    "split by whether its choice agrees with the full model; what lies right of a τ line is what "
                    "that tier takes, red is what it would get wrong. The line above it predicts the tier shares for "
                    "the sliders' thresholds with no model call, before the real re-route lands. *Timeline:* "
                    "modelled cost of each model per round, in full-model passes; the black line is measured wall "
                    "time (dotted = replayed). *Break-even:* expected speed-up over plain for the drafter's "
                    "acceptance and cost; the star is this run. The camera icon on each chart saves it as a PNG.")
        with gr.Row():
            files = gr.File(label="Download this trace: tokens CSV, rounds CSV, full JSON",
                            file_count="multiple", interactive=False, elem_id="viasd-files")
            with gr.Accordion("All metrics (raw)", open=False):
                metrics_json = gr.JSON(label="summarize(trace)")
        self.out: dict[str, gr.components.Component] = {
            "tokens": tokens, "status": status, "legend": legend, "metrics": metrics, "metrics_json": metrics_json,
            "conf_plot": conf_plot, "timeline_plot": timeline_plot, "files": files, "trace": gr.State(None),
            "headline": headline, "why": self.insight_why, "prediction": prediction, "breakeven_plot": breakeven_plot,
            "reliability_plot": reliability_plot, "strip_plot": strip_plot, "reliability": gr.State(None),
            "effect": effect, "effect_button": self.three}
        assert tuple(self.out) == OUTPUTS
        self._targets = dict(self.out)  # plus the Compare tab's trade-off chart, once wired

    def _keyed(self, update: dict[str, Any]) -> dict:
        if "effect" in update:  # the one-click way out shows exactly when the line saying why does
            update = {**update, "effect_button": gr.update(visible=bool(update["effect"]))}
        return {self._targets[name]: value for name, value in update.items()}

    # -- handlers (inputs arrive by Settings field name) ------------------------------------
    def generate(self, request: gr.Request = None, **values: Any):
        """Run with the memo allowed: seen prefixes replay instantly (same tokens)."""
        for update in _run(Settings.from_values(**values), session_id(request), True):
            yield self._keyed(update)

    def rerun_real(self, request: gr.Request = None, **values: Any):
        """Run every forward pass for real, so the measured wall clock is honest."""
        for update in _run(Settings.from_values(**values), session_id(request), False):
            yield self._keyed(update)

    def reroute(self, request: gr.Request = None, previous: Any = None, grid: Any = None, reliability: Any = None,
                **values: Any):
        """Live threshold update: replay from the memo, streaming; a bad value keeps the last good result."""
        for update in _reroute(Settings.from_values(**values), session_id(request), previous, grid, reliability):
            yield self._keyed(update)

    def predict(self, trace: Any, reliability: Any, tau_accept: Any, tau_slim: Any) -> str:
        """While a threshold slider moves: tier shares for the new pair, no model call (< 50 ms)."""
        return streaming.prediction(trace, reliability, tau_accept, tau_slim)

    def tier_sliders(self, mode: str) -> dict:
        """Where tiers 1 and 2 cannot act in the chosen mode, their sliders say so and are disabled."""
        acts = thresholds_apply(mode)
        return {self.widgets[name]: gr.update(interactive=acts, label=label if acts else
                                              f"{label.split(' — ')[0]} — {OFF_IN.get(mode, 'off in this mode')}")
                for name, label in SLIDER_LABELS.items()}

    def opening_effect(self, trace: Any, **values: Any) -> dict:
        """The opening line speaks of the opening settings: once one changes before any run, it goes (a run's own
        line names the run's settings, so it stays until the next run replaces it)."""
        if trace is not None:
            return {self.out["effect"]: gr.skip(), self.three: gr.skip()}
        settings, opening = Settings.from_values(**values), Settings()
        shown = all(getattr(settings, name) == getattr(opening, name) for name in OPENING_NAMED)
        return self._keyed({"effect": OPENING_EFFECT if shown else ""})

    def stop(self, request: gr.Request = None) -> dict:
        """Ask this session's run to stop after its current round; it then shows the partial result."""
        if SESSIONS.request_stop(session_id(request)):
            return {self.out["status"]: "■ Stop requested: the run ends after its current round and shows what "
                                        "it has."}
        return {self.out["status"]: "Nothing to stop: no run of yours is in progress."}

    def ready(self, request: gr.Request = None) -> dict:
        """Status on page load: says whether the model is ready or still loading."""
        if SESSIONS.is_loaded():
            return {self.out["status"]: f"Ready · {SESSIONS.summary(session_id(request))}. Pick an example or type "
                                        "a prompt, then press **Run**."}
        return {self.out["status"]: "Ready. The model loads on first use (a few seconds). " + READY[7:]}

    def wire(self, tradeoff_plot: gr.Plot, grid_state: gr.State) -> list:
        """Attach the events; returns the model events Stop may cancel (none: Stop ends them by flag)."""
        out = list(self.out.values())
        self._targets["tradeoff_plot"] = tradeoff_plot
        self.family.change(lambda f: gr.update(choices=_example_choices(f), value=None), self.family, self.example,
                           api_visibility="private", queue=False)
        self.example.input(lambda text: text or gr.skip(), self.example, self.widgets["prompt"],
                           api_visibility="private", queue=False)
        common = {"inputs_kwargs": self.widgets, "show_progress": "minimal", **MODEL}
        reroute = gr.on([self.widgets[n].release for n in streaming.LIVE], self.reroute, None,
                        [*out, tradeoff_plot], api_name="reroute", trigger_mode="always_last",
                        **{**common, "inputs_kwargs": {**self.widgets, "previous": self.out["trace"],
                                                       "grid": grid_state, "reliability": self.out["reliability"]}})
        runs = {**common, "cancels": [reroute]}  # Run never waits behind a re-route: it replaces it
        self.run_btn.click(self.generate, None, out, api_name="generate", **runs)
        self.widgets["prompt"].submit(self.generate, None, out, api_visibility="private", **runs)
        self.real_btn.click(self.rerun_real, None, out, api_name="rerun_real", **runs)
        self.three.click(lambda: {**{self.widgets[k]: v for k, v in asdict(THREE_TIER).items()}, self.example: None},
                         None, [*self.widgets.values(), self.example], queue=False, api_visibility="private").then(
            self.generate, None, out, api_visibility="private", **runs)
        gr.on([self.widgets[n].input for n in ("tau_accept", "tau_slim")], self.predict,
              [self.out["trace"], self.out["reliability"], self.widgets["tau_accept"], self.widgets["tau_slim"]],
              self.out["prediction"],
              api_name="predict_tiers", queue=False, show_progress="hidden", trigger_mode="always_last")
        self.stop_btn.click(self.stop, None, self.out["status"], api_name="stop", queue=False)
        self.widgets["mode"].change(self.tier_sliders, self.widgets["mode"],
                                    [self.widgets["tau_accept"], self.widgets["tau_slim"]], queue=False,
                                    api_visibility="private", show_progress="hidden")
        gr.on([self.widgets[n].change for n in OPENING_NAMED], self.opening_effect,
              None, [self.out["effect"], self.three], inputs_kwargs={**self.widgets, "trace": self.out["trace"]},
              queue=False, api_visibility="private", show_progress="hidden")
        return []
