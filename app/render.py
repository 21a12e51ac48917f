"""Trace -> HTML: tokens coloured by the tier that resolved them, and the legend.

Colour alone is not enough (colour-blind viewers, washed-out projectors), so every token carries two
cues: an Okabe-Ito colour per outcome and an underline style per tier (dotted = tier 1, dashed =
tier 2, solid = tier 3, double = the draft token was replaced). Hovering a token shows its round,
tier, outcome and the three confidences; `data-*` attributes make the same facts machine-readable.
"""

from __future__ import annotations

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


def shown_round(index: int) -> int:
    """Rounds are numbered from 1 wherever a person reads them; traces and CSVs keep the engine's index from 0."""
    return index + 1


def is_special(t: TokenRecord) -> bool:
    """A control token (end of turn, end of text): not words, so never shown or counted as text."""
    return bool(SPECIAL_TOKEN.match(t.text))


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
    verdict = getattr(t, "verdict", "")  # recorded by the engine's verifier rule (absent in older traces)
    return (f"token {t.position} {t.text!r} · round {shown_round(t.round)}\n"
            f"{TIER_NAMES.get(t.tier, t.tier)} · {t.outcome}: {meaning}\n"
            f"why this tier: {t.reason}" + (f" · verdict: {verdict}" if verdict else "") + "\n"
            f"confidence: drafter {_fmt(t.draft_confidence)} · slim {_fmt(t.slim_confidence)} · "
            f"full {_fmt(t.full_confidence)}")


def token_span(t: TokenRecord, extra_class: str = "") -> str:
    """One token as a styled span with a tooltip and data attributes; a control token as an end marker."""
    special = is_special(t)
    classes = " ".join(c for c in ("tok", "replaced" if t.outcome in REPLACED else "", "special" if special else "",
                                   extra_class) if c)
    text = "■ end" if special else html.escape(t.text) or "&#8203;"
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
