"""Round-by-round replay of a trace with captions a teacher can read aloud.

Everything here is derived from a finished trace: which tokens the drafter proposed, the tier each
went to, what that tier decided and the modelled cost so far. No model runs (only the tokenizer,
to spell out draft tokens).
"""

from __future__ import annotations

import html
from collections.abc import Callable

from app.render import OUTCOMES, token_style
from core import DecodeConfig
from core.tiers import Outcome
from core.trace import TokenRecord, Trace


def _conf(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _q(text: str) -> str:
    return "“" + text.replace("\n", "⏎") + "”"


def thresholds_of(trace: Trace) -> tuple[float, float]:
    """The thresholds the engine actually applied in this trace (classic SD switches tiers 1-2 off)."""
    return DecodeConfig(**trace.config).effective_thresholds()


def explain_token(t: TokenRecord, draft_text: str | None, tau_accept: float, tau_slim: float) -> str:
    """One plain-language sentence on how one token was decided."""
    c, s = _conf(t.draft_confidence), _conf(t.slim_confidence)
    if t.outcome == Outcome.PLAIN:
        return f"Plain decoding: the full model ran once and wrote {_q(t.text)}."
    if t.outcome == Outcome.FULL_BONUS:
        return (f"Every draft token survived and the full model had already looked one step further, "
                f"so its next word {_q(t.text)} comes for free.")
    if t.outcome == Outcome.DIRECT_ACCEPT:
        return (f"The drafter was {c} sure (at least τ_accept = {tau_accept:.2f}), "
                f"so {_q(t.text)} was kept with no check.")
    why_not_1 = (f"The drafter was only {c} sure (below τ_accept = {tau_accept:.2f})" if tau_accept < 1.0
                 else "Tier 1 is switched off (classic SD)")
    if t.outcome == Outcome.SLIM_ACCEPT:
        return f"{why_not_1}, so the slim verifier looked: it was {s} sure and agreed with {_q(t.text)}."
    if t.outcome == Outcome.SLIM_REGENERATE:
        return (f"{why_not_1}, so the slim verifier looked: it was {s} sure and disagreed, writing {_q(t.text)} "
                f"instead of {_q(draft_text or '?')}. The round ends here.")
    if t.slim_confidence is None and tau_slim < 1.0:
        why_not_2 = "the full model had already run this round, so its verdict is free"
    elif tau_slim >= 1.0:
        why_not_2 = "tier 2 is switched off"
    else:
        why_not_2 = f"the slim verifier was only {s} sure (below τ_slim = {tau_slim:.2f})"
    if t.outcome == Outcome.FULL_ACCEPT:
        return f"{why_not_1} and {why_not_2}; the full model checked and agreed with {_q(t.text)}."
    return (f"{why_not_1} and {why_not_2}; the full model checked, disagreed and wrote {_q(t.text)} instead of "
            f"{_q(draft_text or '?')}. The round ends here.")


def round_view(trace: Trace | None, index: int, decode: Callable[[int], str]) -> tuple[str, str]:
    """(HTML table of the round's draft and decisions, markdown caption) for round `index`."""
    if trace is None or not trace.rounds:
        return "", "Load a walkthrough or use your last run to start the replay."
    index = max(0, min(int(index), len(trace.rounds) - 1))
    rnd = trace.rounds[index]
    tau_accept, tau_slim = thresholds_of(trace)
    toks = [t for t in trace.tokens if t.round == index]
    rows, sentences = [], []
    for j, draft_id in enumerate(rnd.draft_tokens):
        draft_text = decode(draft_id)
        if j < len(toks):
            t = toks[j]
            label = OUTCOMES.get(t.outcome, ("", t.outcome, ""))[1]
            out = f'<span class="tok" style="{token_style(t.outcome, t.tier)}">{html.escape(t.text)}</span>'
            sentences.append(f"{j + 1}. " + explain_token(t, draft_text, tau_accept, tau_slim))
            rows.append(f"<tr><td>{j + 1}</td><td class='tokcell'>{html.escape(repr(draft_text))}</td>"
                        f"<td>{_conf(t.draft_confidence)}</td><td>{_conf(t.slim_confidence)}</td>"
                        f"<td>{t.tier}</td><td>{html.escape(label)}</td><td class='tokcell'>{out}</td></tr>")
        else:
            rows.append(f"<tr><td>{j + 1}</td><td class='tokcell'>{html.escape(repr(draft_text))}</td>"
                        "<td colspan='5'><i>dropped: an earlier token in this round was rejected "
                        "(or the text ended)</i></td></tr>")
    for t in toks[len(rnd.draft_tokens):]:  # bonus token, or the single token of plain decoding
        label = OUTCOMES.get(t.outcome, ("", t.outcome, ""))[1]
        out = f'<span class="tok" style="{token_style(t.outcome, t.tier)}">{html.escape(t.text)}</span>'
        sentences.append(("" if not rnd.draft_tokens else "+ ") + explain_token(t, None, tau_accept, tau_slim))
        rows.append(f"<tr><td>+</td><td class='tokcell'>(none)</td><td>—</td><td>—</td><td>{t.tier}</td>"
                    f"<td>{html.escape(label)}</td><td class='tokcell'>{out}</td></tr>")
    table = ("<div class='viasd-round' id='viasd-round'><table><tr><th>#</th><th>draft token</th>"
             "<th>drafter conf.</th><th>slim conf.</th><th>tier</th><th>decision</th><th>output</th></tr>"
             + "".join(rows) + "</table></div>")

    cost_round = sum(c.cost_units for c in rnd.calls)
    by_role = {}
    for c in rnd.calls:
        by_role[c.role] = by_role.get(c.role, 0.0) + c.cost_units
    cost_so_far = sum(c.cost_units for r in trace.rounds[: index + 1] for c in r.calls)
    tokens_so_far = sum(r.emitted for r in trace.rounds[: index + 1])
    ran = ", ".join(f"{role} {units:.2f}" for role, units in by_role.items()) or "nothing"
    opening = (f"**Round {index + 1} of {len(trace.rounds)}.** "
               + (f"The drafter proposed {len(rnd.draft_tokens)} token(s): "
                  + " ".join(_q(decode(i)) for i in rnd.draft_tokens) + "." if rnd.draft_tokens
                  else "No draft this round."))
    speed = tokens_so_far / cost_so_far if cost_so_far else 0.0
    closing = (f"This round kept {rnd.accepted} draft token(s) and wrote {rnd.emitted} token(s). "
               f"It cost {cost_round:.2f} full-model passes ({ran}). So far: {tokens_so_far} tokens for "
               f"{cost_so_far:.2f} passes, where plain decoding would have needed {tokens_so_far} — a modelled "
               f"speed-up of {speed:.2f}×.")
    caption = opening + "\n\n" + "\n\n".join(sentences) + "\n\n" + closing
    return table, caption


def walkthrough_intro(walkthrough: dict) -> str:
    """Markdown for the top of a loaded walkthrough: title, intro and talking points."""
    points = walkthrough.get("talking_points") or []
    parts = [f"### {walkthrough.get('title', 'Walkthrough')}", walkthrough.get("intro", ""),
             f"**Prompt:** {walkthrough.get('prompt', '')}"]
    if points:
        parts.append("**Talking points**\n\n" + "\n".join(f"- {p}" for p in points))
    return "\n\n".join(p for p in parts if p)
