"""Why a run was fast or slow, and how far the confidences can be trusted: the Generate tab's lower half.

Reads what core computed and only draws it: the break-even view and its sentence come from
`core.analysis.breakeven.explain_run`; the confidence histograms, reliability diagram and the live predicted
tier shares come from `core.analysis.reliability` (teacher-forced passes over the last full run's text, so a
threshold move is predicted with no model call before the real re-route lands).
"""

from __future__ import annotations

import html
import logging
from typing import Any

from app.views.breakeven_chart import breakeven_figure
from app.views.numbers import Headline, drafts_sentence, headline, plural, speed_text, trust_sentence
from app.views.reliability_chart import (
    confidence_histogram_figure,
    predicted_tier_shares,
    prediction_text,
    reliability_figure,
)
from core.analysis import reliability
from core.analysis.breakeven import RunPoint, break_even_alpha, explain_run
from core.analysis.metrics import summarize
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
    """The panel's outputs for a finished trace: its thresholds as its policy applied them (a tier off in this
    mode draws no line), its signals as configured."""
    explanation = explain_run(trace)  # priced by the run's own profile, recorded per call
    policy = trace.policy
    return {
        "why": why_html(trace, explanation.point, explanation.profile_label),
        "breakeven_plot": breakeven_figure(explanation.point, profile_label=explanation.profile_label,
                                           run_speedup=summarize(trace)["modelled_speedup"]),
        "conf_plot": confidence_histogram_figure(data, policy.tau_accept, policy.tau_slim, config.draft_signal,
                                                 config.slim_signal),
        "reliability_plot": reliability_figure(data, config.draft_signal, config.slim_signal),
        "prediction": prediction_markdown(data, policy.tau_accept, policy.tau_slim, config.draft_signal,
                                          config.slim_signal),
        "reliability": data,
    }


def why_html(trace: Trace, point: RunPoint | None = None, profile_label: str | None = None) -> str:
    """The why sentence as the page shows it, under its bold lead (the run's break-even point read from its calls)."""
    if point is None or profile_label is None:
        explanation = explain_run(trace)
        point, profile_label = explanation.point, explanation.profile_label
    sentence = html.escape(why_sentence(trace, point, profile_label), quote=False)
    return f'<p class="viasd-why"><strong>Why this speed:</strong> {sentence}</p>'


def why_sentence(trace: Trace, point: RunPoint | None, profile_label: str = "") -> str:
    """What made the run fast or slow, in the cards' numbers (app.views.numbers), then the break-even margin.

    The speed-up is the card's (the whole run, prefill included); the break-even model's acceptance α counts
    only drafts a verifier judged, so it is named as that, beside the card's share of drafts rejected."""
    m = summarize(trace)
    h = headline(trace, m)
    if trace.policy.name == "plain decoding" or not trace.rounds:
        return "Plain decoding: one full pass per token, the baseline every speed-up is measured against."
    parts = [f"Modelled speed-up {speed_text(h.speedup)} over plain.", drafts_sentence(h)]
    if point is not None:
        parts.append(_margin(point, h, profile_label))
    direct = round(float(m.get("share_direct-accepted", 0.0)) * h.tokens)
    on_trust = h.trust.direct if h.trust is not None else 0
    if direct and h.kept:
        parts.append(f"Tier 1 kept {direct} of the {h.kept} kept drafts with no verifier at the time"
                     + (f" ({on_trust} of them on trust, audited by the full model later)." if on_trust else "."))
    parts.append(audit_sentence(trace, h))
    return " ".join(p for p in parts if p)


def _margin(point: RunPoint, h: Headline, profile_label: str) -> str:
    """Cost per draft and per check, α (judged drafts that passed) and how far α may fall before plain wins."""
    judged = point.kept + point.refused
    text = (f"Drafting cost {point.cost:.2f} of a full pass per drafted token and checking {point.verify:.2f} "
            f"passes per round ({point.gamma:.1f} drafted per round, γ {point.configured_gamma}"
            + (f"; {profile_label}" if profile_label else "") + ").")
    if judged < h.drafted:
        text += (f" Of the drafts a verifier judged or kept, {point.alpha:.0%} passed (α, the break-even chart's "
                 f"x-axis); the other {plural(h.drafted - judged, 'rejected draft')} came after a refusal and "
                 "were never judged.")
    needed = break_even_alpha(point.cost, point.gamma, point.verify)
    if point.speedup >= 1.0:
        if needed is None or needed < 0.005:
            return text + " With drafts this cheap and this little checking, a drafting round cannot fall behind plain."
        return text + f" Drafting rounds stay ahead of plain while α stays above {needed:.0%}."
    if needed is None:
        return text + " At this drafting cost no acceptance breaks even: a cheaper drafter is needed."
    return text + f" Drafting rounds fall behind plain here; breaking even needs α of at least {needed:.0%}."


def audit_sentence(trace: Trace, h: Headline | None = None) -> str:
    """What the audit did in this run (copy_evidence "audit"), in the card's numbers; "" for a run whose policy
    keeps nothing on trust."""
    h = h or headline(trace)
    if h.trust is None:
        return ""
    text = trust_sentence(h)
    identical = getattr(trace.fidelity, "identical", None)
    if identical is not None:
        return text + (" The output is identical to the full model's own (measured)." if identical else
                       " The output differs from the full model's own (measured; see the fidelity card).")
    if trace.equals_full_greedy:  # recorded by the engine: greedy, exact, every copy audited
        return text + " So the output equals the full model's."
    return text


def prediction_markdown(data: ReliabilityData | None, tau_accept: float, tau_slim: float,
                        draft_signal: str = "prob", slim_signal: str = "prob") -> str:
    """One line: predicted tier shares and error rate for these thresholds (no model call)."""
    try:
        tau_accept, tau_slim = float(tau_accept), float(tau_slim)
    except (TypeError, ValueError):
        return "Predicted tier shares: type thresholds between 0 and 1."
    return prediction_text(predicted_tier_shares(data, tau_accept, tau_slim, draft_signal, slim_signal))


