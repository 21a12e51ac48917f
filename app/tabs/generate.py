"""Tab 1, Generate & tune: prompt, run / stop, live thresholds, coloured text, metrics and charts.

It opens on a recorded sweep of the Qwen2.5-Coder pair (app.recorded) with no model loaded: every point of its
threshold grid was computed ahead of time, so a slider notch is drawn in the browser (app.notch) and the
trade-off chart's marker moves with it. "Run it live" loads the models the screen names (or, where this
machine cannot hold them, runs SmolLM2 instead and says so). Handlers turn the widget values into one
`Settings`, run `app.streaming` (through app.tabs.generate_streams), and map its name-keyed updates onto this tab's
components; threshold and γ sliders re-route on release (no button).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import gradio as gr

from app import live_load, recorded, streaming
from app.model_thread import MODEL, REROUTE, model_event, model_steps
from app.notch import NotchPanel, drawn_html
from app.prefetch import STEP
from app.run_views import computed_update, status_line
from app.session import SESSIONS, session_id
from app.settings import DEFAULT, THREE_TIER, Settings
from app.tabs.generate_layout import decoding_settings, lower_half
from app.tabs.generate_streams import WAITING_FOR_MODEL, _after_own_run, _reroute, _reroute_at_once, _run
from app.views import cards, charts, render
from app.views.page_grid import FEED, page_json
from app.widgets import lenient, stop_requested_js
from core import EMBEDDED_ID
from core.limits import MAX_GAMMA
from core.round_policy import thresholds_apply
from examples import FAMILIES, load_prompts

OUTPUTS = ("tokens", "status", "legend", "metrics", "metrics_json", "conf_plot", "timeline_plot", "files", "trace",
           "headline", "why", "prediction", "breakeven_plot", "reliability_plot", "strip_plot", "reliability", "effect",
           "effect_button", "grid_data", "grid_timer")
"""Output names of /generate, /rerun_real and /reroute in API order (/reroute adds "tradeoff_plot")."""
RELIABILITY_OUTPUTS = ("conf_plot", "reliability_plot", "prediction", "reliability")
"""What a browser page's run receives after the τ_accept line (app.streaming.reliability_update), besides the grid
sent again (its words differing against the full model's plain answer, where that was decoded after the line)."""
THREE_TIER_LABEL = "Show the trade-off: the Qwen2.5-Coder pair, recorded"
RECORDED_BUTTONS = (("opening", "Qwen pair: the trade-off"), ("lookup", "Prompt lookup: fastest exact"),
                    ("three-tier", "Three tiers, SmolLM2"))
"""The cockpit's one-click screens, each a recorded sweep (app.recorded.PRESETS), no model needed."""
SLIDER_LABELS = {"tau_accept": "τ_accept · keep drafts unchecked at or above",
                 "tau_slim": "τ_slim · slim verifier decides at or above"}
OFF_IN = {"sd": "off in classic SD: every draft token goes to the full model", "plain": "off in plain decoding: "
          "nothing is drafted"}
READY = "Ready. Pick an example or type a prompt, then press **Run**."


def _example_choices(family: str) -> list[tuple[str, str]]:
    return [(p.label, p.text) for p in load_prompts(None if family == "all" else family)]


def _models(values: dict[str, Any]) -> live_load.Models | None:
    """The models this run needs, as `prepare` read them from the Models boxes (None for an API call: the
    session's own choice, the embedded model unless it loaded others)."""
    wanted = values.pop("models_wanted", None)
    return tuple(wanted) if wanted else None


def recorded_screen(name: str, session: str = "") -> dict[str, Any] | None:
    """Every output, widget value and model box of a recorded sweep's own run (None when it cannot be used)."""
    grid = recorded.load(recorded.PRESETS[name])
    if grid is None:
        return None
    trace = grid.traces[next(iter(grid.traces))]
    settings = Settings.of(grid.config, grid.prompt)
    update = computed_update(grid, trace, settings, "Recorded run", rerouted=False)
    update["status"] = status_line(trace, "Recorded run", grid.recorded) + " · no model loaded: drag a slider"
    update["grid_data"] = FEED.full(session, grid) if session else page_json(grid)[0]
    verifier, drafter, quant = live_load.wanted(*recorded.models_named(grid.recorded))  # the setting by name
    return {"outputs": update, "settings": settings, "models": (verifier, drafter, quant or None)}


STOP_REQUESTED_JS = stop_requested_js("■ Stop requested: the run ends after its current round and shows what it has.")


class GenerateTab:
    """Builds the tab inside the current Blocks; `widgets` holds the `Settings` inputs by field name."""

    def __init__(self) -> None:
        opening = recorded_screen("opening")
        self.opening_models = opening["models"] if opening else (EMBEDDED_ID, "", None)
        shown = opening["outputs"] if opening else {}
        start = opening["settings"] if opening else Settings()
        with gr.Row(equal_height=False, elem_id="viasd-cockpit"):
            with gr.Column(scale=5, min_width=520):
                with gr.Row():
                    self.family = gr.Dropdown(["all", *FAMILIES], value="all", label="Example family", scale=1,
                                              min_width=140)
                    choices = _example_choices("all")
                    self.example = gr.Dropdown(choices, value=start.prompt if start.prompt in dict(choices).values()
                                               else None, label="Example prompt", elem_id="viasd-example", scale=3)
                prompt = gr.Textbox(label="Prompt", lines=2, max_lines=6, value=start.prompt,
                                    placeholder="Type a prompt or pick an example", elem_id="viasd-prompt")
                with gr.Row():
                    self.run_btn = gr.Button("▶ Run", variant="primary", elem_id="viasd-run", min_width=90, scale=2)
                    self.real_btn = gr.Button("Run it live", elem_id="viasd-real", min_width=160,
                                              scale=3)
                    self.stop_btn = gr.Button("■ Stop", variant="stop", elem_id="viasd-stop", min_width=90, scale=2)
                status = gr.Markdown(shown.get("status", READY), elem_id="viasd-status")
                tokens = drawn_html("tokens", shown.get("tokens", render.tokens_html(None)), elem_id="viasd-tokens-box")
                legend = drawn_html("legend", shown.get("legend", render.legend_html()), elem_id="viasd-legend-box")
                self.insight_why = drawn_html("why", shown.get("why", ""), elem_id="viasd-why")
            with gr.Column(scale=3, min_width=340):
                headline = drawn_html("headline", shown.get("headline", cards.headline_html({})),
                                      elem_id="viasd-headline-box")
                tau_accept = lenient(gr.Slider(0.0, 1.0, value=start.tau_accept, step=STEP, elem_id="viasd-tau-accept",
                                               label=SLIDER_LABELS["tau_accept"]))
                tau_slim = lenient(gr.Slider(0.0, 1.0, value=start.tau_slim, step=STEP, elem_id="viasd-tau-slim",
                                             label=SLIDER_LABELS["tau_slim"]))
                gamma = lenient(gr.Slider(1, MAX_GAMMA, value=start.gamma, step=1, label="γ · draft length",
                                          elem_id="viasd-gamma"))
                self.notch = NotchPanel(shown.get("grid_data", ""))
                effect = gr.Markdown(shown.get("effect", ""), elem_id="viasd-effect")
                self.three = gr.Button(THREE_TIER_LABEL, size="sm", elem_id="viasd-three-tier",
                                       visible=bool(shown.get("effect")))
                with gr.Row(elem_id="viasd-recorded-buttons"):
                    self.recorded_buttons = {name: gr.Button(label, size="sm", elem_id=f"viasd-show-{name}")
                                             for name, label in RECORDED_BUTTONS}
                with gr.Accordion("Pick both thresholds at once", open=False, elem_id="viasd-picker-box"):
                    self.notch.picker()
                gr.Markdown("Drag a slider: inside the grid the point is drawn at once (no model call); release, and "
                            "the cards and charts below follow. τ_slim follows τ_accept down (and back up); 1.0 "
                            "switches a tier off.", elem_classes="viasd-hint")
                widgets = decoding_settings(start)
                self.models_box = gr.Column()  # the Models panel (app.tabs.models) goes here
        self.widgets: dict[str, gr.components.Component] = {
            "prompt": prompt, **widgets, "tau_accept": tau_accept, "tau_slim": tau_slim, "gamma": gamma}
        self.widgets = {name: self.widgets[name] for name in Settings.names()}
        lower = lower_half(shown, start)
        self.out: dict[str, gr.components.Component] = {
            "tokens": tokens, "status": status, "legend": legend, **lower, "trace": gr.State(shown.get("trace")),
            "headline": headline, "why": self.insight_why, "reliability": gr.State(shown.get("reliability")),
            "effect": effect, "effect_button": self.three, "grid_data": self.notch.data, "grid_timer": self.notch.timer}
        self.out = {name: self.out[name] for name in OUTPUTS}
        self._targets = dict(self.out)  # plus the Compare tab's trade-off chart, once wired
        self.models_wanted = gr.State(None)  # set by `prepare` from the Models boxes before a run (UI only)

    def _keyed(self, update: dict[str, Any]) -> dict:
        if "effect" in update:  # the one-click way out shows exactly when the line saying why does
            update = {**update, "effect_button": gr.update(visible=bool(update["effect"]))}
        if "grid_timer" in update:
            update = {**update, "grid_timer": gr.Timer(active=bool(update["grid_timer"]))}
        return {self._targets[name]: value for name, value in update.items()}

    # -- handlers (inputs arrive by Settings field name, plus the Models boxes) ------------------
    @model_event
    def generate(self, request: gr.Request = None, **values: Any):
        """Run with the memo allowed: seen prefixes replay instantly (same tokens)."""
        models = _models(values)
        for update in _run(Settings.from_values(**values), session_id(request), True, models):
            yield self._keyed(update)

    @model_event
    def rerun_real(self, request: gr.Request = None, **values: Any):
        """Run it live: load the models the screen names, then run every forward pass for real (honest timing)."""
        models = _models(values)
        for update in _run(Settings.from_values(**values), session_id(request), False, models):
            yield self._keyed(update)

    def reroute(self, request: gr.Request = None, previous: Any = None, grid: Any = None, reliability: Any = None,
                **values: Any):
        """Live threshold update: a computed point at once, without waiting for the model; else, in the model's
        turn, a replay from the memo, streaming; a bad value keeps the last good result."""
        settings, session = Settings.from_values(**values), session_id(request)
        for update in _after_own_run(session):
            yield self._keyed(update)
        answer = _reroute_at_once(settings, session, previous, reliability)
        updates = [answer] if answer is not None else model_steps(
            lambda: _reroute(settings, session, previous, reliability), WAITING_FOR_MODEL)
        for update in updates:
            if "files" in update and grid is not None:  # the last update: the Compare grid's star moves too
                update["tradeoff_plot"] = charts.tradeoff_figure(grid, settings.tau_accept, settings.tau_slim)
            yield self._keyed(update)

    def poll(self, trace: Any, request: gr.Request = None) -> tuple:
        """Timer tick, one request: the grid points this page lacks, whether to keep polling, and the charts that
        read the run's reliability data once the background has measured it after the τ_accept line
        (app.streaming.reliability_update); skipped before."""
        session = session_id(request)
        data, timer = self.notch.more(session)
        update = streaming.reliability_update(session, trace) or {}
        data = update.get("grid_data", data)
        return data, timer, *(update.get(name, gr.skip()) for name in RELIABILITY_OUTPUTS)

    def tier_sliders(self, mode: str) -> dict:
        """Where tiers 1 and 2 cannot act in the chosen mode, their sliders say so and are disabled."""
        acts = thresholds_apply(mode)
        return {self.widgets[name]: gr.update(interactive=acts, label=label if acts else
                                              f"{label.split(' · ')[0]} · {OFF_IN.get(mode, 'off in this mode')}")
                for name, label in SLIDER_LABELS.items()}

    def stop(self, request: gr.Request = None) -> dict:
        """Ask this session's run to stop after its current round; it then shows the partial result. The page has
        already said "Stop requested" (`STOP_REQUESTED_JS`): a reply saying so could reach the page after the run's
        own "Stopped early" line and put a stale line back (CI saw it under load), so a stop that was requested
        writes nothing here."""
        if SESSIONS.request_stop(session_id(request)):
            return {self.out["status"]: gr.skip()}
        return {self.out["status"]: "Nothing to stop: no run of yours is in progress."}

    def ready(self, request: gr.Request = None) -> dict:
        """Status on page load: the recorded opening says what it is; any sweep left out says why, in one line."""
        problems = recorded.problem_line()
        opening = recorded.load(recorded.PRESETS["opening"])
        FEED.page_opened(session_id(request), opening)  # so its re-routes leave what the page draws itself
        if opening is not None:
            return {self.out["status"]: gr.skip()} if not problems else {self.out["status"]: problems}
        if SESSIONS.is_loaded():
            line = f"Ready · {SESSIONS.summary(session_id(request))}. " + READY[7:]
        else:
            line = "Ready. The model loads on first use (a few seconds). " + READY[7:]
        return {self.out["status"]: " ".join(p for p in (problems, line) if p)}

    def show_recorded(self, name: str):
        """A handler that opens the recorded sweep `name`: its settings, its models' names, its run; no model."""
        def show(request: gr.Request = None) -> dict:
            screen = recorded_screen(name, session_id(request))
            if screen is None:
                return {self.out["status"]: recorded.problem_line() or "⚠ That recorded sweep is not available."}
            boxes = dict(zip(self._model_boxes, screen["models"], strict=True))
            widgets = {self.widgets[k]: v for k, v in asdict(screen["settings"]).items()}
            example = screen["settings"].prompt if screen["settings"].prompt in dict(self.example.choices).values() \
                else None
            return {**self._keyed(screen["outputs"]), **widgets, **boxes, self.example: example}
        return show

    def prepare(self, verifier: str, drafter: str, quant: str | None, prompt: str, request: gr.Request = None
                ) -> dict:
        """Before a run: where this machine cannot hold the models the screen names, switch to SmolLM2 (three
        tiers with the self-drafter, same prompt) and say so; otherwise change nothing."""
        models = live_load.wanted(verifier, drafter, quant)
        why = None if live_load.loaded_for(session_id(request), models) else live_load.holdable(models)
        if why is None:
            return {self.out["status"]: gr.skip(), self.models_wanted: models}
        fallback = THREE_TIER.with_(prompt=prompt)
        return {self.out["status"]: f"⚠ This machine cannot hold {models[0].removeprefix('embedded:')} ({why}): "
                                    "running SmolLM2-135M live instead, three tiers with the self-drafter.",
                **{self.widgets[k]: v for k, v in asdict(fallback).items()},
                **dict(zip(self._model_boxes, (EMBEDDED_ID, "", None), strict=True)),
                self.models_wanted: live_load.wanted(EMBEDDED_ID, "")}

    def wire(self, tradeoff_plot: gr.Plot, grid_state: gr.State,
             model_boxes: tuple[gr.Textbox, gr.Textbox, gr.Dropdown]) -> list:
        """Attach the events; returns the model events Stop may cancel (none: Stop ends them by flag)."""
        self._model_boxes = model_boxes
        out = list(self.out.values())
        self._targets["tradeoff_plot"] = tradeoff_plot
        boxes = {"models_wanted": self.models_wanted}
        self.family.change(lambda f: gr.update(choices=_example_choices(f), value=None), self.family, self.example,
                           api_visibility="private", queue=False)
        self.example.input(lambda text: text or gr.skip(), self.example, self.widgets["prompt"],
                           api_visibility="private", queue=False)
        self.widgets["prompt"].input(lambda text, chosen: gr.skip() if text == chosen else gr.update(value=None),
                                     [self.widgets["prompt"], self.example], self.example, api_visibility="private",
                                     queue=False, show_progress="hidden")
        common = {"inputs_kwargs": {**self.widgets, **boxes}, "show_progress": "minimal", **MODEL}
        reroute = gr.on([self.widgets[n].release for n in streaming.LIVE], self.reroute, None,
                        [*out, tradeoff_plot], api_name="reroute", trigger_mode="always_last",
                        show_progress_on=[self.out["status"], self.out["metrics"]],  # the page drew text and headline
                        **{**common, **REROUTE, "inputs_kwargs": {**self.widgets, "previous": self.out["trace"],
                                                                  "grid": grid_state,
                                                                  "reliability": self.out["reliability"]}})
        self.notch.wire({n: self.widgets[n] for n in streaming.LIVE}, reroute)
        self.notch.timer.tick(self.poll, self.out["trace"], [self.notch.data, self.notch.timer,
                                                             *[self.out[n] for n in RELIABILITY_OUTPUTS]],
                              queue=False, show_progress="hidden", api_visibility="private")
        runs = {**common, "cancels": [reroute]}  # Run never waits behind a re-route: it replaces it
        prepare = {"fn": self.prepare, "inputs": [*model_boxes, self.widgets["prompt"]],
                   "outputs": [self.out["status"], *self.widgets.values(), *model_boxes, self.models_wanted],
                   "queue": False,
                   "api_visibility": "private"}
        self.run_btn.click(**prepare).then(self.generate, None, out, api_name="generate", **runs)
        self.widgets["prompt"].submit(**prepare).then(self.generate, None, out, api_visibility="private", **runs)
        self.real_btn.click(**prepare).then(self.rerun_real, None, out, api_name="rerun_real", **runs)
        screen_outputs = [*out, *self.widgets.values(), *model_boxes, self.example]
        for name, button in self.recorded_buttons.items():
            button.click(self.show_recorded(name), None, screen_outputs, queue=False, api_visibility="private")
        self.three.click(self.show_recorded("opening"), None, screen_outputs, queue=False, api_visibility="private")
        self.stop_btn.click(None, self.out["status"], self.out["status"], js=STOP_REQUESTED_JS, queue=False,
                            api_visibility="private")  # said at once in the page, before the run's last line
        self.stop_btn.click(self.stop, None, self.out["status"], api_name="stop", queue=False)
        self.widgets["mode"].change(self.tier_sliders, self.widgets["mode"],
                                    [self.widgets["tau_accept"], self.widgets["tau_slim"]], queue=False,
                                    api_visibility="private", show_progress="hidden")
        return []


__all__ = ["DEFAULT", "OUTPUTS", "GenerateTab", "recorded_screen"]
