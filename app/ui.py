"""The Gradio Blocks app: layout and event wiring. It only calls core and renders traces.

Story, top to bottom: Generate & tune (stream a run, drag thresholds and see the routing change
live), Compare (plain / classic SD / VIA-SD, threshold trade-off grid), Classroom (round-by-round
replay with captions), About the numbers (what is measured and what is modelled).
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

import core.metrics as core_metrics
from app import charts, classroom, render, session
from app.prefetch import PREFETCHER, STEP
from core import EMBEDDED_ID, DecodeConfig, ViaSdError, attach_fidelity, generate, iter_generate, summarize
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS, MAX_PROMPT_CHARS
from core.routing import PRESETS
from core.sweep import compare, comparison_table, threshold_grid
from core.trace import Trace
from examples import FAMILIES, load_prompts, load_walkthroughs

log = logging.getLogger("viasd.app")
MODEL = {"concurrency_id": "model", "concurrency_limit": 1}
DEFAULT = DecodeConfig()
DEFAULT_GRID = "0.3, 0.5, 0.7, 0.9, 1.0"
MODE_CHOICES = [("VIA-SD (three tiers)", "via"), ("classic speculative decoding", "sd"), ("plain decoding", "plain")]
DRAFTER_CHOICES = [("self: the model with layers skipped", "self"), ("prompt lookup (n-gram copy)", "ngram"),
                   ("separate drafter model (load it under Models)", "model")]
THEME = gr.themes.Default(text_size="lg", primary_hue="blue")

ABOUT = f"""
## Two kinds of numbers, never mixed

**Modelled accelerator (blue cards, "modelled" in every label).** On a GPU at decoding batch sizes a forward
pass costs about the weights it reads, almost regardless of how many tokens it scores. The cost model charges
each call the share of the full model's weights its route runs: plain decoding costs exactly 1 unit per token,
and *modelled speed-up* = tokens / units. This is what the routing decisions would buy on an accelerator. It is a
model, not a measurement.

**Measured wall clock (orange cards, "measured").** Seconds on this machine's CPU. A CPU scores several tokens at
once at roughly the price of two single passes, so measured speed-ups here are smaller than modelled ones.
Measured numbers are only shown when every forward pass really ran: threshold changes replay predictions from a
memo (same tokens, instantly), which makes their wall clock meaningless. Press **Re-run for real timing** to
measure the current settings honestly.

**Fidelity (green cards, measured).** How far tiers 1 and 2 moved the text away from the full model: *agreement*
is the share of tokens that are the full model's own top choice given the text so far; *common prefix* counts
tokens identical to the full model's plain output; *NLL* is the full model's surprise at the text.

## Metric definitions
```
{(core_metrics.__doc__ or "").strip()}
```

## Limits and tips
* Prompts up to {MAX_PROMPT_CHARS:,} characters; up to {MAX_NEW_TOKENS} new tokens; draft length gamma up to
  {MAX_GAMMA}. Thresholds must satisfy τ_slim ≤ τ_accept (a threshold of 1.0 switches its tier off).
* One run at a time uses the model; other requests wait in the queue. **Stop** ends a run after its current round.
* Every chart has a camera icon in its top-right toolbar: click it to download the chart as a PNG.
  The trace itself downloads as CSV (tokens, rounds) and JSON below the charts.
"""


def _session_id(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "anonymous"


def _message(text: str) -> str:
    return f"⚠ **{text}**"


def export_files(trace: Trace) -> list[str]:
    """Write the trace as tokens CSV, rounds CSV and JSON into a fresh temp folder; return the paths."""
    folder = Path(tempfile.mkdtemp(prefix="viasd-trace-"))
    stem = f"viasd_{trace.config.get('mode', 'run')}_{time.strftime('%Y%m%d-%H%M%S')}"
    paths = [folder / f"{stem}_tokens.csv", folder / f"{stem}_rounds.csv", folder / f"{stem}.json"]
    trace.to_dataframe().to_csv(paths[0], index=False)
    trace.rounds_dataframe().to_csv(paths[1], index=False)
    paths[2].write_text(trace.to_json())
    return [str(p) for p in paths]


def _status(trace: Trace, phase: str) -> str:
    m = summarize(trace)
    timing = ("measured wall clock (every pass ran for real)" if m["timing_complete"]
              else "replayed from memo (wall clock not meaningful)")
    info = trace.models
    return (f"**{phase}** · {m['tokens']} tokens in {m['rounds']} rounds · modelled speed-up "
            f"**{m['modelled_speedup']:.2f}×** · {timing} · {info['verifier']} · {info['num_layers']} layers · "
            f"{info['dtype']} on {info['device']} · drafter: {info['drafter']}")


def _full_outputs(trace: Trace, config: DecodeConfig, phase: str, grid: pd.DataFrame | None = None) -> tuple:
    """Every Generate-tab output for a finished trace."""
    metrics = summarize(trace)
    return (render.tokens_html(trace), _status(trace, phase), render.legend_html(trace),
            render.metrics_html(metrics, trace), json.loads(json.dumps(metrics, default=str)),
            charts.confidence_figure(trace, config.tau_accept, config.tau_slim), charts.timeline_figure(trace),
            export_files(trace), trace)


N_MAIN = 9  # number of outputs of _full_outputs


def _skip_with(status: str) -> tuple:
    """Keep the last good result on screen; only the status line changes."""
    return (gr.skip(), status) + tuple(gr.skip() for _ in range(N_MAIN - 2))


STREAM_EVERY_S = 0.25
"""Minimum time between streamed updates: a replay produces rounds far faster than a browser repaints."""


def _stream(prompt: str, settings: tuple, replay: bool, request: gr.Request | None, phase: str = ""):
    """Run one generation, streaming coloured tokens each round; fidelity and charts at the end."""
    started = time.perf_counter()
    try:
        config = session.build_config(*settings)
        with PREFETCHER.foreground():
            yield from _run_stream(prompt, config, replay, request, phase, started)
    except ViaSdError as exc:
        gr.Warning(str(exc))
        yield _skip_with(_message(str(exc)))
    except Exception as exc:  # keep the app alive; the log has the details
        log.exception("generation failed")
        gr.Warning(f"internal error: {exc}")
        yield _skip_with(_message(f"internal error: {type(exc).__name__}: {exc}"))


def _run_stream(prompt: str, config: DecodeConfig, replay: bool, request: gr.Request | None, phase: str,
                started: float):
    """The body of `_stream`: generate, stream, measure fidelity, render, then warm the neighbours."""
    if not session.is_loaded():
        yield _skip_with("… Loading the model (first use only, a few seconds)…")
    bundle = session.get_bundle(_session_id(request))
    should_stop = session.start_job(_session_id(request))
    trace = None
    label = "Running" if replay else "Running every pass for real (honest timing)"
    last = 0.0
    for trace in iter_generate(bundle, prompt, config, replay=replay, should_stop=should_stop):
        if time.perf_counter() - last < STREAM_EVERY_S:
            continue
        last = time.perf_counter()
        yield (render.tokens_html(trace), f"… {label}: {len(trace.tokens)}/{config.max_new_tokens} tokens, "
               f"round {len(trace.rounds)}…") + tuple(gr.skip() for _ in range(N_MAIN - 2))
    if trace is None:
        return
    if trace.stop_reason != "cancelled" and not should_stop():
        yield (gr.skip(), "… Measuring fidelity against the full model…") + tuple(
            gr.skip() for _ in range(N_MAIN - 2))
        attach_fidelity(bundle, trace)
    if trace.stop_reason == "cancelled":
        phase = "Stopped early"
    elif not phase:
        phase = "Done" if replay else "Done (real timing)"
    yield _full_outputs(trace, config, phase.format(seconds=time.perf_counter() - started))
    if trace.stop_reason != "cancelled":
        PREFETCHER.schedule(bundle, prompt, config)


def run_generate(prompt: str, mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float,
                 max_new_tokens: float, sampling: bool, temperature: float, top_p: float, seed: float,
                 tau_accept: float, tau_slim: float, request: gr.Request = None):
    """Run with the memo allowed: seen prefixes replay instantly (same tokens)."""
    settings = (mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling, temperature, top_p, seed,
                tau_accept, tau_slim)
    yield from _stream(prompt, settings, True, request)


def run_real(prompt: str, mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float,
             max_new_tokens: float, sampling: bool, temperature: float, top_p: float, seed: float,
             tau_accept: float, tau_slim: float, request: gr.Request = None):
    """Run every forward pass for real, so the measured wall clock is honest."""
    settings = (mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling, temperature, top_p, seed,
                tau_accept, tau_slim)
    yield from _stream(prompt, settings, False, request)


def run_reroute(prompt: str, mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float,
                max_new_tokens: float, sampling: bool, temperature: float, top_p: float, seed: float,
                tau_accept: float, tau_slim: float, grid: pd.DataFrame | None = None, request: gr.Request = None):
    """Live threshold update: replay from the memo, streaming; a bad setting keeps the last good result.

    The part of the text that the new thresholds route the same way comes straight from the memo and
    shows at once; only prefixes no earlier run visited are computed, and they stream in as they come.
    """
    settings = (mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling, temperature, top_p, seed,
                tau_accept, tau_slim)
    try:
        session.build_config(*settings)
    except ViaSdError as exc:
        gr.Warning(str(exc))
        yield (*_skip_with(_message(f"{exc} — still showing the last good result")), gr.skip())
        return
    previous = None  # held back one step so the last update carries the trade-off chart's new star too
    for out in _stream(prompt, settings, True, request, phase="Re-routed in {seconds:.2f} s"):
        if previous is not None:
            yield (*previous, gr.skip())
        previous = out
    if previous is not None:
        star = charts.tradeoff_figure(grid, float(tau_accept), float(tau_slim)) if grid is not None else gr.skip()
        yield (*previous, star)


def run_compare(prompt: str, mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float,
                max_new_tokens: float, sampling: bool, temperature: float, top_p: float, seed: float,
                tau_accept: float, tau_slim: float, real_timing: bool, request: gr.Request = None,
                progress: gr.Progress = gr.Progress()) -> tuple:  # noqa: B008
    """Plain, classic SD and VIA-SD on the same prompt; texts with differences from plain marked."""
    try:
        config = session.build_config(mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling,
                                      temperature, top_p, seed, tau_accept, tau_slim)
        progress(0.05, desc="Loading the model" if not session.is_loaded() else "Running plain, SD and VIA-SD")
        bundle = session.get_bundle(_session_id(request))
        progress(0.1, desc="Running plain, classic SD and VIA-SD" + (" for real" if real_timing else ""))
        should_stop = session.start_job(_session_id(request))
        with PREFETCHER.foreground():
            traces = compare(bundle, prompt, config, replay=not real_timing, should_stop=should_stop,
                             on_progress=lambda done, total: progress(0.1 + 0.8 * done / total,
                                                                      desc=f"{done}/{total} modes done"))
        if len(traces) < 3 or any(t.stop_reason == "cancelled" for t in traces.values()):
            return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), "**Stopped.** Compare ended early; nothing to show.")
        table = comparison_table(traces).round(3)
        if not real_timing:  # replayed wall clock means nothing: do not show numbers that look measured
            table = table.drop(columns=["tokens/s (measured)", "speed-up (measured)"])
        plain = traces["plain"]
        texts = [render.diff_html(traces[m], plain, f"viasd-compare-{m}") for m in ("plain", "sd", "via")]
        note = ("Timing: every pass ran for real, so tokens/s and measured speed-up are honest." if real_timing else
                "Timing: replayed from the memo, so the measured columns are NOT meaningful; modelled ones are.")
        return (*texts, table, f"**Done.** {note}")
    except ViaSdError as exc:
        gr.Warning(str(exc))
        return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), _message(str(exc)))
    except Exception as exc:
        log.exception("compare failed")
        return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), _message(f"internal error: {type(exc).__name__}: {exc}"))


def parse_values(text: str) -> list[float]:
    """'0.3, 0.5, 1' -> [0.3, 0.5, 1.0]; raises ValueError with a readable message."""
    try:
        values = sorted({round(float(v), 4) for v in text.replace(";", ",").split(",") if v.strip()})
    except ValueError:
        raise ValueError(f"cannot read threshold values '{text}': write them like 0.3, 0.5, 0.9") from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError("threshold values must be numbers within [0, 1], e.g. 0.3, 0.5, 0.9")
    if len(values) > 8:
        raise ValueError("at most 8 threshold values (36 pairs) per grid")
    return values


def run_grid(prompt: str, mode: str, drafter: str, draft_route: str, slim_route: str, gamma: float,
             max_new_tokens: float, sampling: bool, temperature: float, top_p: float, seed: float,
             tau_accept: float, tau_slim: float, values_text: str, request: gr.Request = None,
             progress: gr.Progress = gr.Progress()) -> tuple:  # noqa: B008
    """VIA-SD over every ordered threshold pair from the values; modelled speed-up vs fidelity."""
    try:
        values = parse_values(values_text)
        config = session.build_config(mode, drafter, draft_route, slim_route, gamma, max_new_tokens, sampling,
                                      temperature, top_p, seed, tau_accept, tau_slim)
        progress(0.0, desc="Loading the model" if not session.is_loaded() else "Reference run")
        bundle = session.get_bundle(_session_id(request))
        should_stop = session.start_job(_session_id(request))
        with PREFETCHER.foreground():
            grid = threshold_grid(bundle, prompt, config, values, should_stop=should_stop,
                                  on_progress=lambda done, total: progress(done / total, desc=f"pair {done}/{total}"))
        grid = grid.round(4)
        stopped = " (stopped early)" if should_stop() else ""
        return (charts.tradeoff_figure(grid, config.tau_accept, config.tau_slim), grid,
                f"**Grid done{stopped}:** {len(grid)} threshold pairs. Speed-up is modelled; agreement is measured.",
                grid)
    except (ViaSdError, ValueError) as exc:
        gr.Warning(str(exc))
        return (gr.skip(), gr.skip(), _message(str(exc)), gr.skip())
    except Exception as exc:
        log.exception("grid failed")
        return (gr.skip(), gr.skip(), _message(f"internal error: {type(exc).__name__}: {exc}"), gr.skip())


def _walkthroughs() -> dict[str, dict]:
    return {w["title"]: w for w in load_walkthroughs()}


def _decoder(trace: Trace):
    """Token-id decoder of the model that wrote `trace` (draft tokens that were thrown away have no text)."""
    tokenizer = session.tokenizer_for(trace.models.get("verifier", ""))
    return lambda token_id: tokenizer.decode([token_id], skip_special_tokens=False)


def show_round(trace: Trace | None, round_number: float) -> tuple[str, str, str]:
    """Render one round of the classroom replay (1-based round number)."""
    if trace is None or not trace.rounds:
        return (render.tokens_html(None, placeholder="Load a walkthrough to begin.", elem_id="viasd-class-tokens"),
                "", "Load a walkthrough or use your last run to start the replay.")
    index = max(0, min(int(round_number or 1) - 1, len(trace.rounds) - 1))
    table, caption = classroom.round_view(trace, index, _decoder(trace))
    return render.tokens_html(trace, current_round=index, elem_id="viasd-class-tokens"), table, caption


def _round_slider(trace: Trace) -> dict:
    return gr.update(minimum=1, maximum=max(1, len(trace.rounds)), value=1, step=1)


def load_walkthrough(title: str) -> tuple:
    """Run a ready walkthrough (memo allowed) and show its first round."""
    walkthroughs = _walkthroughs()
    if title not in walkthroughs:
        msg = f"unknown walkthrough '{title}': pick one from the list"
        gr.Warning(msg)
        return (_message(msg), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip())
    w = walkthroughs[title]
    try:
        config = DecodeConfig(**w["config"]).validate()
        with PREFETCHER.foreground():
            trace = generate(session.get_bundle(), w["prompt"], config, replay=True)
    except ViaSdError as exc:
        gr.Warning(str(exc))
        return (_message(str(exc)), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip())
    tokens, table, caption = show_round(trace, 1)
    return classroom.walkthrough_intro(w), _round_slider(trace), tokens, table, caption, trace


def use_last_run(trace: Trace | None) -> tuple:
    """Replay the last Generate-tab run in the classroom."""
    if trace is None:
        gr.Warning("no run yet: press Run in Generate & tune first")
        return (_message("No run yet: press Run in Generate & tune first."),) + tuple(gr.skip() for _ in range(5))
    tokens, table, caption = show_round(trace, 1)
    intro = f"### Your last run\n\n**Prompt:** {trace.prompt}\n\nMode `{trace.config['mode']}`, " \
            f"τ_accept {trace.config['tau_accept']}, τ_slim {trace.config['tau_slim']}, gamma {trace.config['gamma']}."
    return intro, _round_slider(trace), tokens, table, caption, trace


def step_round(trace: Trace | None, round_number: float, delta: int) -> float:
    if trace is None or not trace.rounds:
        return 1
    return max(1, min(len(trace.rounds), int(round_number or 1) + delta))


def load_models(verifier: str, drafter: str, request: gr.Request = None) -> str:
    """Switch this browser session to another verifier / drafter pair (Hub ids or local folders)."""
    try:
        with PREFETCHER.foreground():
            bundle = session.choose_models(_session_id(request), verifier, drafter)
    except ViaSdError as exc:
        gr.Warning(str(exc))
        return _message(f"{exc} — still using {session.model_summary(_session_id(request))}")
    hint = " Choose the drafter 'separate drafter model' under Decoding settings to use it." if bundle.drafter else ""
    return f"**Models ready:** {session.model_summary(_session_id(request))}.{hint}"


def stop(request: gr.Request = None) -> str:
    """Ask this session's running job to stop; streaming runs are cancelled by Gradio too."""
    session.request_stop(_session_id(request))
    return "■ Stop requested: the run ends after its current round; the app keeps working."


def _example_choices(family: str) -> list[tuple[str, str]]:
    return [(p.label, p.text) for p in load_prompts(None if family == "all" else family)]


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded here; the first model event or warm-up loads it)."""
    route_choices = list(PRESETS)
    with gr.Blocks(title="VIA-SD Explorer") as demo:
        gr.Markdown("# VIA-SD Explorer\nSpeculative decoding with three tiers: a cheap drafter guesses ahead; "
                    "each guess is **trusted** (tier 1), **checked by a slim verifier** (tier 2) or **checked by the "
                    "full model** (tier 3). Follow the tabs left to right: generate and tune, compare, replay in "
                    "class, and read what every number means.")
        trace_state = gr.State(None)
        grid_state = gr.State(None)
        with gr.Tabs():
            with gr.Tab("1 · Generate & tune", id="generate"):
                with gr.Row():
                    with gr.Column(scale=3):
                        with gr.Row():
                            family = gr.Dropdown(["all", *FAMILIES], value="all", label="Example family", scale=1)
                            example = gr.Dropdown(_example_choices("all"), value=None, label="Example prompt",
                                                  elem_id="viasd-example", scale=3)
                        prompt = gr.Textbox(label="Prompt", lines=3, value=load_prompts("chat")[0].text,
                                            placeholder="Type a prompt or pick an example", elem_id="viasd-prompt")
                        with gr.Row():
                            run_btn = gr.Button("▶ Run", variant="primary", elem_id="viasd-run")
                            real_btn = gr.Button("Re-run for real timing", elem_id="viasd-real")
                            stop_btn = gr.Button("■ Stop", variant="stop", elem_id="viasd-stop")
                        with gr.Accordion("Decoding settings", open=False):
                            with gr.Row():
                                mode = gr.Radio(MODE_CHOICES, value=DEFAULT.mode, label="Mode")
                                drafter = gr.Radio(DRAFTER_CHOICES, value=DEFAULT.drafter, label="Drafter")
                            with gr.Row():
                                draft_route = gr.Dropdown(route_choices, value=DEFAULT.draft_route, label="Draft route",
                                                          allow_custom_value=True,
                                                          info="layers the self-drafter runs; or type layers:0-3,8")
                                slim_route = gr.Dropdown(route_choices, value=DEFAULT.slim_route, label="Slim route",
                                                         allow_custom_value=True, info="layers the slim verifier runs")
                            max_tokens = gr.Slider(1, MAX_NEW_TOKENS, value=48, step=1, label="Max new tokens",
                                                   elem_id="viasd-max-tokens")
                        with gr.Accordion("Models", open=False):
                            gr.Markdown("The embedded SmolLM2-135M-Instruct works offline. Any Llama, Qwen2/3, "
                                        "Mistral, Gemma or Phi-3 causal LM by Hub id or local folder works where it "
                                        "can be fetched; a drafter must share the verifier's tokenizer.")
                            with gr.Row():
                                verifier_id = gr.Textbox(EMBEDDED_ID, label="Verifier", elem_id="viasd-verifier")
                                drafter_id = gr.Textbox("", label="Drafter model (optional)",
                                                        placeholder="e.g. a smaller model of the same family",
                                                        elem_id="viasd-drafter-model")
                            models_btn = gr.Button("Load models", elem_id="viasd-load-models")
                            models_status = gr.Markdown("Using the embedded model.", elem_id="viasd-models-status")
                            with gr.Row():
                                sampling = gr.Checkbox(False, label="Sample (off = greedy)")
                                temperature = gr.Slider(0.05, 2.0, value=0.8, step=0.05, label="Temperature")
                                top_p = gr.Slider(0.05, 1.0, value=0.95, step=0.05, label="Top-p")
                                seed = gr.Number(0, precision=0, label="Seed")
                    with gr.Column(scale=2):
                        gr.Markdown("### Live thresholds\nRelease a slider (or type a value and press Tab) and the "
                                    "routing is replayed from the memo instantly — no button needed.")
                        tau_accept = gr.Slider(0.0, 1.0, value=DEFAULT.tau_accept, step=STEP,
                                               elem_id="viasd-tau-accept",
                                               label="τ_accept — trust the drafter directly at or above")
                        tau_slim = gr.Slider(0.0, 1.0, value=DEFAULT.tau_slim, step=STEP, elem_id="viasd-tau-slim",
                                             label="τ_slim — let the slim verifier decide at or above")
                        gamma = gr.Slider(1, MAX_GAMMA, value=DEFAULT.gamma, step=1, label="γ — draft length",
                                          elem_id="viasd-gamma")
                        gr.Markdown("τ_slim must not exceed τ_accept. 1.0 switches a tier off.")
                status = gr.Markdown("Ready. Pick an example or type a prompt, then press **Run**.",
                                     elem_id="viasd-status")
                legend = gr.HTML(render.legend_html(), elem_id="viasd-legend-box")
                tokens = gr.HTML(render.tokens_html(None), elem_id="viasd-tokens-box")
                metrics = gr.HTML(render.metrics_html({}), elem_id="viasd-metrics-box")
                with gr.Row():
                    conf_plot = gr.Plot(charts.confidence_figure(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                        label="Confidences (camera icon: save as PNG)", elem_id="viasd-conf-plot")
                    timeline_plot = gr.Plot(charts.timeline_figure(None), label="Per-round timeline",
                                            elem_id="viasd-timeline-plot")
                gr.Markdown("*Confidence chart:* a token right of the green line was trusted without a check (tier 1); "
                            "right of the blue dashed line the slim verifier may decide (tier 2); the rest went to the "
                            "full model. *Timeline:* bars are the modelled cost of each model per round, in full-model "
                            "passes; the black line is measured wall time (dotted = replayed, not meaningful). "
                            "The camera icon on each chart saves it as a PNG.")
                with gr.Row():
                    files = gr.File(label="Download this trace: tokens CSV, rounds CSV, full JSON",
                                    file_count="multiple", interactive=False, elem_id="viasd-files")
                    with gr.Accordion("All metrics (raw)", open=False):
                        metrics_json = gr.JSON(label="summarize(trace)")

            with gr.Tab("2 · Compare", id="compare"):
                gr.Markdown("Uses the prompt and settings from **Generate & tune**. Highlighted words differ from the "
                            "full model's own (plain) output.")
                with gr.Row():
                    compare_btn = gr.Button("Compare plain / classic SD / VIA-SD", variant="primary",
                                            elem_id="viasd-compare")
                    real_timing = gr.Checkbox(True, label="Real timing (every pass runs; slower but honest tokens/s)")
                    stop_btn2 = gr.Button("■ Stop", variant="stop")
                compare_status = gr.Markdown("")
                with gr.Row():
                    with gr.Column():
                        gr.Markdown("**Plain** (the full model, the reference)")
                        out_plain = gr.HTML(elem_id="viasd-compare-plain-box")
                    with gr.Column():
                        gr.Markdown("**Classic SD** (every draft checked by the full model)")
                        out_sd = gr.HTML(elem_id="viasd-compare-sd-box")
                    with gr.Column():
                        gr.Markdown("**VIA-SD** (three tiers, current thresholds)")
                        out_via = gr.HTML(elem_id="viasd-compare-via-box")
                table = gr.Dataframe(label="Side by side (measured columns say so; modelled = accelerator cost model)",
                                     interactive=False)
                gr.Markdown("### Trade-off over threshold pairs\nRuns VIA-SD for every pair τ_slim ≤ τ_accept from "
                            "the values below (memo on, so only new prefixes cost time). The star is the current "
                            "sliders' pair.")
                with gr.Row():
                    grid_values = gr.Textbox(DEFAULT_GRID, label="Threshold values", scale=3)
                    grid_btn = gr.Button("Run threshold grid", variant="primary", scale=1, elem_id="viasd-grid")
                grid_status = gr.Markdown("")
                tradeoff_plot = gr.Plot(charts.tradeoff_figure(None, DEFAULT.tau_accept, DEFAULT.tau_slim),
                                        label="Trade-off (camera icon: save as PNG)")
                grid_table = gr.Dataframe(label="Grid", interactive=False)

            with gr.Tab("3 · Classroom", id="classroom"):
                titles = list(_walkthroughs())
                with gr.Row():
                    walk = gr.Dropdown(titles, value=titles[0] if titles else None, label="Walkthrough", scale=3)
                    walk_btn = gr.Button("Load walkthrough", variant="primary", scale=1, elem_id="viasd-walk")
                    last_btn = gr.Button("Use my last run", scale=1)
                intro = gr.Markdown("Pick a walkthrough and press **Load**, then step through it round by round.")
                class_state = gr.State(None)
                with gr.Row():
                    prev_btn = gr.Button("◀ Previous round")
                    round_slider = gr.Slider(1, 2, value=1, step=1, label="Round", scale=3,
                                             elem_id="viasd-round-slider")
                    next_btn = gr.Button("Next round ▶")
                class_tokens = gr.HTML(render.tokens_html(None, placeholder="Load a walkthrough to begin.",
                                                          elem_id="viasd-class-tokens"))
                round_table = gr.HTML("")
                caption = gr.Markdown("", elem_id="viasd-caption")
                gr.HTML(render.legend_html())

            with gr.Tab("4 · About the numbers", id="about"):
                gr.Markdown(ABOUT)

        settings = [prompt, mode, drafter, draft_route, slim_route, gamma, max_tokens, sampling, temperature, top_p,
                    seed, tau_accept, tau_slim]
        main_out = [tokens, status, legend, metrics, metrics_json, conf_plot, timeline_plot, files, trace_state]

        family.change(lambda f: gr.update(choices=_example_choices(f), value=None), family, example,
                      api_visibility="private", queue=False)
        example.input(lambda text: text or gr.skip(), example, prompt, api_visibility="private", queue=False)

        gen_event = run_btn.click(run_generate, settings, main_out, api_name="generate", show_progress="minimal",
                                  **MODEL)
        submit_event = prompt.submit(run_generate, settings, main_out, api_visibility="private",
                                     show_progress="minimal", **MODEL)
        real_event = real_btn.click(run_real, settings, main_out, api_name="rerun_real", show_progress="minimal",
                                    **MODEL)
        reroute_event = gr.on(
              [tau_accept.release, tau_slim.release, gamma.release], run_reroute, [*settings, grid_state],
              [*main_out, tradeoff_plot], api_name="reroute", trigger_mode="always_last", show_progress="minimal",
              **MODEL)
        compare_event = compare_btn.click(run_compare, [*settings, real_timing],
                                          [out_plain, out_sd, out_via, table, compare_status], api_name="compare",
                                          **MODEL)
        grid_btn.click(  # not in cancels: the stop flag ends it and keeps the pairs done so far
            run_grid, [*settings, grid_values],
                                    [tradeoff_plot, grid_table, grid_status, grid_state], api_name="grid", **MODEL)
        stop_btn.click(stop, None, status, cancels=[gen_event, submit_event, real_event, reroute_event],
                       api_name="stop",
                       queue=False)
        stop_btn2.click(stop, None, compare_status, cancels=[compare_event], api_visibility="private", queue=False)

        models_btn.click(load_models, [verifier_id, drafter_id], models_status, api_name="load_models", **MODEL)

        class_out = [intro, round_slider, class_tokens, round_table, caption, class_state]
        walk_btn.click(load_walkthrough, walk, class_out, api_name="walkthrough", **MODEL)
        last_btn.click(use_last_run, trace_state, class_out, api_visibility="private")
        round_slider.change(show_round, [class_state, round_slider], [class_tokens, round_table, caption],
                            api_visibility="private", show_progress="hidden")
        prev_btn.click(lambda t, r: step_round(t, r, -1), [class_state, round_slider], round_slider,
                       api_visibility="private", show_progress="hidden")
        next_btn.click(lambda t, r: step_round(t, r, +1), [class_state, round_slider], round_slider,
                       api_visibility="private", show_progress="hidden")
        demo.load(_ready_status, None, status, api_visibility="private")
    return demo


def _ready_status() -> str:
    """Status line on page load: says whether the model is ready or still loading."""
    if session.is_loaded():
        return f"Ready · {session.model_summary()}. Pick an example or type a prompt, then press **Run**."
    return "Ready. The model loads on first use (a few seconds). Pick an example or type a prompt, then press **Run**."


def launch_kwargs() -> dict[str, Any]:
    """Theme and CSS go to launch() in Gradio 6; tests that launch the demo themselves use this too."""
    return {"theme": THEME, "css": render.CSS, "footer_links": ["api", "gradio", "settings"]}
