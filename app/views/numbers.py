"""The run's headline counts, read once from core.analysis.metrics, so every card and sentence says the same.

Every number the Generate tab shows about a run (tokens, rounds, drafts kept, drafts rejected, tokens
kept on trust, the audit's cuts, the modelled speed-up, words differing) comes from one `Headline`,
built from `core.analysis.metrics.summarize` and the trace's audit facts. Cards, the "why" sentence and
the Classroom format it; none counts for itself. The break-even model's acceptance (kept / judged
drafts, `core.analysis.breakeven.RunPoint.alpha`) is a different quantity: where a sentence needs it,
it is named as such beside the headline share, never in its place.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.views.render import audit_counts
from core.analysis.metrics import summarize
from core.trace import Trace
from core.vocabulary import Audit, Tier


@dataclass(frozen=True)
class Trusted:
    """Tokens kept on trust (copy_evidence "audit"): all of them, how many were copies, those that stand, those cut."""

    trusted: int  # kept on trust at some point: standing + those among the cut
    copies: int  # of them, prompt-lookup copies (the rest are the drafter's own tokens)
    standing: int  # still in the answer (the audit let them stand, or has not run yet)
    cut: int  # tokens the audit cut from the answer (metrics "rolled_back")
    refusals: int  # rounds whose audit refused a token kept on trust
    direct: int = 0  # tier-1 tokens of the answer kept on trust (the rest of tier 1 was kept unchecked)

    @property
    def kind(self) -> str:
        """What was kept, in words: 'copied token', 'drafted token' or 'token' (both kinds)."""
        return "copied token" if self.copies == self.trusted else "drafted token" if not self.copies else "token"


def trusted_of(trace: Trace) -> Trusted | None:
    """What the run kept on trust, counted from the records (None when its policy keeps nothing on trust)."""
    if not trace.policy.audits and not any(t.audit != Audit.NONE for t in [*trace.tokens, *trace.rolled_back]):
        return None
    standing, cut, refusals = audit_counts(trace)
    kept = [t for t in trace.tokens if t.audit in (Audit.TRUSTED, Audit.AUDITED)]
    kept += [t for t in trace.rolled_back if t.tier in (Tier.DRAFT, Tier.SLIM)
             and trace.policy.on_trust(trace.is_copy(t))]
    return Trusted(trusted=len(kept), copies=sum(trace.is_copy(t) for t in kept), standing=standing, cut=cut,
                   refusals=refusals, direct=sum(1 for t in trace.tokens
                                                 if t.tier == Tier.DRAFT and t.audit != Audit.NONE))


@dataclass(frozen=True)
class Headline:
    """One run's counts as every view shows them (definitions: core.analysis.metrics)."""

    tokens: int
    rounds: int
    drafted: int
    kept: int  # metrics "accepted": drafted tokens that are in the answer
    rejection: float  # metrics "rejection_rate": (drafted - kept) / drafted
    speedup: float  # metrics "modelled_speedup"
    words_differing: float | None  # metrics "words_differing" (None until fidelity is measured)
    agreement: float | None  # metrics "full_agreement"
    trust: Trusted | None  # None when the run kept nothing on trust

    @property
    def rejected(self) -> int:
        return self.drafted - self.kept


def headline(trace: Trace | None, metrics: dict | None = None) -> Headline:
    """The headline of `trace`; pass `metrics` when `summarize(trace)` is already at hand (with no trace,
    `metrics` alone: then what was kept on trust is unknown)."""
    if metrics is None and trace is None:
        raise ValueError("headline needs a trace or its metrics")
    m = summarize(trace) if metrics is None else metrics
    return Headline(tokens=int(m["tokens"]), rounds=int(m["rounds"]), drafted=int(m["drafted"]),
                    kept=int(m["accepted"]), rejection=float(m["rejection_rate"]),
                    speedup=float(m["modelled_speedup"]), words_differing=m.get("words_differing"),
                    agreement=m.get("full_agreement"), trust=None if trace is None else trusted_of(trace))


def speed_text(speedup: float) -> str:
    """A speed-up for people: 'unbounded' when no verifier ran at all (zero modelled cost)."""
    return "∞ (no verifier ran)" if speedup == float("inf") else f"{speedup:.2f}×"


def passes_ran(trace: Trace) -> str:
    """How many of the run's passes ran here ('12 of 40 passes ran here, the rest replayed'; 'no pass ran here')."""
    calls = [c for r in trace.rounds for c in r.calls]
    ran = sum(not c.from_memo for c in calls)
    if not ran:
        return "no pass ran here, all replayed from the memo"
    return f"{ran} of {len(calls)} passes ran here, the rest replayed"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 token', '3 tokens' (or `many` for irregular plurals)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def drafts_sentence(h: Headline) -> str:
    """Drafts kept and rejected, in the card's numbers."""
    if not h.drafted:
        return "Nothing was drafted: every token came from the full model."
    return (f"Of {plural(h.drafted, 'drafted token')}, {h.kept} ended up in the answer and {h.rejected} did not: "
            f"{h.rejection:.0%} of drafts rejected (a refused draft, the drafts after it, and any the audit cut).")


def trust_sentence(h: Headline) -> str:
    """What the audit did, in the card's numbers; "" for a run that kept nothing on trust."""
    c = h.trust
    if c is None:
        return ""
    if not c.trusted:
        return ("Nothing was kept on trust, so the full model checked every word before it was kept "
                "(nothing to audit).")
    text = (f"{plural(c.trusted, c.kind)} {'was' if c.trusted == 1 else 'were'} kept on trust"
            + (f" ({c.copies} copied, {c.trusted - c.copies} drafted)" if c.kind == "token" else "")
            + " and audited by full-model passes that had to process them anyway")
    if c.cut:
        return (text + f"; the audit refused {plural(c.refusals, 'token')} and cut {plural(c.cut, 'token')}"
                f" (drafted for nothing), so {c.standing} stand.")
    return text + "; it refused none."
