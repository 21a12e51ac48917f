"""Why a run was fast or slow, and how far the confidences can be trusted: the Generate tab's lower half.

Reads what core computed and only draws it: the break-even view and its sentence come from
`core.analysis.breakeven.explain_run`; the confidence histograms, reliability diagram and the live predicted
tier shares come from `core.analysis.reliability` (teacher-forced passes over the last full run's text, so a
threshold move is predicted with no model call before the real re-route lands).
"""

from __future__ import annotations

import logging
from typing import Any

from app.views.breakeven_chart import breakeven_figure
from app.views.reliability_chart import (
    confidence_histogram_figure,
    predicted_tier_shares,
    prediction_text,
    reliability_figure,
)
from app.views.render import audit_counts, audits_copies
from core.analysis import reliability
from core.analysis.breakeven import explain_run
from core.analysis.reliability import ReliabilityData
from core.config import DecodeConfig
from core.models.loading import ModelBundle
from core.trace import Trace

log = logging.getLogger("viasd.app")


def measure_reliability(bundle: ModelBundle, trace: Trace, config: DecodeConfig) -> ReliabilityData | None:
    """Teacher-forced signals on this run's text (three passes); None when it cannot be measured."""
    if not trace.tokens:
        return None
    try:
        return reliability.measure(bundle, trace.prompt, config, trace.token_ids)
    except Exception:  # a view, not a decision: never let it break the run's result
        log.exception("reliability measurement failed")
        return None


def insight_updates(bundle: ModelBundle, trace: Trace, config: DecodeConfig, data: ReliabilityData | None
                    ) -> dict[str, Any]:
    """The panel's outputs for a finished trace."""
    explanation = explain_run(trace)  # priced by the run's own profile, recorded per call
    why = f"**Why this speed:** {explanation.sentence}" + audit_sentence(trace)
    return {
        "why": why,
        "breakeven_plot": breakeven_figure(explanation.point, profile_label=explanation.profile_label),
        "conf_plot": confidence_histogram_figure(data, config.tau_accept, config.tau_slim, config.draft_signal,
                                                 config.slim_signal),
        "reliability_plot": reliability_figure(data, config.draft_signal, config.slim_signal),
        "prediction": prediction_markdown(data, config.tau_accept, config.tau_slim, config.draft_signal,
                                          config.slim_signal),
        "reliability": data,
    }


def audit_sentence(trace: Trace) -> str:
    """What the audit did in this run (copy_evidence "audit"), read from the trace; "" for other runs."""
    if not audits_copies(trace):
        return ""
    trusted, cut, refusals = audit_counts(trace)
    if trusted or cut:
        text = (f" {trusted + cut} cop{'ies were' if trusted + cut != 1 else 'y was'} kept on trust and audited by "
                "full-model passes that had to process them anyway, many copies per pass")
        text += (f"; the audit refused {refusals} and cut {cut} token{'s' * (cut != 1)} (drafted for nothing)"
                 if cut else "; it refused none")
    else:
        text = " No copy passed τ_accept, so the full model checked every copy before it was kept (nothing to audit)"
    identical = getattr(trace.fidelity, "identical", None)
    if identical is not None:
        return text + (". The output is identical to the full model's own (measured)." if identical else
                       ". The output differs from the full model's own (measured; see the fidelity card).")
    if trace.equals_full_greedy:  # recorded by the engine: greedy, exact, every copy audited
        return text + ", so the output equals the full model's."
    return text + "."


def prediction_markdown(data: ReliabilityData | None, tau_accept: float, tau_slim: float,
                        draft_signal: str = "prob", slim_signal: str = "prob") -> str:
    """One line: predicted tier shares and error rate for these thresholds (no model call)."""
    try:
        tau_accept, tau_slim = float(tau_accept), float(tau_slim)
    except (TypeError, ValueError):
        return "Predicted tier shares: type thresholds between 0 and 1."
    return prediction_text(predicted_tier_shares(data, tau_accept, tau_slim, draft_signal, slim_signal))


