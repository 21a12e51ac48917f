"""Trace -> HTML: tokens coloured by the tier that resolved them, and the legend.

Colour alone is not enough (colour-blind viewers, washed-out projectors), so every token carries two
cues: an Okabe-Ito colour per outcome and an underline style per tier (dotted = tier 1, dashed =
tier 2, solid = tier 3, double = the draft token was replaced), drawn by one CSS class per outcome
(`TOKEN_CSS`, sent once with the page) rather than a style on every span. Hovering a token shows, in
plain words (app.views.words), what decided it and the three confidences, the engine's codes last;
`data-*` attributes make the same facts machine-readable.

Kept on trust (`copy_evidence="audit"`): a token tier 1 or 2 kept before the full model checked it (a
prompt-lookup copy, or a model's greedy draft) is on the page before that check. It carries a line above
it and, until a full pass has audited it, a dashed box (its audit is pending); its tooltip says which,
and whether it was a copy or the drafter's token. Both come from what the engine recorded per token
(`TokenRecord.audit`, a `core.vocabulary.Audit`, and `Trace.is_copy`), never from the settings. A refused
token is gone from the output; what replaced it is a full-model correction whose reason is
`audit-refused`. Cut tokens are drawn struck through where a view shows them (the Classroom, in the round
that cut them). The legend explains the marks whenever the run's policy can keep tokens on trust.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Collection

from app.views import words
from core.trace import TokenRecord, Trace
from core.vocabulary import OUTCOME_TIER, Audit, Outcome, Reason, Tier

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
SPECIAL_TOKEN = re.compile(r"^\s*(<\|[^|<>]{1,40}\|>|</?s>|<eos>|<end_of_turn>|<\|endoftext\|>)\s*$")
"""Text of a special (control) token such as <|im_end|>: drawn as a small end marker, never as words."""
TRUST = {
    "audited": "the full model's next pass audited it and it stands",
    "awaiting": "the full model's next pass will audit it, and cut the text back here if it refuses",
}
SHOWN_TRUST = {Audit.AUDITED: "audited", Audit.TRUSTED: "awaiting"}
"""A recorded audit state -> its TRUST entry (a token kept on trust still in the output)."""
CUT = ("cut by the audit: the full model refused this token or an earlier one kept on trust, so the text was cut "
       "back and the full model's own token written instead")


def trust_note(t: TokenRecord, state: str, is_copy: bool) -> str:
    """What keeping `t` on trust meant, in words: which draft it was, who had checked it, where its audit stands."""
    what = "a prompt-lookup copy" if is_copy else "the drafter's own token"
    who = "only the slim verifier checked it" if t.tier == Tier.SLIM else "no model checked it"
    return f"kept on trust ({what}; {who} before the full model); {TRUST[state]}"


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


def outcome_class(outcome: str) -> str:
    """The CSS class that draws an outcome (`TOKEN_CSS`): the text sends a class name, not a style per token."""
    return f"o-{outcome if outcome in OUTCOMES else Outcome.PLAIN}"


TOKEN_CSS = "\n".join(f".{outcome_class(o)} {{{token_style(o, OUTCOME_TIER[o])}}}" for o in OUTCOMES)
"""One rule per outcome (colour and underline), loaded once with the page (app.ui.launch_kwargs)."""


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def token_title(t: TokenRecord, trust: str = "", cut: bool = False, is_copy: bool = False) -> str:
    """Tooltip text of one token in plain words (app.views.words); the engine's codes close it, under "details"."""
    verdict = getattr(t, "verdict", "")  # recorded by the engine's verifier rule (absent in older traces)
    notes = ([CUT] if cut else []) + ([trust_note(t, trust, is_copy)] if trust in TRUST else [])
    details = f"details: outcome {t.outcome} · reason {t.reason}" + (f" · verdict {verdict}" if verdict else "")
    return (f"{t.text!r} · token {t.position + 1} · round {shown_round(t.round)}\n"
            f"{words.name('outcome', t.outcome)}: {words.meaning('reason', t.reason)}\n"
            + "".join(f"{note}\n" for note in notes)
            + f"confidence: drafter {_fmt(t.draft_confidence)} · slim {_fmt(t.slim_confidence)} · "
            f"full {_fmt(t.full_confidence)}\n{details}")


def token_span(t: TokenRecord, extra_class: str = "", trust: str = "", cut: bool = False,
               is_copy: bool = False) -> str:
    """One token as a styled span with a tooltip and data attributes; a control token as an end marker.
    `trust` is "audited" or "awaiting" for a token kept on trust (`trust_of`), `is_copy` whether it was a
    prompt-lookup copy (`Trace.is_copy`); `cut`: an audit cut it."""
    special = is_special(t)
    classes = " ".join(c for c in ("tok", outcome_class(t.outcome), "replaced" if t.outcome in REPLACED else "",
                                   "special" if special else "",
                                   "trusted" if trust else "", "awaiting" if trust == "awaiting" else "",
                                   "cut" if cut else "", extra_class) if c)
    text = "■ end" if special else html.escape(t.text) or "&#8203;"
    marks = (f' data-trust="{trust}" data-copy="{int(is_copy)}"' if trust else "") + (' data-cut="1"' if cut else "")
    return (f'<span class="{classes}" data-pos="{t.position}" '
            f'data-round="{t.round}" data-tier="{t.tier}" data-outcome="{t.outcome}" data-reason="{t.reason}"{marks} '
            f'title="{html.escape(token_title(t, trust, cut, is_copy), quote=True)}">{text}</span>')


def trust_of(t: TokenRecord) -> str:
    """"audited" / "awaiting" for a token kept on trust (its recorded audit state), else ""."""
    return SHOWN_TRUST.get(t.audit, "")


def audit_counts(trace: Trace) -> tuple[int, int, int]:
    """(tokens kept on trust still in the output, tokens the audit cut, its refusals), from the records."""
    refusals = sum(1 for t in trace.tokens if t.reason == Reason.AUDIT_REFUSED)
    return sum(1 for t in trace.tokens if trust_of(t)), len(trace.rolled_back), refusals


def tokens_html(trace: Trace | None, current_round: int | None = None, placeholder: str = "",
                elem_id: str = TOKENS_ELEM_ID, pending: Trace | None = None,
                cut: Collection[TokenRecord] = ()) -> str:
    """The output text, one span per token. With `current_round`, later rounds fade and that round is outlined.

    `pending` is the previous run's trace during a re-route: its tokens past the new text stay on
    screen, greyed and struck through, until the new routing reaches them (no collapse, no flicker).
    The page is rebuilt from the trace each time, so a stream whose text shrinks (an audit cut it
    back) leaves nothing stale. `cut`: tokens among the trace's that an audit cut (struck through).
    """
    if trace is None or not trace.tokens:
        text = html.escape(placeholder or "The generated text appears here, each token coloured by its tier.")
        return f'<div id="{elem_id}" class="viasd-tokens" data-tokens="0"><span class="placeholder">{text}</span></div>'
    spans, cut_ids = [], {id(t) for t in cut}
    for t in trace.tokens:
        extra = ""
        if current_round is not None:
            extra = "current" if t.round == current_round else "faded" if t.round > current_round else ""
        struck = id(t) in cut_ids
        spans.append(token_span(t, extra, "" if struck else trust_of(t), struck, trace.is_copy(t)))
    stale = pending.tokens[len(trace.tokens):] if pending is not None and trace.stop_reason == "running" else []
    if stale:
        spans.append('<span class="pending" title="from the previous settings; being re-routed">'
                     + html.escape("".join(t.text for t in stale if not is_special(t))) + "</span>")
    return (f'<div id="{elem_id}" class="viasd-tokens" data-tokens="{len(trace.tokens)}" '
            f'data-pending="{len(stale)}" data-stop="{trace.stop_reason}">{"".join(spans)}</div>')


def legend_html(trace: Trace | None = None, elem_id: str = "viasd-legend") -> str:
    """Legend of every outcome (colour + underline), with counts when a trace is given (`elem_id`: one per page)."""
    if trace is None:
        return legend_from(None, None, None, "copy or draft", elem_id)
    counts = Counter(t.outcome for t in trace.tokens)
    standing, cut, _ = audit_counts(trace)
    return legend_from({o: str(counts[o]) for o in OUTCOMES}, str(standing), str(cut), trusted_kind(trace), elem_id)


def legend_from(counts: dict[Outcome, str] | None, standing: str | None, cut: str | None, trusted: str | None,
                elem_id: str = "viasd-legend") -> str:
    """The legend with each outcome's count as shown (None: no counts); the audit's key when the run keeps
    `trusted` (its kind of draft, `trusted_kind`) on trust, with the tokens standing and cut as shown."""
    items = []
    for outcome, (_, label, meaning) in OUTCOMES.items():
        cls = "tok replaced" if outcome in REPLACED else "tok"
        count = f' <span class="count">×{counts[outcome]}</span>' if counts is not None else ""
        items.append(f'<span class="item" title="{html.escape(meaning)}"><span class="{cls} {outcome_class(outcome)}">'
                     f'{html.escape(label)}</span>{count}</span>')
    key = ('<span class="item">underline: ··· tier 1 · - - tier 2 · ── tier 3 · boxed with ══: replaced a '
           'rejected draft</span>')
    if trusted is not None:
        def count(n: str | None) -> str:
            return f' <span class="count">×{n}</span>' if n is not None else ""

        key += (f'<span class="item" title="{html.escape(TRUST["audited"])}"><span class="tok trusted">'
                f'line above: {trusted} kept on trust, then audited</span>{count(standing)}</span>'
                f'<span class="item" title="{html.escape(TRUST["awaiting"])}"><span class="tok trusted awaiting">'
                'dashed box: audit pending</span></span>'
                f'<span class="item" title="{html.escape(CUT)}"><span class="tok cut">struck through: cut by the '
                f'audit</span>{count(cut)}</span>')
    return f'<div class="viasd-legend" id="{elem_id}">{"".join(items)}{key}</div>'


def keeps_on_trust(trace: Trace) -> bool:
    """Whether this run kept tokens on trust for the full model to audit: its stamped policy could, or its records
    show a token that was (never the settings)."""
    return trace.policy.audits or any(t.audit != Audit.NONE for t in [*trace.tokens, *trace.rolled_back])


def trusted_kind(trace: Trace) -> str | None:
    """What this run keeps on trust, in the legend's words ("copy", "draft", "copy or draft"; None: nothing)."""
    if not keeps_on_trust(trace):
        return None
    policy = trace.policy
    if policy.copies_on_trust and policy.model_drafts_on_trust:
        return "copy or draft"
    return "copy" if policy.copies_on_trust or not policy.model_drafts_on_trust else "draft"
