"""The Classroom's sentences: how each token of a round was decided, and the round told as a whole.

Read from the trace only: why a tier decided is the `reason` the engine recorded, what its rule said
is the recorded `verdict` (plain words from app.views.words); nothing is re-derived from confidences
and thresholds. Captions name words as a class reads them: chat-template pieces (`<|im_start|>`,
"assistant") are left out, an end marker reads "the end of the answer", and a dropped draft word is
tied to the word whose rejection dropped it. Counts come from the same records the cards read.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from app.views import words
from app.views.render import REPLACED, is_special, shown_round
from core.analysis.metrics import modelled_speedup
from core.trace import TokenRecord, Trace
from core.vocabulary import Audit, Reason

WHY: dict[str, str] = {reason: words.name("reason", reason) for reason in Reason}
"""Short label of each recorded reason, for the round table's "why" column (app.views.words)."""

TEMPLATE = re.compile(r"<\|[^|<>]{1,40}\|>(?:system|user|assistant)?\n?|</?s>|<eos>|<end_of_turn>")
"""Chat-template pieces in a draft's text: markers and the role name that follows a turn marker."""

DENSE_POINTS = 5
"""A round told in this many points or more is set in smaller type (class "dense"; presenter mode sizes it), so
its caption still ends above a 1024x768 projector's fold."""


def conf(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def quoted(text: str | None) -> str:
    """A token as a class reads it: quoted text, 'the end of the answer' for a marker, a named line break."""
    if text is None:
        return "a guess"
    if TEMPLATE.fullmatch(text.strip()) or is_special(TokenRecord(0, 0, text, 0, 3, "", "", "")):
        return "the end of the answer"
    if not text.strip():
        return "a line break" if "\n" in text else "a space"
    return "“" + text.replace("\n", " ").strip(" ") + "”"


def spoken(text: str) -> str:
    """A draft's joined text with chat-template pieces removed ("" when nothing readable is left)."""
    return " ".join(TEMPLATE.sub(" ", text).split())


def _verdict(t: TokenRecord) -> str:
    found = words.term("verdict", t.verdict)
    return found.meaning.rstrip(".").lower() if found.meaning else f"the rule said “{t.verdict}”"


def _checked(t: TokenRecord, who: str, draft_text: str | None) -> str:
    """What a verifier did with the draft token, from the recorded outcome and verdict."""
    if t.outcome in REPLACED:
        return (f"{who} rejected {quoted(draft_text)} and wrote {quoted(t.text)} instead ({_verdict(t)}). "
                "The round ends here.")
    return f"{who} kept {quoted(t.text)} ({_verdict(t)})."


def explain_token(t: TokenRecord, draft_text: str | None, mode: str = "via", *, audited: bool = False,
                  cut: int = 0, slim_on: bool = True, copy: bool | None = None, gated: bool = False) -> str:
    """One plain-language sentence on how one token was decided, read from its recorded reason and verdict.

    `mode` is what the run was (its policy's method: "plain", "sd", "via"). `audited`: this token was kept on
    trust for the full model to audit (its recorded audit state); `copy`: it was a prompt-lookup copy (None:
    as `audited`). For an audit refusal, `draft_text` is the refused token and `cut` how many tokens the audit
    cut. `slim_on`: the slim verifier was asked about it (tier 2 on, its confidence recorded), so a sentence may
    say it was not confident enough; `gated`: tier 2 is on but the slim gate skipped it this round.
    """
    c, s, word = conf(t.draft_confidence), conf(t.slim_confidence), quoted(t.text)
    reason = t.reason
    copy = audited if copy is None else copy
    later = (" It is kept on trust for now: the full model's next pass, which must process it anyway, audits it."
             if audited else "")
    if reason == Reason.DRAFT_CONFIDENT:
        if audited and copy:
            return f"Prompt lookup copied {word} and the copy looked reliable ({c}), sure enough to skip checking." \
                   + later
        if audited:
            return f"The drafter was {c} sure — sure enough to skip checking — so {word} was kept as drafted." + later
        return f"The drafter was {c} sure — sure enough to skip checking — so {word} was kept as drafted."
    if reason == Reason.SLIM_CONFIDENT:
        return (f"The drafter ({c}) was not sure enough to skip checking; the slim verifier was {s} sure, "
                f"sure enough to decide: " + _checked(t, "it", draft_text) + later)
    if reason == Reason.AUDIT_REFUSED:
        return (f"The full model's pass checked the words kept on trust and refused {quoted(draft_text)}: the text "
                f"was cut back there ({cut} token{'s' * (cut != 1)}, struck through) and the full model's own "
                f"{word} written instead. The answer stays the full model's; the round ends here.")
    if reason == Reason.AUDIT_DUE:
        return ("Enough words kept on trust were already waiting for their check, so this word goes to the full model "
                "now; its pass checks the waiting words first (they stand): " + _checked(t, "the full model",
                                                                                         draft_text))
    if reason == Reason.FREE_VERDICT:
        return ("The full model had already run in this round (for an earlier word), so its verdict here is free "
                "and exact; tiers 1 and 2 were not asked: " + _checked(t, "it", draft_text))
    if reason == Reason.COPY_NEEDS_EVIDENCE:
        return (f"Prompt lookup copied {word} from earlier text and the copy looked reliable ({c}), but a copy is a "
                "statistic of the text, not a model's belief, so it is never kept without a model agreeing: "
                + _checked(t, "the full model", draft_text))
    if reason == Reason.STOP_TOKEN:
        slim = (" and the slim verifier was not sure enough" if slim_on else
                " (the slim gate skipped tier 2 this round)" if gated else "")
        return ("The drafter proposed the end of the answer, which is never kept unchecked" + slim + ": "
                + _checked(t, "the full model", draft_text))
    if reason == Reason.BONUS:
        return (f"Every draft word was kept and the full model's pass had already looked one step further, so its "
                f"next word {word} comes for free.")
    if reason == Reason.NO_DRAFT:
        source = "Plain decoding has no drafter" if mode == "plain" else "The drafter proposed nothing this round"
        return f"{source}, so the full model ran once and wrote {word} itself."
    if reason == Reason.NOT_CONFIDENT:
        if mode == "sd":
            lead = "Classic speculative decoding sends every draft word to the full model"
        elif slim_on:
            lead = f"Neither the drafter ({c}) nor the slim verifier ({s}) was sure enough"
        elif gated:
            lead = (f"The drafter ({c}) was not sure enough, and the slim gate skipped tier 2 this round (its recent "
                    "passes had not spared a full pass)")
        else:
            lead = f"The drafter ({c}) was not sure enough, and the slim verifier is switched off"
        return lead + ": " + _checked(t, "the full model", draft_text)
    return f"{word} was decided by tier {t.tier} ({words.name('outcome', t.outcome)}; {words.name('reason', reason)})."


GROUPED = {
    Reason.DRAFT_CONFIDENT: "The drafter was sure enough ({sure}) to skip checking {n} words in a row, so “{text}” "
                            "was kept as drafted.",
    Reason.FREE_VERDICT: "The full model had already run in this round, so its verdicts on the next {n} words were "
                         "free and exact: it kept “{text}”.",
    Reason.NOT_CONFIDENT: "Not sure enough to skip checking, the next {n} words went to the full model, which kept "
                          "“{text}”.",
    Reason.SLIM_CONFIDENT: "The slim verifier was sure enough ({sure}) to decide the next {n} words and kept "
                           "“{text}”.",
    Reason.COPY_NEEDS_EVIDENCE: "Prompt lookup copied “{text}” ({n} tokens); a copy is never kept without a model "
                                "agreeing, and the full model kept it.",
}
"""One sentence for a run of tokens kept for the same recorded reason (a replaced token is always told alone)."""
COPIED = {Reason.DRAFT_CONFIDENT: "Prompt lookup copied “{text}” ({n} tokens) and the copy looked reliable ({sure}),"
                                  " sure enough to skip checking. They are kept on trust for now: the full model's "
                                  "next pass, which must process them anyway, audits them."}
ON_TRUST = {
    Reason.DRAFT_CONFIDENT: "The drafter was sure enough ({sure}) to skip checking {n} words in a row: “{text}” is "
                            "kept on trust for now; the full model's next pass, which must process them anyway, "
                            "audits them.",
    Reason.SLIM_CONFIDENT: "The slim verifier was sure enough ({sure}) to decide the next {n} words and kept "
                           "“{text}”, on trust for now: the full model's next pass audits them.",
}
"""The same runs of tokens when they were kept on trust (recorded audit state) and were the drafter's own."""
SD_GROUPED = {Reason.NOT_CONFIDENT: "Classic speculative decoding sends every draft word to the full model: it kept "
                                    "“{text}” ({n} tokens)."}


def told(items: list[tuple[TokenRecord, str]], mode: str = "via",
         copied: Callable[[TokenRecord], bool] = lambda t: False) -> list[tuple[list[TokenRecord], str]]:
    """The round's per-token sentences with runs of tokens kept for the same reason told as one sentence, so a
    caption fits a projector; each entry is (its tokens, its sentence). A run kept on trust (recorded audit
    state) is told as such, as copies where `copied` says each was a prompt-lookup copy."""
    def kind(t: TokenRecord) -> tuple:
        return t.reason, t.audit != Audit.NONE, copied(t)

    groups: list[list[tuple[TokenRecord, str]]] = []
    for item in items:
        t = item[0]
        last = groups[-1][-1][0] if groups else None
        if (last is not None and kind(t) == kind(last) and t.reason in GROUPED and t.outcome not in REPLACED
                and last.outcome not in REPLACED):
            groups[-1].append(item)
        else:
            groups.append([item])
    out = []
    for group in groups:
        tokens = [t for t, _ in group]
        if len(group) == 1 or not spoken("".join(t.text for t in tokens)):
            out.extend(([t], sentence) for t, sentence in group)
            continue
        reason, trusted, copies = kind(tokens[0])
        forms = (COPIED if copies else ON_TRUST) if trusted else SD_GROUPED if mode == "sd" else {}
        form = forms.get(Reason(reason)) or (ON_TRUST.get(Reason(reason)) if trusted else None) or GROUPED[reason]
        values = [v for t in tokens if (v := t.slim_confidence if reason == Reason.SLIM_CONFIDENT
                                        else t.draft_confidence) is not None]
        lo, hi = conf(min(values, default=None)), conf(max(values, default=None))
        sure = lo if lo == hi else f"{lo}–{hi}"
        out.append((tokens, form.format(n=len(tokens), text=spoken("".join(t.text for t in tokens)), sure=sure)))
    return out


def dropped_note(rejected: TokenRecord | None, draft_text: str | None) -> str:
    """Why a draft word never reached the answer, naming the word whose rejection dropped it."""
    if rejected is None:
        return "dropped: the answer ended before this word"
    if rejected.reason == Reason.AUDIT_REFUSED:
        return f"dropped: the audit refused {quoted(draft_text)}, so the words drafted after it were discarded"
    return (f"dropped: {quoted(draft_text)} was rejected earlier in this round (replaced by {quoted(rejected.text)}),"
            " so the words drafted after it were discarded")


def caption(trace: Trace, index: int, items: list[tuple[TokenRecord, str]], draft_texts: list[str], cut: int,
            answer_tokens: int) -> str:
    """The round told in sentences. `draft_texts`: the round's draft tokens as text; `cut`: tokens this round's
    audit cut; `answer_tokens`: tokens in the answer once this round is done (app.views.round_replay)."""
    rnd = trace.rounds[index]
    by_role: dict[str, float] = {}
    for c in rnd.calls:
        by_role[c.role] = by_role.get(c.role, 0.0) + c.cost_units
    cost_so_far = sum(c.cost_units for r in trace.rounds[: index + 1] for c in r.calls)
    ran = ", ".join(f"{words.name('role', role)} {units:.2f}" for role, units in by_role.items()) or "nothing"
    readable = spoken("".join(draft_texts))
    n = len(rnd.draft_tokens)
    if not n:
        drafted = "No draft this round."
    elif readable:
        drafted = f"The drafter proposed {n} token{'s' * (n != 1)}: “{readable}”."
    else:
        drafted = f"The drafter proposed {n} token{'s' * (n != 1)} of the chat template (no words)."
    opening = f"<p><b>Round {shown_round(index)} of {len(trace.rounds)}.</b> {html.escape(drafted)}</p>"
    grouped = told(items, trace.policy.method, trace.is_copy)
    points = "".join(f"<li data-reason='{html.escape(ts[0].reason)}' data-outcome='{html.escape(ts[0].outcome)}' "
                     f"data-tokens='{len(ts)}'>{html.escape(sentence)}</li>" for ts, sentence in grouped)
    plain_so_far = trace.plain_cost_after(answer_tokens)  # the same prompt prefill (recorded), then one pass a token
    speed = modelled_speedup(plain_so_far, cost_so_far)
    shown = "unbounded (no verifier ran)" if speed == float("inf") else f"{speed:.2f}×"
    audit = f" Its audit cut {cut} token{'s' * (cut != 1)} from the text (struck through)." if cut else ""
    closing = (f"This round kept {rnd.accepted} of {n} drafted and wrote {rnd.emitted}.{audit} It cost "
               f"{sum(by_role.values()):.2f} full-model passes ({ran}). So far: {answer_tokens} tokens in the answer "
               f"for {cost_so_far:.2f} passes; plain decoding needs {plain_so_far:.2f}: {shown} (modelled).")
    dense = " dense" if len(grouped) >= DENSE_POINTS else ""  # smaller type, so a projector shows it whole
    return (f"<div class='viasd-caption{dense}' data-round='{shown_round(index)}'>{opening}<ol>{points}</ol>"
            f"<p class='viasd-tally'>{html.escape(closing)}</p></div>")
