"""Round-by-round replay of a trace: the text as it stood, the round's table, and its caption (app.views.captions).

Everything here is read from a finished trace; no model runs (only a tokenizer, or the trace's own
tokens, to spell out draft tokens). Rounds are numbered from 1 on screen (`render.shown_round`); the
trace and its CSVs keep the engine's index from 0.

Audited copies: tokens an audit cut (`Trace.rolled_back`) are shown struck through in the round that
cut them, in its text and its table; before that round they are on screen as they were then.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import replace

from app.views import captions, words
from app.views.render import REPLACED, shown_round, token_style
from core.trace import TokenRecord, Trace
from core.vocabulary import Audit, Reason

EMPTY = "Load a walkthrough or use your last run to start the replay."
Decode = Callable[[int], "str | None"]


def trace_decoder(trace: Trace) -> Decode:
    """Token id -> text from the trace's own tokens (kept and cut), for a trace replayed without its tokenizer:
    a draft token that never reached the text reads "a guess" (None)."""
    known = {t.token_id: t.text for t in [*trace.rolled_back, *trace.tokens]}
    return known.get


def recorded_cuts(trace: Trace) -> dict[int, list[TokenRecord]]:
    """Round index -> the tokens that round's audit cut, grouped from what the engine recorded (each cut
    token records the round that cut it: `TokenRecord.audit_round`)."""
    cuts: dict[int, list[TokenRecord]] = {}
    for t in trace.rolled_back:
        if t.audit in (Audit.REFUSED, Audit.CUT) and t.audit_round is not None:
            cuts.setdefault(t.audit_round, []).append(t)
    return cuts


def _cut_in(t: TokenRecord) -> int | None:
    """The round whose audit cut `t` (recorded), or None when no audit cut it."""
    return t.audit_round if t.audit in (Audit.REFUSED, Audit.CUT) else None


def _as_of(t: TokenRecord, index: int) -> TokenRecord:
    """`t` with the audit state it had after round `index` (a later round's audit still pending)."""
    state = t.audit_at(index)
    return t if state == t.audit else replace(t, audit=state)


def visible_trace(trace: Trace, index: int, show_future: bool) -> Trace:
    """The trace as a class should see it at round `index`: later rounds hidden unless asked for.

    The text is the output as it stood after that round: copies a later audit cut are still there, and
    the tokens this round's audit cut stand struck through before its correction (they are the
    returned trace's `rolled_back`). Until the last round the run is shown as running, and each copy kept
    on trust shows the audit state it had then (recorded: `TokenRecord.audit_at`).
    """
    if show_future:
        return trace
    standing = [_as_of(t, index) for t in trace.tokens if t.round <= index]
    standing += [_as_of(t, index) for t in trace.rolled_back if t.round <= index and (t.audit_round or 0) > index]
    correction = [t for t in standing if t.round == index and t.reason == Reason.AUDIT_REFUSED]
    rest = sorted((t for t in standing if t.round != index or t.reason != Reason.AUDIT_REFUSED),
                  key=lambda t: t.position)
    struck = recorded_cuts(trace).get(index, [])
    last = index >= len(trace.rounds) - 1
    return replace(trace, tokens=rest + struck + correction, rolled_back=struck,
                   stop_reason=trace.stop_reason if last else "running")


def _output_cell(t: TokenRecord, cut: bool = False) -> str:
    return (f'<span class="tok{" cut" if cut else ""}" style="{token_style(t.outcome, t.tier)}">'
            f'{html.escape(t.text)}</span>')


def _row(number: str, draft: str, t: TokenRecord | None, cut_in: int | None = None, dropped: str = "") -> str:
    if t is None:
        return (f"<tr><td>{number}</td><td class='tokcell'>{draft}</td><td colspan='5'><i>{html.escape(dropped)}</i>"
                "</td></tr>")
    label = html.escape(words.name("outcome", t.outcome))
    cut = "" if cut_in is None else f" data-cut-in='{shown_round(cut_in)}'"
    if cut_in is not None:
        label += f" · <b>cut by the audit in round {shown_round(cut_in)}</b>"
    return (f"<tr data-reason='{html.escape(t.reason)}'{cut}><td>{number}</td><td class='tokcell'>{draft}</td>"
            f"<td>{captions.conf(t.draft_confidence)}</td><td>{captions.conf(t.slim_confidence)}</td>"
            f"<td>{html.escape(captions.WHY.get(t.reason, t.reason))}</td><td>{label}</td>"
            f"<td class='tokcell'>{_output_cell(t, cut_in is not None)}</td></tr>")


def answer_tokens_after(trace: Trace, index: int) -> int:
    """Tokens in the answer once round `index` is done: all written up to it, less those audits up to it cut
    (at the last round: `len(trace.tokens)`, the cards' count)."""
    cut = {id(t) for r, tokens in recorded_cuts(trace).items() if r <= index for t in tokens}
    return sum(1 for t in [*trace.tokens, *trace.rolled_back] if t.round <= index and id(t) not in cut)


def round_view(trace: Trace | None, index: int, decode: Decode) -> tuple[str, str]:
    """(HTML table of the round's draft and decisions, HTML caption) for round `index` (from 0)."""
    if trace is None or not trace.rounds:
        return "", f"<div class='viasd-caption'><p>{EMPTY}</p></div>"
    index = max(0, min(int(index), len(trace.rounds) - 1))
    rnd, mode, policy = trace.rounds[index], trace.policy.method, trace.policy
    cuts = recorded_cuts(trace)

    def told(t: TokenRecord, draft_text: str | None, **more: object) -> str:
        """Its sentence, from its records: kept on trust or not, a copy or not, whether the slim verifier was asked
        (a recorded slim confidence under a tier 2 that is on) or skipped by the gate."""
        return captions.explain_token(t, draft_text, mode, audited=t.audit != Audit.NONE, copy=trace.is_copy(t),
                                      slim_on=policy.tier2_on and t.slim_confidence is not None,
                                      gated=policy.tier2_on and t.inputs is not None and not t.inputs.slim_open,
                                      **more)

    # the round's tokens as it wrote them: those still in the output, those an audit cut, its correction last
    toks = sorted([t for t in [*trace.tokens, *trace.rolled_back] if t.round == index],
                  key=lambda t: (t.reason == Reason.AUDIT_REFUSED, t.position))
    drafted = [t for t in toks if t.reason != Reason.AUDIT_REFUSED]
    refusal = next((t for t in toks if t.reason == Reason.AUDIT_REFUSED), None)
    texts = [decode(i) for i in rnd.draft_tokens]
    refused_copy = (cuts.get(index) or [None])[0]
    rows, items = [], []
    culprit = (refusal, refused_copy.text) if refusal is not None and refused_copy is not None else (None, None)
    for j, draft_text in enumerate(texts):
        t = drafted[j] if j < len(drafted) else None
        shown = html.escape(captions.quoted(draft_text))
        if t is None:  # never reached the text: name the word whose rejection dropped it
            rows.append(_row(str(j + 1), shown, None, dropped=captions.dropped_note(*culprit)))
            continue
        rows.append(_row(str(j + 1), shown, t, _cut_in(t)))
        items.append((t, told(t, draft_text)))
        if t.outcome in REPLACED:
            culprit = (t, draft_text)
    earlier = [t for t in cuts.get(index, []) if t.round < index]
    if earlier:
        struck = "".join(_output_cell(t, cut=True) for t in earlier)
        rows.append(f"<tr data-cut-in='{shown_round(index)}'><td>✂</td><td colspan='5'>cut by this round's audit "
                    f"(kept on trust in round {', '.join(sorted({str(shown_round(t.round)) for t in earlier}))})"
                    f"</td><td class='tokcell'>{struck}</td></tr>")
    extra = drafted[len(rnd.draft_tokens):] + ([refusal] if refusal is not None else [])
    for t in extra:  # bonus token, the single token of a round with no draft, an audit's correction
        refused = refused_copy if t.reason == Reason.AUDIT_REFUSED else None
        rows.append(_row("+", "(none)", t, _cut_in(t)))
        items.append((t, told(t, refused.text if refused else None, cut=len(cuts.get(index, [])))))
    table = ("<div class='viasd-round' id='viasd-round'><table><tr><th>#</th><th>draft word</th>"
             "<th>drafter sure</th><th>slim sure</th><th>why this tier</th><th>decision</th><th>output</th></tr>"
             + "".join(rows) + "</table></div>")
    caption = captions.caption(trace, index, items, [t or "" for t in texts], len(cuts.get(index, [])),
                               answer_tokens_after(trace, index))
    return table, caption
