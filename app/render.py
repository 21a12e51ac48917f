"""Trace -> HTML: tokens coloured by the tier that resolved them, a legend, metric cards and diffs.

Colour alone is not enough (colour-blind viewers, washed-out projectors), so every token carries two
cues: an Okabe-Ito colour per outcome and an underline style per tier (dotted = tier 1, dashed =
tier 2, solid = tier 3, double = the draft token was replaced). Hovering a token shows its round,
tier, outcome and the three confidences; `data-*` attributes make the same facts machine-readable.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter

from core.tiers import OUTCOME_TIER, Outcome, Tier
from core.trace import TokenRecord, Trace

TOKENS_ELEM_ID = "viasd-tokens"

# outcome -> (colour, label, plain-language meaning). Okabe-Ito palette, colour-blind safe.
OUTCOMES: dict[Outcome, tuple[str, str, str]] = {
    Outcome.DIRECT_ACCEPT: ("#009E73", "direct accept (tier 1)", "drafter was confident enough; no verifier ran"),
    Outcome.SLIM_ACCEPT: ("#56B4E9", "slim accept (tier 2)", "the slim verifier agreed with the draft"),
    Outcome.SLIM_REGENERATE: ("#0072B2", "slim regenerate (tier 2)", "the slim verifier replaced the draft token"),
    Outcome.FULL_ACCEPT: ("#E69F00", "full accept (tier 3)", "the full model agreed with the draft"),
    Outcome.FULL_CORRECT: ("#D55E00", "full correct (tier 3)", "the full model replaced the draft token"),
    Outcome.FULL_BONUS: ("#CC79A7", "full bonus (tier 3)", "a free extra token from the full model's pass"),
    Outcome.PLAIN: ("#999999", "plain (full model)", "ordinary decoding: one full-model pass per token"),
}
TIER_UNDERLINE = {Tier.DRAFT: "dotted", Tier.SLIM: "dashed", Tier.FULL: "solid"}
REPLACED = {Outcome.SLIM_REGENERATE, Outcome.FULL_CORRECT}
TIER_NAMES = {Tier.DRAFT: "tier 1: direct accept", Tier.SLIM: "tier 2: slim verifier",
              Tier.FULL: "tier 3: full verifier"}
SPECIAL_TOKEN = re.compile(r"^\s*(<\|[^|<>]{1,40}\|>|</?s>|<eos>|<end_of_turn>|<\|endoftext\|>)\s*$")
"""Text of a special (control) token such as <|im_end|>: drawn as a small end marker, never as words."""


def is_special(t: TokenRecord) -> bool:
    """A control token (end of turn, end of text): not words, so never shown or counted as text."""
    return bool(SPECIAL_TOKEN.match(t.text))

CSS = """
.viasd-tokens {font-size: 1.3rem; line-height: 2.3; white-space: pre-wrap; word-break: break-word;
  background: #ffffff; color: #111111; padding: 0.8rem 1rem; border-radius: 8px; border: 1px solid #d0d0d0;
  min-height: 4rem; font-family: ui-sans-serif, system-ui, sans-serif;}
.viasd-tokens .tok {border-bottom-width: 3px; padding: 0 1px; border-radius: 2px; cursor: help;}
.viasd-tokens .tok.replaced {border-bottom-width: 5px;}
.viasd-tokens .tok.current {outline: 2px solid #111111; outline-offset: 1px;}
.viasd-tokens .tok.faded {opacity: 0.35;}
.viasd-tokens .placeholder {color: #666666; font-style: italic;}
.viasd-tokens mark.diff {background: #F0E442; color: #111111; font-weight: 700;
  border-bottom: 3px solid #111111;}
.viasd-legend {display: flex; flex-wrap: wrap; gap: 0.4rem 1rem; font-size: 1rem; color: #111111;
  background: #fafafa; padding: 0.5rem 0.8rem; border-radius: 8px; border: 1px solid #e0e0e0;}
.viasd-legend .item {display: inline-flex; align-items: center; gap: 0.35rem;}
.viasd-legend .tok {border-bottom-width: 3px; padding: 0 4px; font-weight: 600;}
.viasd-legend .tok.replaced {border-bottom-width: 5px;}
.viasd-legend .count {color: #444444; font-size: 0.9rem;}
.viasd-cards {display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: 0.8rem;}
.viasd-card {border-radius: 8px; padding: 0.6rem 0.9rem; border: 2px solid #cccccc; background: #ffffff;
  color: #111111; font-size: 1.05rem;}
.viasd-card h4 {margin: 0 0 0.3rem 0; font-size: 1.05rem;}
.viasd-card.modelled {border-color: #0072B2;}
.viasd-card.measured {border-color: #D55E00;}
.viasd-card.fidelity {border-color: #009E73;}
.viasd-card .big {font-size: 1.7rem; font-weight: 700;}
.viasd-card table {width: 100%; border-collapse: collapse;}
.viasd-card td {padding: 0.1rem 0.2rem;}
.viasd-card td.v {text-align: right; font-variant-numeric: tabular-nums; font-weight: 600;}
.viasd-card .note {font-size: 0.9rem; color: #444444;}
.viasd-round table {border-collapse: collapse; font-size: 1.1rem; color: #111111; background: #ffffff;}
.viasd-round th, .viasd-round td {border: 1px solid #cccccc; padding: 0.3rem 0.6rem; text-align: left;}
.viasd-round td.tokcell {font-family: ui-monospace, monospace; white-space: pre;}
#viasd-status {font-size: 1.05rem;}
"""


def token_style(outcome: str, tier: int) -> str:
    colour = OUTCOMES.get(outcome, OUTCOMES[Outcome.PLAIN])[0]
    line = ("double" if outcome in REPLACED else "none" if outcome == Outcome.PLAIN
            else TIER_UNDERLINE.get(tier, "solid"))
    return f"background-color: {colour}40; border-bottom-style: {line}; border-bottom-color: {colour};"


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def token_title(t: TokenRecord) -> str:
    """Tooltip text of one token: where it came from and what each model thought of it."""
    meaning = OUTCOMES.get(t.outcome, ("", t.outcome, ""))[2]
    return (f"token {t.position} {t.text!r} · round {t.round}\n"
            f"{TIER_NAMES.get(t.tier, t.tier)} · {t.outcome}: {meaning}\n"
            f"confidence: drafter {_fmt(t.draft_confidence)} · slim {_fmt(t.slim_confidence)} · "
            f"full {_fmt(t.full_confidence)}")


def token_span(t: TokenRecord, extra_class: str = "") -> str:
    """One token as a styled span with a tooltip and data attributes; a control token as an end marker."""
    special = is_special(t)
    classes = " ".join(c for c in ("tok", "replaced" if t.outcome in REPLACED else "", "special" if special else "",
                                   extra_class) if c)
    text = "⏹ end" if special else html.escape(t.text) or "&#8203;"
    return (f'<span class="{classes}" style="{token_style(t.outcome, t.tier)}" data-pos="{t.position}" '
            f'data-round="{t.round}" data-tier="{t.tier}" data-outcome="{t.outcome}" data-reason="{t.reason}" '
            f'title="{html.escape(token_title(t), quote=True)}">{text}</span>')


def tokens_html(trace: Trace | None, current_round: int | None = None, placeholder: str = "",
                elem_id: str = TOKENS_ELEM_ID, pending: Trace | None = None) -> str:
    """The output text, one span per token. With `current_round`, later rounds fade and that round is outlined.

    `pending` is the previous run's trace during a re-route: its tokens past the new text stay on
    screen, greyed and struck through, until the new routing reaches them (no collapse, no flicker).
    """
    if trace is None or not trace.tokens:
        text = html.escape(placeholder or "The generated text appears here, each token coloured by its tier.")
        return f'<div id="{elem_id}" class="viasd-tokens" data-tokens="0"><span class="placeholder">{text}</span></div>'
    spans = []
    for t in trace.tokens:
        extra = ""
        if current_round is not None:
            extra = "current" if t.round == current_round else "faded" if t.round > current_round else ""
        spans.append(token_span(t, extra))
    stale = pending.tokens[len(trace.tokens):] if pending is not None and trace.stop_reason == "running" else []
    if stale:
        spans.append('<span class="pending" title="from the previous settings; being re-routed">'
                     + html.escape("".join(t.text for t in stale if not is_special(t))) + "</span>")
    return (f'<div id="{elem_id}" class="viasd-tokens" data-tokens="{len(trace.tokens)}" '
            f'data-pending="{len(stale)}" data-stop="{trace.stop_reason}">{"".join(spans)}</div>')


def legend_html(trace: Trace | None = None) -> str:
    """Legend of every outcome (colour + underline), with counts when a trace is given."""
    counts = Counter(t.outcome for t in trace.tokens) if trace is not None else Counter()
    items = []
    for outcome, (_, label, meaning) in OUTCOMES.items():
        cls = "tok replaced" if outcome in REPLACED else "tok"
        count = f' <span class="count">×{counts[outcome]}</span>' if trace is not None else ""
        items.append(f'<span class="item" title="{html.escape(meaning)}"><span class="{cls}" '
                     f'style="{token_style(outcome, OUTCOME_TIER[outcome])}">{html.escape(label)}</span>{count}</span>')
    key = ('<span class="item">underline: ··· tier 1 · - - tier 2 · ── tier 3 · ══ draft token replaced</span>')
    return f'<div class="viasd-legend" id="viasd-legend">{"".join(items)}{key}</div>'


def _row(name: str, value: str) -> str:
    return f'<tr><td>{html.escape(name)}</td><td class="v">{value}</td></tr>'


def metrics_html(metrics: dict, trace: Trace | None = None) -> str:
    """Three cards that keep the kinds of numbers apart: modelled accelerator, measured CPU, fidelity."""
    if not metrics:
        return '<div class="viasd-cards" id="viasd-metrics"><div class="viasd-card">No run yet.</div></div>'
    m = metrics
    modelled = (
        '<div class="viasd-card modelled"><h4>Modelled accelerator (cost model)</h4>'
        f'<div class="big" data-metric="modelled_speedup">{m["modelled_speedup"]:.2f}× vs plain</div><table>'
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
        fid = (
            '<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>'
            f'<div class="big" data-metric="full_agreement">{m["full_agreement"]:.1%} agreement</div><table>'
            + _row("identical to full model's output", "yes" if m["identical_to_full"] else "no")
            + _row("common prefix", f'{m["common_prefix"]} tokens')
            + _row("full-model NLL", f'{m["full_nll"]:.3f} nats/token')
            + '</table><div class="note">Agreement: share of tokens that are the full model\'s own top choice '
              'given the text so far.</div></div>')
    else:
        fid = ('<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>'
               '<div class="note">measured when the run ends…</div></div>')
    shares = "".join(
        _row(OUTCOMES[o][1], f'{m.get(f"share_{o}", 0.0):.0%}') for o in OUTCOMES if m.get(f"share_{o}", 0.0) > 0)
    routing = ('<div class="viasd-card"><h4>Who decided the tokens</h4><table>' + shares
               + _row("rounds", str(m["rounds"])) + _row("stop reason", html.escape(str(m["stop_reason"])))
               + '</table></div>')
    return f'<div class="viasd-cards" id="viasd-metrics">{modelled}{measured}{fid}{routing}</div>'


def diff_html(trace: Trace, reference: Trace, elem_id: str) -> str:
    """Output text with the tokens that differ from `reference` (the full model's plain output) marked."""
    ours, ref = trace.token_ids, reference.token_ids
    matcher = difflib.SequenceMatcher(a=ref, b=ours, autojunk=False)
    differs = [False] * len(ours)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            for j in range(j1, j2):
                differs[j] = True
    parts = []
    for t, d in zip(trace.tokens, differs, strict=True):
        text = html.escape(t.text)
        parts.append(f'<mark class="diff" title="differs from the full model\'s output">{text}</mark>' if d else text)
    n_diff = sum(differs)
    first = next((i for i, d in enumerate(differs) if d), None)
    summary = ("identical to the full model's output" if n_diff == 0 and len(ours) == len(ref)
               else f"{n_diff} of {len(ours)} tokens differ; first difference at token {first}")
    return (f'<div id="{elem_id}" class="viasd-tokens" data-differs="{n_diff}">{"".join(parts)}</div>'
            f'<div class="note" style="margin-top:0.3rem">{html.escape(summary)}</div>')
