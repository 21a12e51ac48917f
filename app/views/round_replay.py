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

from app.views import captions, spelling, words
from app.views.render import REPLACED, outcome_class, shown_round
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


def refused_word(trace: Trace, index: int) -> str | None:
    """The copy round `index`'s audit refused, as the word a class reads: the refused token and the cut tokens that
    continue its word ("defin" + "ately"); None when that round's audit refused nothing."""
    cut = recorded_cuts(trace).get(index, [])
    if not cut:
        return None
    word = cut[0].text
    for t in cut[1:]:
        if not t.text or t.text[0].isspace() or not t.text[0].isalnum():
            break
        word += t.text
    return word


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
    return (f'<span class="tok {outcome_class(t.outcome)}{" replaced" if t.outcome in REPLACED else ""}'
            f'{" cut" if cut else ""}">{html.escape(spelling.shown(t.text))}</span>')


def _numbers(first: int, count: int) -> str:
    """Draft positions as the table numbers them: '3', or '3–10' for a group."""
    return str(first) if count == 1 else f"{first}–{first + count - 1}"


def _draft_cell(texts: list[str | None], struck: bool = False) -> str:
    shown = html.escape(spelling.marked("".join(t if t is not None else "?" for t in texts)))
    return f"<td class='tokcell{' rejected' if struck else ''}'>{shown}</td>"


def _group_row(first: int | None, group: list[tuple[TokenRecord, str | None]], tiers: captions.Tiers,
               cut_in: int | None) -> str:
    """One row for a group of tokens decided alike (captions.groups), or for one token; `first`: the group's first
    draft position (from 1), None for a token that had no draft (a bonus, a round with no draft, a correction)."""
    tokens = [t for t, _ in group]
    t = tokens[0]
    drafted = [text for _, text in group]
    label = html.escape(words.name("outcome", t.outcome).split(" (tier")[0])  # the tier is in the why cell
    cut = "" if cut_in is None else f" data-cut-in='{shown_round(cut_in)}'"
    if cut_in is not None:
        label += f" · <b>cut by the audit in round {shown_round(cut_in)}</b>"
    number = _numbers(first, len(group)) if first is not None else "+"
    draft = _draft_cell(drafted, struck=t.outcome in REPLACED) if first is not None else "<td>—</td>"
    output = "".join(_output_cell(x, cut_in is not None) for x in tokens)
    return (f"<tr data-reason='{html.escape(t.reason)}' data-tokens='{len(tokens)}'{cut}><td>{number}</td>{draft}"
            f"<td>{captions.sure_range([x.draft_confidence for x in tokens])}</td>"
            f"<td>{captions.sure_range([x.slim_confidence for x in tokens])}</td>"
            f"<td class='why'>tier {t.tier}: {html.escape(captions.why_label(t, tiers))}</td>"
            f"<td class='decision'>{label}</td>"
            f"<td class='tokcell'>{output}</td></tr>")


def _dropped_row(first: int, texts: list[str | None], rejected: TokenRecord | None, rejected_text: str | None
                 ) -> str:
    """The draft tokens that never reached the text, in one row, tied to the word whose rejection dropped them."""
    if rejected is None:
        why = "dropped: the answer ended before them"
    elif rejected.reason == Reason.AUDIT_REFUSED:
        why = f"dropped after the audit refused {spelling.quoted(rejected_text)}"
    else:
        why = f"dropped after {spelling.quoted(rejected_text)} was rejected"
    return (f"<tr class='dropped' data-dropped='{len(texts)}'><td>{_numbers(first, len(texts))}</td>"
            f"{_draft_cell(texts, struck=True)}<td colspan='5'><i>{html.escape(why)}</i></td></tr>")


def answer_tokens_after(trace: Trace, index: int) -> int:
    """Tokens in the answer once round `index` is done: all written up to it, less those audits up to it cut
    (at the last round: `len(trace.tokens)`, the cards' count)."""
    cut = {id(t) for r, tokens in recorded_cuts(trace).items() if r <= index for t in tokens}
    return sum(1 for t in [*trace.tokens, *trace.rolled_back] if t.round <= index and id(t) not in cut)


def draft_texts(trace: Trace, index: int, decode: Decode | None = None) -> list[str | None]:
    """The round's draft as text: as the engine recorded it, else spelled by `decode` (a tokenizer, or the
    trace's own tokens: `trace_decoder`) for a trace recorded before drafts were spelled."""
    rnd = trace.rounds[index]
    if len(rnd.draft_texts) == rnd.drafted:
        return list(rnd.draft_texts)
    decode = decode or trace_decoder(trace)
    return [decode(i) for i in rnd.draft_tokens]


def round_view(trace: Trace | None, index: int, decode: Decode | None = None) -> tuple[str, str]:
    """(HTML table of the round's draft and decisions, HTML caption) for round `index` (from 0)."""
    if trace is None or not trace.rounds:
        return "", f"<div class='viasd-caption'><p>{EMPTY}</p></div>"
    index = max(0, min(int(index), len(trace.rounds) - 1))
    tiers, cuts = captions.tiers_in(trace, index), recorded_cuts(trace)
    # the round's tokens as it wrote them: those still in the output, those an audit cut, its correction last
    toks = sorted([t for t in [*trace.tokens, *trace.rolled_back] if t.round == index],
                  key=lambda t: (t.reason == Reason.AUDIT_REFUSED, t.position))
    drafted = [t for t in toks if t.reason != Reason.AUDIT_REFUSED]
    refusal = next((t for t in toks if t.reason == Reason.AUDIT_REFUSED), None)
    texts = draft_texts(trace, index, decode)
    refused = refused_word(trace, index)
    items: list[tuple[TokenRecord, str | None]] = list(zip(drafted, texts, strict=False))
    items += [(t, None) for t in drafted[len(texts):]]  # a bonus, or the single token of a round with no draft
    if refusal is not None:
        items.append((refusal, refused))
    rows, position, judged = [], 1, min(len(drafted), len(texts))  # tokens 1..judged answered a draft position
    earlier = [t for t in cuts.get(index, []) if t.round < index]
    if earlier:  # first what this round's audit cut from earlier rounds, then what it wrote
        struck = "".join(_output_cell(t, cut=True) for t in earlier)
        kept_in = ", ".join(sorted({str(shown_round(t.round)) for t in earlier}))
        rows.append(f"<tr data-cut-in='{shown_round(index)}'><td>✂</td><td colspan='5'>cut by this round's audit "
                    f"(kept on trust in round {kept_in})</td><td class='tokcell'>{struck}</td></tr>")
    for group in captions.groups(items):
        rows.append(_group_row(position if position <= judged else None, group, tiers, _cut_in(group[0][0])))
        position += len(group)
    if len(drafted) < len(texts):  # never reached the text: name the word whose rejection dropped them
        last = drafted[-1] if drafted else None
        rejected = refusal if refusal is not None else last if last is not None and last.outcome in REPLACED else None
        rejected_text = refused if refusal is not None else texts[len(drafted) - 1] if rejected is not None else None
        rows.append(_dropped_row(len(drafted) + 1, texts[len(drafted):], rejected, rejected_text))
    table = ("<div class='viasd-round' id='viasd-round'><table><tr><th>#</th><th>draft</th>"
             "<th>drafter</th><th>slim</th><th>which tier, why</th><th>decision</th><th>output</th></tr>"
             + "".join(rows) + "</table></div>")
    caption = captions.caption(trace, index, items, [t or "" for t in texts], len(cuts.get(index, [])),
                               answer_tokens_after(trace, index))
    return table, caption
