"""Round-by-round replay of a trace with captions a teacher can read aloud.

Everything here is read from a finished trace. Why a tier decided a token is the `reason` the
engine recorded (`core.tiers.Reason`) and what its rule said is the recorded `verdict`; nothing is
re-derived from confidences and thresholds (a free verdict never reads "the drafter was only 0.95
sure"). Rounds are numbered from 1 on screen (`render.shown_round`); the trace and its CSVs keep
the engine's index from 0. No model runs here (only the tokenizer, to spell out draft tokens).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import replace

from app.render import OUTCOMES, REPLACED, shown_round, token_style
from core.metrics import modelled_speedup
from core.tiers import Reason
from core.trace import TokenRecord, Trace

WHY: dict[str, str] = {
    Reason.DRAFT_CONFIDENT: "drafter confident",
    Reason.SLIM_CONFIDENT: "slim verifier confident",
    Reason.NOT_CONFIDENT: "neither confident",
    Reason.FREE_VERDICT: "full model already ran",
    Reason.COPY_NEEDS_EVIDENCE: "a copy needs a model's word",
    Reason.STOP_TOKEN: "end of answer: always checked",
    Reason.BONUS: "free extra token",
    Reason.NO_DRAFT: "nothing drafted",
}
"""Short label of each recorded reason, for the round table's "why" column."""

VERDICTS: dict[str, str] = {
    "argmax": "it is the verifier's own top choice",
    "argmax differs": "the verifier's own top choice is a different token",
    "accepted w.p. min(1, q/p)": "kept by rejection sampling (kept with probability min(1, q/p))",
    "resampled from max(0, q - p)": "rejected by rejection sampling and redrawn from what the drafter under-weighted",
}
"""Plain words for the verification rules' recorded verdicts; any other verdict is quoted as recorded."""

EMPTY = "Load a walkthrough or use your last run to start the replay."


def _conf(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _q(text: str) -> str:
    return "“" + text.replace("\n", "⏎") + "”"


def _verdict(t: TokenRecord) -> str:
    return VERDICTS.get(t.verdict, f"the rule said “{t.verdict}”")


def _checked(t: TokenRecord, who: str, draft_text: str | None) -> str:
    """What a verifier did with the draft token, from the recorded outcome and verdict."""
    if t.outcome in REPLACED:
        return (f"{who} rejected {_q(draft_text or '?')} and wrote {_q(t.text)} instead ({_verdict(t)}). "
                "The round ends here.")
    return f"{who} kept {_q(t.text)} ({_verdict(t)})."


def explain_token(t: TokenRecord, draft_text: str | None, mode: str = "via") -> str:
    """One plain-language sentence on how one token was decided, read from its recorded reason and verdict."""
    c, s = _conf(t.draft_confidence), _conf(t.slim_confidence)
    reason = t.reason
    if reason == Reason.DRAFT_CONFIDENT:
        return f"The drafter was {c} sure — confident enough to skip checking — so {_q(t.text)} was kept as drafted."
    if reason == Reason.SLIM_CONFIDENT:
        return (f"The drafter ({c}) was not confident enough to skip checking; the slim verifier was {s} sure, "
                f"confident enough to decide: " + _checked(t, "it", draft_text))
    if reason == Reason.FREE_VERDICT:
        return ("The full model had already run in this round (for an earlier word), so its verdict here is free "
                "and exact; tiers 1 and 2 were not asked: " + _checked(t, "it", draft_text))
    if reason == Reason.COPY_NEEDS_EVIDENCE:
        return (f"Prompt lookup copied {_q(t.text)} from earlier text and the copy looked reliable ({c}), but a copy "
                "is a statistic of the text, not a model's belief, so it is never kept without a model agreeing: "
                + _checked(t, "the full model", draft_text))
    if reason == Reason.STOP_TOKEN:
        return ("The drafter proposed the end of the answer, which is never kept unchecked, and the slim verifier "
                "was not confident enough: " + _checked(t, "the full model", draft_text))
    if reason == Reason.BONUS:
        return (f"Every draft word was kept and the full model's pass had already looked one step further, so its "
                f"next word {_q(t.text)} comes for free.")
    if reason == Reason.NO_DRAFT:
        source = ("Plain decoding has no drafter" if mode == "plain"
                  else "The drafter proposed nothing this round")
        return f"{source}, so the full model ran once and wrote {_q(t.text)} itself."
    if reason == Reason.NOT_CONFIDENT:
        lead = ("Classic speculative decoding sends every draft word to the full model" if mode == "sd" else
                f"Neither the drafter ({c}) nor the slim verifier ({s}) was confident enough")
        return lead + ": " + _checked(t, "the full model", draft_text)
    return f"{_q(t.text)} was decided by tier {t.tier} ({t.outcome}; reason “{reason}”, verdict “{t.verdict}”)."


def visible_trace(trace: Trace, index: int, show_future: bool) -> Trace:
    """The trace as a class should see it at round `index`: later rounds hidden unless asked for."""
    if show_future:
        return trace
    return replace(trace, tokens=[t for t in trace.tokens if t.round <= index])


def _output_cell(t: TokenRecord) -> str:
    return f'<span class="tok" style="{token_style(t.outcome, t.tier)}">{html.escape(t.text)}</span>'


def _row(number: str, draft: str, t: TokenRecord | None) -> str:
    if t is None:
        return (f"<tr><td>{number}</td><td class='tokcell'>{draft}</td><td colspan='5'><i>dropped: an earlier "
                "word in this round was rejected (or the text ended)</i></td></tr>")
    label = OUTCOMES.get(t.outcome, ("", t.outcome, ""))[1]
    return (f"<tr data-reason='{html.escape(t.reason)}'><td>{number}</td><td class='tokcell'>{draft}</td>"
            f"<td>{_conf(t.draft_confidence)}</td><td>{_conf(t.slim_confidence)}</td>"
            f"<td>{html.escape(WHY.get(t.reason, t.reason))}</td><td>{html.escape(label)}</td>"
            f"<td class='tokcell'>{_output_cell(t)}</td></tr>")


def round_view(trace: Trace | None, index: int, decode: Callable[[int], str]) -> tuple[str, str]:
    """(HTML table of the round's draft and decisions, HTML caption) for round `index` (from 0)."""
    if trace is None or not trace.rounds:
        return "", f"<div class='viasd-caption'><p>{EMPTY}</p></div>"
    index = max(0, min(int(index), len(trace.rounds) - 1))
    rnd, mode = trace.rounds[index], str(trace.config.get("mode", "via"))
    toks = [t for t in trace.tokens if t.round == index]
    rows, items = [], []
    for j, draft_id in enumerate(rnd.draft_tokens):
        draft_text = decode(draft_id)
        t = toks[j] if j < len(toks) else None
        rows.append(_row(str(j + 1), html.escape(repr(draft_text)), t))
        if t is not None:
            items.append((t, explain_token(t, draft_text, mode)))
    for t in toks[len(rnd.draft_tokens):]:  # bonus token, or the single token of a round with no draft
        rows.append(_row("+", "(none)", t))
        items.append((t, explain_token(t, None, mode)))
    table = ("<div class='viasd-round' id='viasd-round'><table><tr><th>#</th><th>draft word</th>"
             "<th>drafter conf.</th><th>slim conf.</th><th>why this tier</th><th>decision</th><th>output</th></tr>"
             + "".join(rows) + "</table></div>")
    return table, _caption(trace, index, items, decode)


def _caption(trace: Trace, index: int, items: list[tuple[TokenRecord, str]], decode: Callable[[int], str]) -> str:
    rnd = trace.rounds[index]
    by_role: dict[str, float] = {}
    for c in rnd.calls:
        by_role[c.role] = by_role.get(c.role, 0.0) + c.cost_units
    cost_round = sum(by_role.values())
    cost_so_far = sum(c.cost_units for r in trace.rounds[: index + 1] for c in r.calls)
    tokens_so_far = sum(r.emitted for r in trace.rounds[: index + 1])
    ran = ", ".join(f"{role} {units:.2f}" for role, units in by_role.items()) or "nothing"
    drafted = (f"The drafter proposed {len(rnd.draft_tokens)} word(s): "
               + " ".join(_q(decode(i)) for i in rnd.draft_tokens) + "." if rnd.draft_tokens
               else "No draft this round.")
    opening = f"<p><b>Round {shown_round(index)} of {len(trace.rounds)}.</b> {html.escape(drafted)}</p>"
    points = "".join(f"<li data-reason='{html.escape(t.reason)}' data-outcome='{html.escape(t.outcome)}'>"
                     f"{html.escape(sentence)}</li>" for t, sentence in items)
    prefill_extra = max(0.0, trace.plain_cost_units - len(trace.tokens)) if trace.plain_cost_units else 0.0
    plain_so_far = tokens_so_far + prefill_extra  # plain pays the same prompt prefill, then one pass per token
    speed = modelled_speedup(plain_so_far, cost_so_far)
    shown = "unbounded (no verifier ran)" if speed == float("inf") else f"{speed:.2f}×"
    closing = (f"This round kept {rnd.accepted} draft word(s) and wrote {rnd.emitted}. It cost {cost_round:.2f} "
               f"full-model passes ({ran}). So far: {tokens_so_far} tokens for {cost_so_far:.2f} passes, where plain "
               f"decoding needs {plain_so_far:.2f} — a modelled speed-up of {shown}.")
    return (f"<div class='viasd-caption' data-round='{shown_round(index)}'>{opening}<ol>{points}</ol>"
            f"<p>{html.escape(closing)}</p></div>")


def walkthrough_heading(walkthrough: dict) -> str:
    """Markdown shown above the replay: the walkthrough's title and prompt (short, to keep the replay high)."""
    return f"**{walkthrough.get('title', 'Walkthrough')}** · Prompt: {walkthrough.get('prompt', '')}"


def walkthrough_notes(walkthrough: dict, trace: Trace | None = None) -> str:
    """Markdown below the replay: intro, the models it ran on, and the talking points."""
    parts = [walkthrough.get("intro", "")]
    if trace is not None:
        parts.append(f"*Ran on {trace.models.get('verifier', '?')} · drafter: {trace.models.get('drafter', '?')} · "
                     f"slim verifier: {trace.models.get('slim_route', '?')}.*")
    points = walkthrough.get("talking_points") or []
    if points:
        parts.append("**Talking points**\n\n" + "\n".join(f"- {p}" for p in points))
    return "\n\n".join(p for p in parts if p)
