"""Trace metrics -> HTML: the headline beside the sliders and the cards below the text.

The kinds of numbers stay apart (modelled accelerator, measured CPU wall clock, fidelity), and
the fidelity card leads with "words differing" when core.analysis.metrics provides it (issue 7), since a
word-level difference is what a reader notices; token agreement follows.
"""

from __future__ import annotations

import html

from app.views.render import OUTCOMES, audit_counts, audits_copies
from core.analysis.fidelity import numerics_split
from core.trace import Trace

PARTIAL_STOPS = {"cancelled", "time-budget"}
"""Stop reasons that mean the run did not finish: its metrics describe a partial result."""


def speed_text(speedup: float) -> str:
    """A speed-up for people: 'unbounded' when no verifier ran at all (zero modelled cost)."""
    return "∞ (no verifier ran)" if speedup == float("inf") else f"{speedup:.2f}×"


def is_partial(trace: Trace | None) -> bool:
    return trace is not None and (bool(getattr(trace, "partial", False)) or trace.stop_reason in PARTIAL_STOPS)


def _stat(kind: str, label: str, value: str, metric: str) -> str:
    return (f'<div class="stat {kind}"><div class="label">{html.escape(label)}</div>'
            f'<div class="value" data-metric="{metric}">{value}</div></div>')


def _fidelity_stat(m: dict) -> str:
    if "words_differing" in m:
        return _stat("fidelity", "words differing from full model", f'{m["words_differing"]:.0%}', "words_differing")
    if "full_agreement" in m:
        return _stat("fidelity", "agreement with full model", f'{m["full_agreement"]:.0%}', "full_agreement")
    return _stat("fidelity", "agreement with full model", "…", "full_agreement")


def headline_html(metrics: dict, trace: Trace | None = None, progress: str = "") -> str:
    """Three numbers beside the sliders: modelled speed-up, rejection rate, agreement (or words differing)."""
    if not metrics:
        body = (_stat("modelled", "speed-up (modelled)", "—", "modelled_speedup")
                + _stat("", "rejection rate", "—", "rejection_rate") + _fidelity_stat({}))
    else:
        body = (_stat("modelled", "speed-up (modelled)", speed_text(metrics["modelled_speedup"]), "modelled_speedup")
                + _stat("", "rejection rate", f'{metrics["rejection_rate"]:.0%}', "rejection_rate")
                + _fidelity_stat(metrics))
    if is_partial(trace):
        body += (f'<div class="partial" data-partial="1">⏸ Partial result: stopped after {len(trace.tokens)} '
                 f'tokens ({html.escape(trace.stop_reason)}); numbers cover those tokens only.</div>')
    elif progress:
        body += f'<div class="partial">{html.escape(progress)}</div>'
    return f'<div class="viasd-headline" id="viasd-headline">{body}</div>'

def _row(name: str, value: str) -> str:
    return f'<tr><td>{html.escape(name)}</td><td class="v">{value}</td></tr>'


def metrics_html(metrics: dict, trace: Trace | None = None) -> str:
    """Three cards that keep the kinds of numbers apart: modelled accelerator, measured CPU, fidelity."""
    if not metrics:
        return '<div class="viasd-cards" id="viasd-metrics"><div class="viasd-card">No run yet.</div></div>'
    m = metrics
    modelled = (
        '<div class="viasd-card modelled"><h4>Modelled accelerator (cost model)</h4>'
        f'<div class="big" data-metric="modelled_speedup">{speed_text(m["modelled_speedup"])} vs plain</div><table>'
        + _row("cost (full-model passes)", f'{m["modelled_cost"]:.1f} for {m["tokens"]} tokens')
        + _row("full-model calls / token", f'{m["full_calls_per_token"]:.2f}')
        + _row("rejection rate", f'<span data-metric="rejection_rate">{m["rejection_rate"]:.1%}</span>')
        + _row("mean accepted length", f'{m["mean_accepted_length"]:.2f}')
        + _row("tokens / round", f'{m["tokens_per_round"]:.2f}')
        + '</table><div class="note">What these routing decisions would cost on a GPU, where a pass costs '
          'about the weights it reads. Not a measurement.</div></div>')
    if m.get("timing_complete"):
        speed = f'<div class="big">{m["tokens_per_s"]:.1f} tokens/s</div>'
        note = "Every forward pass ran for real on this CPU."
    else:
        speed = '<div class="big">— tokens/s</div>'
        note = ("Replayed from the prediction memo, so the wall clock is NOT meaningful here. "
                "Press “Re-run for real timing” for an honest measurement.")
    measured = (
        '<div class="viasd-card measured"><h4>Measured wall clock (this CPU)</h4>' + speed + '<table>'
        + _row("wall time", f'{m["wall_s"]:.2f} s')
        + _row("drafter / slim / full time",
               f'{m["drafter_wall_s"]:.2f} / {m["slim_wall_s"]:.2f} / {m["full_wall_s"]:.2f} s')
        + _row("timing complete", "yes" if m.get("timing_complete") else "no (replayed)")
        + f'</table><div class="note">{note}</div></div>')
    if "full_agreement" in m:
        lead = (f'<div class="big">{m["words_differing"]:.0%} of words differ</div>' if "words_differing" in m
                else f'<div class="big">{m["full_agreement"]:.1%} agreement</div>')
        fid = (
            '<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>' + lead + '<table>'
            + (_row("token agreement", f'{m["full_agreement"]:.1%}') if "words_differing" in m else "")
            + _row("identical to full model's output", "yes" if m["identical_to_full"] else "no")
            + _row("common prefix", f'{m["common_prefix"]} tokens')
            + _row("full-model NLL", f'{m["full_nll"]:.3f} nats/token')
            + (_row("words differing, split", html.escape(split)) if (split := numerics_split(trace)) else "")
            + '</table>' + _spans_html(trace) + _expectations_html(trace)
            + '<div class="note">Agreement: share of tokens that are the full model\'s own top choice '
              'given the text so far.</div></div>')
    else:
        pending = ("not measured: the run was stopped early" if is_partial(trace) else "measured when the run ends…")
        fid = ('<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>'
               f'<div class="note">{pending}</div></div>')
    shares = "".join(
        _row(OUTCOMES[o][1], f'{m.get(f"share_{o}", 0.0):.0%}') for o in OUTCOMES if m.get(f"share_{o}", 0.0) > 0)
    routing = ('<div class="viasd-card"><h4>Who decided the tokens</h4><table>' + shares + _audit_rows(trace)
               + _row("rounds", str(m["rounds"])) + _row("stop reason", html.escape(str(m["stop_reason"])))
               + '</table></div>')
    partial = ' data-partial="1"' if is_partial(trace) else ""
    return f'<div class="viasd-cards" id="viasd-metrics"{partial}>{modelled}{measured}{fid}{routing}</div>'



def audit_summary(trace: Trace | None) -> dict[str, int] | None:
    """Copies kept on trust (still in the output), tokens the audit cut and the rounds that cut them;
    None when the run did not audit copies (copy_evidence other than "audit", or no prompt lookup)."""
    if trace is None or not audits_copies(trace):
        return None
    trusted, cut, refusals = audit_counts(trace)
    return {"trusted": trusted, "cut": cut, "rounds": refusals}


def _audit_rows(trace: Trace | None) -> str:
    audit = audit_summary(trace)
    if audit is None:
        return ""
    cut = (f'<span data-metric="rolled_back">{audit["cut"]}</span> token{"s" * (audit["cut"] != 1)} '
           f'({audit["rounds"]} refusal{"s" * (audit["rounds"] != 1)})')
    return _row("copies kept on trust, then audited", str(audit["trusted"])) + _row("cut by the audit", cut)


def _spans_html(trace: Trace | None, limit: int = 6) -> str:
    """Where the words differ from the full model's own output: this run's words against the full model's."""
    spans = getattr(getattr(trace, "fidelity", None), "differing_spans", None) or []
    if not spans:
        return ""
    items = "".join(
        f'<li><span class="viasd-ins">{html.escape(" ".join(s.output_words)) or "—"}</span> instead of '
        f'<span class="viasd-del">{html.escape(" ".join(s.reference_words)) or "—"}</span></li>'
        for s in spans[:limit])
    more = f"<li>… and {len(spans) - limit} more</li>" if len(spans) > limit else ""
    return f'<div class="note">Differing words (this run instead of the full model\'s):</div><ul>{items}{more}</ul>'


def _expectations_html(trace: Trace | None) -> str:
    """The task's checkable expectations: met here, and met by the full model's own output."""
    checks = getattr(getattr(trace, "fidelity", None), "expectations", None) or []
    if not checks:
        return ""
    rows = "".join(_row(f'{html.escape(c.kind)} “{html.escape(c.term)}”',
                        ("✓ met" if c.met else "✗ missed") + ("" if c.full_met is None else
                                                            f' (full model: {"✓" if c.full_met else "✗"})'))
                   for c in checks)
    return f'<div class="note">Task expectations:</div><table>{rows}</table>'
