"""Round-by-round replay of a trace with captions a teacher can read aloud.

Everything here is read from a finished trace. Why a tier decided a token is the `reason` the
engine recorded (`core.decoding.tiers.Reason`) and what its rule said is the recorded `verdict`; nothing is
re-derived from confidences and thresholds (a free verdict never reads "the drafter was only 0.95
sure"). Rounds are numbered from 1 on screen (`render.shown_round`); the trace and its CSVs keep
the engine's index from 0. No model runs here (only the tokenizer, to spell out draft tokens).

Audited copies: tokens an audit cut (`Trace.rolled_back`) are shown struck through in the round that
cut them, in its text and its table; before that round they are on screen as they were then.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import replace

from app.views.render import OUTCOMES, REPLACED, audit_counts, audits_copies, shown_round, token_style
from core.analysis.metrics import modelled_speedup, summarize
from core.config import LOOKUP_PRESET, DecodeConfig
from core.decoding.tiers import Audit, Reason
from core.errors import ConfigError
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
    Reason.AUDIT_DUE: "audit due: enough copies wait",
    Reason.AUDIT_REFUSED: "audit refused a kept copy",
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


def explain_token(t: TokenRecord, draft_text: str | None, mode: str = "via", *, audited: bool = False,
                  cut: int = 0) -> str:
    """One plain-language sentence on how one token was decided, read from its recorded reason and verdict.

    `audited`: the run kept copies on trust for the full model to audit (copy_evidence "audit"). For an
    audit refusal, `draft_text` is the refused copy and `cut` how many tokens the audit cut.
    """
    c, s = _conf(t.draft_confidence), _conf(t.slim_confidence)
    reason = t.reason
    later = (" It is kept on trust for now: the full model's next pass, which must process it anyway, audits it."
             if audited else "")
    if reason == Reason.DRAFT_CONFIDENT:
        if audited:
            return f"Prompt lookup copied {_q(t.text)} and the copy looked reliable ({c}), confident enough to skip " \
                   f"checking." + later
        return f"The drafter was {c} sure — confident enough to skip checking — so {_q(t.text)} was kept as drafted."
    if reason == Reason.SLIM_CONFIDENT:
        return (f"The drafter ({c}) was not confident enough to skip checking; the slim verifier was {s} sure, "
                f"confident enough to decide: " + _checked(t, "it", draft_text) + later)
    if reason == Reason.AUDIT_REFUSED:
        return (f"The full model's pass audited the copies kept on trust and refused {_q(draft_text or '?')}: the "
                f"text was cut back there ({cut} token{'s' * (cut != 1)}, struck through) and the full model's own "
                f"{_q(t.text)} written instead. The output stays the full model's; the round ends here.")
    if reason == Reason.AUDIT_DUE:
        return ("Enough copies were already waiting for their audit, so this word goes to the full model now; its "
                "pass audits the waiting copies first (they stand): " + _checked(t, "the full model", draft_text))
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


def _cut_by(trace: Trace, index: int) -> list[TokenRecord]:
    """The tokens round `index`'s audit cut, in output order (each cut token records the round that cut it)."""
    return [t for t in trace.rolled_back if t.audit_round == index]


def _cut_in(t: TokenRecord | None) -> int | None:
    """The round whose audit cut `t` (recorded), or None when no audit cut it."""
    return t.audit_round if t is not None and t.audit in (Audit.REFUSED, Audit.CUT) else None


def _as_of(t: TokenRecord, index: int) -> TokenRecord:
    """`t` with the audit state it had after round `index` (a later round's audit still pending)."""
    state = t.audit_at(index)
    return t if state == t.audit else replace(t, audit=state)


def visible_trace(trace: Trace, index: int, show_future: bool) -> Trace:
    """The trace as a class should see it at round `index`: later rounds hidden unless asked for.

    The text is the output as it stood after that round: copies a later audit cut are still there, and
    the tokens this round's audit cut stand struck through before its correction (they are the
    returned trace's `rolled_back`). Until the last round the run is shown as running, so a copy kept
    on trust reads "audit pending" until a full pass has audited it.
    """
    if show_future:
        return trace
    standing = [_as_of(t, index) for t in trace.tokens if t.round <= index]
    standing += [_as_of(t, index) for t in trace.rolled_back if t.round <= index and t.audit_round > index]
    correction = [t for t in standing if t.round == index and t.reason == Reason.AUDIT_REFUSED]
    rest = sorted((t for t in standing if t.round != index or t.reason != Reason.AUDIT_REFUSED),
                  key=lambda t: t.position)
    struck = _cut_by(trace, index)
    last = index >= len(trace.rounds) - 1
    return replace(trace, tokens=rest + struck + correction, rolled_back=struck,
                   stop_reason=trace.stop_reason if last else "running")


def _output_cell(t: TokenRecord, cut: bool = False) -> str:
    return (f'<span class="tok{" cut" if cut else ""}" style="{token_style(t.outcome, t.tier)}">'
            f'{html.escape(t.text)}</span>')


def _row(number: str, draft: str, t: TokenRecord | None, cut_in: int | None = None) -> str:
    if t is None:
        return (f"<tr><td>{number}</td><td class='tokcell'>{draft}</td><td colspan='5'><i>dropped: an earlier "
                "word in this round was rejected or its audit refused a kept copy (or the text ended)</i></td></tr>")
    label = html.escape(OUTCOMES.get(t.outcome, ("", t.outcome, ""))[1])
    cut = "" if cut_in is None else f" data-cut-in='{shown_round(cut_in)}'"
    if cut_in is not None:
        label += f" · <b>cut by the audit in round {shown_round(cut_in)}</b>"
    return (f"<tr data-reason='{html.escape(t.reason)}'{cut}><td>{number}</td><td class='tokcell'>{draft}</td>"
            f"<td>{_conf(t.draft_confidence)}</td><td>{_conf(t.slim_confidence)}</td>"
            f"<td>{html.escape(WHY.get(t.reason, t.reason))}</td><td>{label}</td>"
            f"<td class='tokcell'>{_output_cell(t, cut_in is not None)}</td></tr>")


def round_view(trace: Trace | None, index: int, decode: Callable[[int], str]) -> tuple[str, str]:
    """(HTML table of the round's draft and decisions, HTML caption) for round `index` (from 0)."""
    if trace is None or not trace.rounds:
        return "", f"<div class='viasd-caption'><p>{EMPTY}</p></div>"
    index = max(0, min(int(index), len(trace.rounds) - 1))
    rnd, mode, audited = trace.rounds[index], trace.config.mode, audits_copies(trace)
    cut = _cut_by(trace, index)
    # the round's tokens as it wrote them: those still in the output, those an audit cut, its correction last
    toks = sorted([t for t in [*trace.tokens, *trace.rolled_back] if t.round == index],
                  key=lambda t: (t.reason == Reason.AUDIT_REFUSED, t.position))
    drafted = [t for t in toks if t.reason != Reason.AUDIT_REFUSED]
    rows, items = [], []
    for j, draft_id in enumerate(rnd.draft_tokens):
        draft_text = decode(draft_id)
        t = drafted[j] if j < len(drafted) else None
        rows.append(_row(str(j + 1), html.escape(repr(draft_text)), t, _cut_in(t)))
        if t is not None:
            items.append((t, explain_token(t, draft_text, mode, audited=audited)))
    earlier = [t for t in cut if t.round < index]
    if earlier:
        struck = "".join(_output_cell(t, cut=True) for t in earlier)
        rows.append(f"<tr data-cut-in='{shown_round(index)}'><td>✂</td><td colspan='5'>cut by this round's audit "
                    f"(kept on trust in round {', '.join(sorted({str(shown_round(t.round)) for t in earlier}))})"
                    f"</td><td class='tokcell'>{struck}</td></tr>")
    extra = drafted[len(rnd.draft_tokens):] + [t for t in toks if t.reason == Reason.AUDIT_REFUSED]
    for t in extra:  # bonus token, the single token of a round with no draft, an audit's correction
        refused = cut[0] if t.reason == Reason.AUDIT_REFUSED and cut else None
        rows.append(_row("+", "(none)", t, _cut_in(t)))
        items.append((t, explain_token(t, refused.text if refused else None, mode, audited=audited, cut=len(cut))))
    table = ("<div class='viasd-round' id='viasd-round'><table><tr><th>#</th><th>draft word</th>"
             "<th>drafter conf.</th><th>slim conf.</th><th>why this tier</th><th>decision</th><th>output</th></tr>"
             + "".join(rows) + "</table></div>")
    return table, _caption(trace, index, items, decode, len(cut))


def _caption(trace: Trace, index: int, items: list[tuple[TokenRecord, str]], decode: Callable[[int], str],
             cut: int) -> str:
    """The round told in sentences; `cut`: how many tokens this round's audit cut."""
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
    plain_so_far = trace.plain_cost_after(tokens_so_far)  # the same prompt prefill (recorded), then one pass a token
    speed = modelled_speedup(plain_so_far, cost_so_far)
    shown = "unbounded (no verifier ran)" if speed == float("inf") else f"{speed:.2f}×"
    audit = f" Its audit cut {cut} token(s) from the text (struck through)." if cut else ""
    closing = (f"This round kept {rnd.accepted} draft word(s) and wrote {rnd.emitted}.{audit} It cost {cost_round:.2f} "
               f"full-model passes ({ran}). So far: {tokens_so_far} tokens for {cost_so_far:.2f} passes, where plain "
               f"decoding needs {plain_so_far:.2f} — a modelled speed-up of {shown}.")
    return (f"<div class='viasd-caption' data-round='{shown_round(index)}'>{opening}<ol>{points}</ol>"
            f"<p>{html.escape(closing)}</p></div>")


PRESETS = {"lookup": LOOKUP_PRESET}
"""Presets a walkthrough's config may start from (`{"preset": "lookup", ...}`): the constant is read, never copied."""


def walkthrough_config(walkthrough: dict, fixed: bool = False) -> DecodeConfig | None:
    """The validated config a walkthrough runs, or (`fixed`) the one its "Run the fix" step runs; None if it has none.

    A config is DecodeConfig fields over the engine's defaults, or over a preset named by "preset".
    """
    spec = walkthrough.get("fixed_config" if fixed else "config")
    if spec is None:
        return None
    spec = dict(spec)
    preset = spec.pop("preset", None)
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}' in a walkthrough: use {', '.join(PRESETS)}")
    return (PRESETS[preset] if preset else DecodeConfig()).with_(**spec).validate()


def fix_notes(walkthrough: dict, before: Trace, after: Trace) -> str:
    """Markdown below the fix's replay: what the fix changed, measured on the two runs, then its talking points."""
    b, a = summarize(before), summarize(after)
    config = after.config

    def fidelity(m: dict) -> str:
        if "words_differing" not in m:
            return "fidelity not measured"
        same = "identical to the full model's own answer" if m["identical_to_full"] else \
            f"{m['words_differing']:.0%} of words differ from the full model's own answer"
        if m.get("expectations_total"):
            same += f", {m['expectations_met']} of {m['expectations_total']} task expectations met"
        return same

    def speed(m: dict) -> str:
        return "unbounded" if m["modelled_speedup"] == float("inf") else f"{m['modelled_speedup']:.2f}×"

    cuts = sorted({t.audit_round for t in after.rolled_back if t.audit_round is not None})
    measured = (f"**Measured on these two runs.** Before the fix (copy_evidence "
                f"`{before.config.copy_evidence}`): {fidelity(b)}; modelled speed-up {speed(b)}. "
                f"The fix (copy_evidence `{config.copy_evidence}`, "
                f"γ {config.gamma}, τ_accept {config.tau_accept}, τ_slim {config.tau_slim}, "
                f"stop below {config.draft_stop_below}, audit span {config.audit_span}): {fidelity(a)}; "
                f"modelled speed-up {speed(a)}; {audit_counts(after)[0] + a['rolled_back']} copied token(s) kept on "
                f"trust and audited, of which the audit cut {a['rolled_back']}"
                + (f" in round(s) {', '.join(str(shown_round(r)) for r in cuts)} (step there to see them struck "
                   "through)." if cuts else "."))
    parts = [measured]
    points = walkthrough.get("fix_talking_points") or []
    if points:
        parts.append("**Talking points: the fix**\n\n" + "\n".join(f"- {p}" for p in points))
    parts.append(f"*Ran on {after.models.get('verifier', '?')} · drafter: {after.models.get('drafter', '?')}.*")
    return "\n\n".join(parts)


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
