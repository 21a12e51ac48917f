"""The Generate tab's two quieter parts: the decoding settings accordion and the lower half (cards, charts, files).

Kept apart from app.tabs.generate so the cockpit's layout and handlers read on one screen; these only build
components (every value from the `Settings` the screen opens with, or from the opening's recorded run).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.settings import Settings
from app.views import cards, charts
from app.views.breakeven_chart import breakeven_figure
from app.views.insight import prediction_markdown
from app.views.reliability_chart import confidence_histogram_figure, reliability_figure
from app.widgets import lenient
from core.config import COPY_EVIDENCE
from core.limits import MAX_NEW_TOKENS
from core.models.layer_routes import PRESETS

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


def decoding_settings(start: Settings) -> dict[str, gr.components.Component]:
    """The accordion of every other decoding setting; returns its widgets by Settings field name."""
    with gr.Accordion("Decoding settings", open=False, elem_id="viasd-decoding"):
        mode = gr.Radio(MODE_CHOICES, value=start.mode, label="Mode")
        drafter = gr.Radio(DRAFTER_CHOICES, value=start.drafter, label="Drafter")
        copy_evidence = gr.Dropdown(COPY_EVIDENCE_CHOICES, value=start.copy_evidence,
                                    label="Copies (prompt lookup): what a copy needs before it is kept",
                                    elem_id="viasd-copy-evidence")
        with gr.Row():
            draft_stop_below = lenient(gr.Slider(
                0.0, 1.0, value=start.draft_stop_below, step=0.05, elem_id="viasd-stop-below",
                label="Stop a draft below", info="end a draft or copy at its first token under this "
                                                  "confidence (0 = never)"))
            audit_span = lenient(gr.Slider(
                1, MAX_NEW_TOKENS, value=start.audit_span, step=1, elem_id="viasd-audit-span",
                label="Audit span", info="most copies kept on trust before the full model audits them"))
        with gr.Row():
            draft_route = gr.Dropdown(list(PRESETS), value=start.draft_route, label="Draft route",
                                      allow_custom_value=True,
                                      info="layers the self-drafter runs; or type layers:0-3,8")
            slim_route = gr.Dropdown(list(PRESETS), value=start.slim_route, label="Slim route",
                                     allow_custom_value=True, info="layers the slim verifier runs")
        max_tokens = lenient(gr.Slider(1, MAX_NEW_TOKENS, value=start.max_new_tokens, step=1,
                                       label="Max new tokens", elem_id="viasd-max-tokens"))
        sampling = gr.Checkbox(start.sampling, label="Sample (off = greedy)")
        with gr.Row():
            temperature = gr.Slider(0.05, 2.0, value=start.temperature, step=0.05, label="Temperature")
            top_p = gr.Slider(0.05, 1.0, value=start.top_p, step=0.05, label="Top-p")
        seed = gr.Number(start.seed, precision=0, label="Seed (sampling)")
    return {"mode": mode, "drafter": drafter, "draft_route": draft_route, "slim_route": slim_route,
            "max_new_tokens": max_tokens, "sampling": sampling, "temperature": temperature, "top_p": top_p,
            "seed": seed, "copy_evidence": copy_evidence, "draft_stop_below": draft_stop_below,
            "audit_span": audit_span}


def lower_half(shown: dict[str, Any], start: Settings) -> dict[str, gr.components.Component]:
    """Cards, charts, downloads and raw metrics under the cockpit, showing `shown` (the opening's run) if given."""
    metrics = gr.HTML(shown.get("metrics", cards.metrics_html({})), elem_id="viasd-metrics-box")
    prediction = gr.Markdown(shown.get("prediction", prediction_markdown(None, start.tau_accept, start.tau_slim)),
                             elem_id="viasd-prediction")
    with gr.Row():
        conf_plot = gr.Plot(shown.get("conf_plot", confidence_histogram_figure(None, start.tau_accept,
                                                                               start.tau_slim)),
                            label="Confidence distribution (camera icon: save as PNG)", elem_id="viasd-conf-plot")
        timeline_plot = gr.Plot(shown.get("timeline_plot", charts.timeline_figure(None)), label="Per-round timeline",
                                elem_id="viasd-timeline-plot")
    with gr.Row(elem_id="viasd-more-charts"):
        breakeven_plot = gr.Plot(shown.get("breakeven_plot", breakeven_figure(None)),
                                 label="Break-even: when does drafting pay?", elem_id="viasd-breakeven-plot")
        reliability_plot = gr.Plot(shown.get("reliability_plot", reliability_figure(None)),
                                   label="Reliability of each confidence", elem_id="viasd-reliability-plot")
    with gr.Accordion("Per-token confidences of this run (strip chart)", open=False):
        strip_plot = gr.Plot(shown.get("strip_plot", charts.confidence_figure(None, start.tau_accept, start.tau_slim)),
                             label="Confidences per token", elem_id="viasd-strip-plot")
    gr.Markdown("*Confidence distribution:* teacher-forced on the last full run's text, each model's confidence "
                "split by whether its choice agrees with the full model; what lies right of a τ line is what "
                "that tier takes, red is what it would get wrong. *Timeline:* modelled cost of each model per round, "
                "in full-model passes; the black line is measured wall time (dotted = replayed). *Break-even:* "
                "expected speed-up over plain for the drafter's acceptance and cost; the star is this run. The "
                "camera icon on each chart saves it as a PNG.")
    with gr.Row():
        files = gr.File(shown.get("files"), label="Download this trace: tokens CSV, rounds CSV, full JSON",
                        file_count="multiple", interactive=False, elem_id="viasd-files")
        with gr.Accordion("All metrics (raw)", open=False):
            metrics_json = gr.JSON(shown.get("metrics_json"), label="summarize(trace)")
    return {"metrics": metrics, "metrics_json": metrics_json, "conf_plot": conf_plot, "timeline_plot": timeline_plot,
            "files": files, "prediction": prediction, "breakeven_plot": breakeven_plot,
            "reliability_plot": reliability_plot, "strip_plot": strip_plot}
