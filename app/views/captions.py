"""The Classroom's sentences: how each token of a round was decided, and the round told as a whole.

Read from the trace only: why a tier decided is the `reason` the engine recorded, what its rule said
is the recorded `verdict` (plain words from app.views.words), and which tiers could decide at all is
read once per round by `tiers_in` (the policy the engine stamped in the trace, and whether the round ran a
slim pass), so a sentence never says "not sure enough" where a tier was off. Whether a token was kept on
trust, and whether it was a copy, is its own record (`TokenRecord.audit`, `Trace.is_copy`), never the
settings. Words are named as a class reads them (app.views.spelling): chat-template pieces are left out, an
end marker is named, and whitespace shows as marks (⏎, ·). Counts come from the same records the cards read.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

from app.views import words
from app.views.numbers import plural
from app.views.render import REPLACED, shown_round
from app.views.spelling import conf, quoted, spoken, versus
from core.analysis.metrics import modelled_speedup
from core.round_policy import switched_off
from core.trace import TokenRecord, Trace
from core.vocabulary import Audit, Reason, Why

SHORT_ROLE = {"drafter": "drafter", "slim": "slim", "full": "full"}
"""The round's cost split by model, as the tally names them (short: the caption's last line must stay short)."""
DENSE_POINTS = 5
"""A round told in this many points or more is set in smaller type (class "dense"), so it still fits a projector."""
USUAL_VERDICTS = {Why.ARGMAX.value, Why.ARGMAX_DIFFERS.value, Why.TRUSTED.value, Why.OWN_TOKEN.value}
"""Verdicts a sentence already says in its own words (kept = the verifier's top choice): no parenthesis for them."""


@dataclass(frozen=True)
class Tiers:
    """Which tiers could decide in one round, as the trace recorded it.

    The one place the Classroom reads the run's policy (`Trace.policy`, stamped by the engine): the mode, the
    thresholds it applied (classic SD switches tiers 1 and 2 off) and whether each tier was on, and whether the
    round's calls include a slim pass."""

    mode: str
    tau_accept: float
    tau_slim: float
    slim_ran: bool

    @property
    def tier1(self) -> bool:
        return not switched_off(self.tau_accept)

    @property
    def tier2(self) -> bool:
        return not switched_off(self.tau_slim)


def tiers_in(trace: Trace, index: int) -> Tiers:
    """The tiers round `index` of `trace` could use (see `Tiers`)."""
    policy = trace.policy
    slim_ran = any(c.role == "slim" for c in trace.rounds[index].calls) if trace.rounds else False
    return Tiers(policy.mode, policy.tau_accept, policy.tau_slim, slim_ran)


def why_label(t: TokenRecord, tiers: Tiers) -> str:
    """The round table's "why this tier" cell: the recorded reason, said with the tiers that were off."""
    if t.reason == Reason.NOT_CONFIDENT:
        if tiers.mode == "sd":
            return "classic SD, tiers 1 and 2 off"
        if not tiers.tier1 and not tiers.tier2:
            return "tiers 1 and 2 off"
        if not tiers.tier2:
            return "drafter not sure; tier 2 off"
        if not tiers.tier1:
            return "tier 1 off; slim verifier not sure"
        if not tiers.slim_ran:
            return "drafter not sure; no slim pass this round"
        return "neither sure enough"
    return words.name("reason", t.reason)


def _verdict(t: TokenRecord) -> str:
    """The rule's verdict in brackets, only where the sentence does not already say it."""
    if t.verdict in USUAL_VERDICTS or not t.verdict:
        return ""
    found = words.term("verdict", t.verdict)
    return f" ({found.meaning.rstrip('.').lower() if found.meaning else f'the rule said “{t.verdict}”'})"


def _checked(t: TokenRecord, who: str, draft_text: str | None) -> str:
    """What a verifier did with the draft token, from the recorded outcome and verdict."""
    if t.outcome in REPLACED:
        return f"{who} rejected {quoted(draft_text)} and wrote {quoted(t.text)}{_verdict(t)}. The round ends here."
    return f"{who} kept {quoted(t.text)}{_verdict(t)}."


def _unsure(tiers: Tiers, drafter: str, slim: str) -> str:
    """Why neither cheap tier decided (`drafter`, `slim`: their confidences against the thresholds), with the
    tiers that were off said as off."""
    if tiers.mode == "sd":
        return "Classic SD: tiers 1 and 2 are off, so the full model checks every draft"
    if not tiers.tier1 and not tiers.tier2:
        return "Tiers 1 and 2 are off, so the full model checks every draft"
    unsure = f"The drafter was not sure ({drafter})" if tiers.tier1 else "Tier 1 is off"
    if not tiers.tier2:
        return unsure + " and tier 2 is off"
    if not tiers.slim_ran:
        return unsure + " and the slim pass was skipped this round (it had not been sparing full passes)"
    if not tiers.tier1:
        return f"Tier 1 is off and the slim verifier was not sure ({slim})"
    return f"Neither was sure (drafter {drafter}, slim {slim})"


def explain_token(t: TokenRecord, draft_text: str | None, tiers: Tiers, *, copy: bool = False, cut: int = 0) -> str:
    """One plain-language sentence on how one token was decided, read from its recorded reason and verdict.

    Whether it was kept on trust for the full model to audit is its recorded audit state; `copy`: it was a
    prompt-lookup copy (`Trace.is_copy`). For an audit refusal, `draft_text` is the refused token and `cut` how
    many tokens the audit cut.
    """
    word, reason, drafter = quoted(t.text), t.reason, versus(t.draft_confidence, tiers.tau_accept)
    audited = t.audit != Audit.NONE
    later = " Kept on trust: the full model's next pass audits it." if audited else ""
    if reason == Reason.DRAFT_CONFIDENT:
        if copy:
            return f"Prompt lookup copied {word}; its statistic passed ({drafter})." + later
        return f"The drafter was sure ({drafter}), so {word} was kept as drafted." + later
    if reason == Reason.SLIM_CONFIDENT:
        lead = f"The drafter was not sure ({drafter}); " if tiers.tier1 else "Tier 1 is off; "
        return (lead + f"the slim verifier was sure ({versus(t.slim_confidence, tiers.tau_slim)}): "
                + _checked(t, "it", draft_text) + later)
    if reason == Reason.AUDIT_REFUSED:
        return (f"The full model's pass audited the words kept on trust and refused {quoted(draft_text)}: the text "
                f"was cut back there ({plural(cut, 'token')}, struck through) and its own {word} written instead. "
                "The round ends here.")
    if reason == Reason.AUDIT_DUE:
        return ("Enough words kept on trust were waiting for their audit, so the full model ran now; they stand: "
                + _checked(t, "it", draft_text))
    if reason == Reason.FREE_VERDICT:
        return "The full model had already run this round, so its verdict is free: " + _checked(t, "it", draft_text)
    if reason == Reason.COPY_NEEDS_EVIDENCE:
        return (f"Prompt lookup copied {word} ({drafter}), but a copy is a "
                "statistic of the text, never kept without a model agreeing: "
                + _checked(t, "the full model", draft_text))
    if reason == Reason.STOP_TOKEN:
        return "The end of the answer is never kept unchecked: " + _checked(t, "the full model", draft_text)
    if reason == Reason.BONUS:
        return f"Every draft was kept, and the full model's pass also gave its next word, {word}, for free."
    if reason == Reason.NO_DRAFT:
        source = "Plain decoding has no drafter" if tiers.mode == "plain" else "The drafter proposed nothing"
        return f"{source}, so the full model ran once and wrote {word}."
    if reason == Reason.NOT_CONFIDENT:
        unsure = _unsure(tiers, drafter, versus(t.slim_confidence, tiers.tau_slim))
        return unsure + ": " + _checked(t, "it" if "full model" in unsure else "the full model", draft_text)
    return f"{word} was decided by tier {t.tier} ({words.name('outcome', t.outcome)}; {words.name('reason', reason)})."


GROUPED = {
    Reason.DRAFT_CONFIDENT: "The drafter was sure of the next {n} ({sure}), so “{text}” was kept as drafted.",
    Reason.FREE_VERDICT: "The full model had already run this round, so its verdicts on the next {n} were free: "
                         "it kept “{text}”.",
    Reason.NOT_CONFIDENT: "{unsure}, for the next {n}: the full model kept “{text}”.",
    Reason.SLIM_CONFIDENT: "The slim verifier was sure of the next {n} ({sure}) and kept “{text}”.",
    Reason.COPY_NEEDS_EVIDENCE: "Prompt lookup copied “{text}” ({n} tokens); a copy is never kept without a model "
                                "agreeing, and the full model kept it.",
}
"""One sentence for a run of tokens kept for the same recorded reason (a replaced token is always told alone)."""
COPIED = {Reason.DRAFT_CONFIDENT: "Prompt lookup copied “{text}” ({n} tokens); its statistic passed ({sure}). "
                                  "Kept on trust: the full model's next pass audits them."}
ON_TRUST = {
    Reason.DRAFT_CONFIDENT: "The drafter was sure of the next {n} ({sure}), so “{text}” was kept as drafted. Kept on "
                            "trust: the full model's next pass audits them.",
    Reason.SLIM_CONFIDENT: "The slim verifier was sure of the next {n} ({sure}) and kept “{text}”. Kept on trust: "
                           "the full model's next pass audits them.",
}
"""The same runs when they were kept on trust (their recorded audit state): copies, or a model's own drafts."""


def groups(items: list[tuple[TokenRecord, str | None]]) -> list[list[tuple[TokenRecord, str | None]]]:
    """The round's tokens with each run kept for the same recorded reason (and audit state) as one group (a
    replaced token alone): the caption tells a group in one sentence and the table shows it in one row."""
    out: list[list[tuple[TokenRecord, str | None]]] = []
    for item in items:
        t, last = item[0], out[-1][-1][0] if out else None
        if (last is not None and t.reason == last.reason and t.reason in GROUPED and t.outcome not in REPLACED
                and last.outcome not in REPLACED and t.outcome == last.outcome
                and (t.audit == Audit.NONE) == (last.audit == Audit.NONE)):
            out[-1].append(item)
        else:
            out.append([item])
    return out


def sure_range(values: list[float | None]) -> str:
    """'0.91' or '0.91–0.99' over the values that were computed ('—' when none)."""
    known = [v for v in values if v is not None]
    lo, hi = conf(min(known, default=None)), conf(max(known, default=None))
    return lo if lo == hi else f"{lo}–{hi}"


def _group_sentence(group: list[tuple[TokenRecord, str | None]], tiers: Tiers, copy: bool) -> str:
    tokens = [t for t, _ in group]
    reason = Reason(tokens[0].reason)
    trusted = tokens[0].audit != Audit.NONE
    on_trust = ((COPIED if copy else ON_TRUST).get(reason) or ON_TRUST.get(reason)) if trusted else None
    form = on_trust or GROUPED[reason]
    drafter, slim = sure_range([t.draft_confidence for t in tokens]), sure_range([t.slim_confidence for t in tokens])
    sure = (f"{slim}, all ≥ {tiers.tau_slim:g}" if reason == Reason.SLIM_CONFIDENT
            else f"{drafter}, all ≥ {tiers.tau_accept:g}")
    unsure = _unsure(tiers, f"{drafter}, all < {tiers.tau_accept:g}", f"{slim}, all < {tiers.tau_slim:g}")
    return form.format(n=len(tokens), text=spoken("".join(t.text for t in tokens)), sure=sure, unsure=unsure)


def told(items: list[tuple[TokenRecord, str | None]], tiers: Tiers, is_copy: Callable[[TokenRecord], bool],
         cut: int = 0) -> list[tuple[list[TokenRecord], str]]:
    """The round's sentences, one per group (`groups`); each entry is (its tokens, its sentence). `is_copy`: whether
    a token was a prompt-lookup copy (`Trace.is_copy`)."""
    out = []
    for group in groups(items):
        tokens = [t for t, _ in group]
        if len(group) == 1 or not spoken("".join(t.text for t in tokens)):
            out.extend(([t], explain_token(t, text, tiers, copy=is_copy(t), cut=cut)) for t, text in group)
        else:
            out.append((tokens, _group_sentence(group, tiers, is_copy(tokens[0]))))
    return out


def _speed(speedup: float) -> str:
    if speedup == float("inf"):
        return "No verifier has run yet, so nothing was paid"
    if abs(speedup - 1.0) < 0.005:
        return f"{speedup:.2f}×: as fast as plain (modelled)"
    if speedup >= 1.0:
        return f"{speedup:.2f}× faster than plain (modelled)"
    slower = 1 / speedup
    return f"{speedup:.2f}×: {slower:.1f}× slower than plain (modelled)" if slower >= 1.1 else \
        f"{speedup:.2f}×: a little slower than plain (modelled)"


def tally(trace: Trace, index: int, answer_tokens: int, cut: int) -> str:
    """The round's bookkeeping in plain words: what it kept and cost, and the run so far against plain decoding."""
    rnd = trace.rounds[index]
    by_role: dict[str, float] = {}
    for c in rnd.calls:
        by_role[c.role] = by_role.get(c.role, 0.0) + c.cost_units
    ran = " · ".join(f"{SHORT_ROLE.get(role, role)} {units:.2f}" for role, units in by_role.items()) or "nothing ran"
    so_far = sum(c.cost_units for r in trace.rounds[: index + 1] for c in r.calls)
    plain = trace.plain_cost_after(answer_tokens)  # the same prompt's prefill (recorded), then one pass a token
    reading = plain - answer_tokens  # what plain decoding pays beyond one pass a token: reading the prompt
    audit = f" Its audit cut {plural(cut, 'token')} (struck through)." if cut else ""
    plain_words = (f"{answer_tokens} + {reading:.2f} to read the prompt = {plain:.2f}" if reading > 0.005
                   else f"{plain:.2f}")
    kept = f"Kept {rnd.accepted} of {plural(rnd.drafted, 'draft')}, wrote" if rnd.drafted else "Wrote"
    return (f"{kept} {plural(rnd.emitted, 'token')}, for {sum(by_role.values()):.2f} passes ({ran}).{audit} "
            f"So far {plural(answer_tokens, 'token')} cost {so_far:.2f}; plain: {plain_words}. "
            f"{_speed(modelled_speedup(plain, so_far))}.")


def caption(trace: Trace, index: int, items: list[tuple[TokenRecord, str | None]], draft_texts: list[str],
            cut: int, answer_tokens: int) -> str:
    """The round told in sentences. `items`: the round's tokens with the draft text each one decided (None for a
    token with no draft); `draft_texts`: the round's draft as text; `cut`: tokens this round's audit cut;
    `answer_tokens`: tokens in the answer once this round is done (app.views.round_replay)."""
    tiers = tiers_in(trace, index)
    readable, n = spoken("".join(draft_texts)), len(draft_texts)
    if not n:
        drafted = "No draft this round."
    elif readable:
        drafted = f"The drafter proposed {plural(n, 'token')}: “{readable}”."
    else:
        drafted = f"The drafter proposed {plural(n, 'token')} with no words (the end marker)."
    opening = f"<p><b>Round {shown_round(index)} of {len(trace.rounds)}.</b> {html.escape(drafted)}</p>"
    points = told(items, tiers, trace.is_copy, cut)
    listed = "".join(f"<li data-reason='{html.escape(ts[0].reason)}' data-outcome='{html.escape(ts[0].outcome)}' "
                     f"data-tokens='{len(ts)}'>{html.escape(sentence)}</li>" for ts, sentence in points)
    dense = " dense" if len(points) >= DENSE_POINTS else ""
    return (f"<div class='viasd-caption{dense}' data-round='{shown_round(index)}'>{opening}<ol>{listed}</ol>"
            f"<p class='viasd-tally'>{html.escape(tally(trace, index, answer_tokens, cut))}</p></div>")
