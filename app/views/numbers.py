"""The run's headline counts, read once from core.analysis.metrics, so every card and sentence says the same.

Every number the Generate tab shows about a run (tokens, rounds, drafts kept, drafts rejected, copies
kept on trust, the audit's cuts, the modelled speed-up, words differing) comes from one `Headline`,
built from `core.analysis.metrics.summarize` and the trace's audit facts. Cards, the "why" sentence and
the Classroom format it; none counts for itself. The break-even model's acceptance (kept / judged
drafts, `core.analysis.breakeven.RunPoint.alpha`) is a different quantity: where a sentence needs it,
it is named as such beside the headline share, never in its place.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.views.render import audit_counts, audits_copies
from core.analysis.metrics import summarize
from core.trace import Trace


@dataclass(frozen=True)
class Copies:
    """Prompt-lookup copies kept on trust (copy_evidence "audit"): all of them, those that stand, those cut."""

    trusted: int  # kept on trust at some point: standing + cut
    standing: int  # still in the answer (the audit let them stand, or has not run yet)
    cut: int  # tokens the audit cut from the answer (metrics "rolled_back")
    refusals: int  # rounds whose audit refused a copy


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
    copies: Copies | None  # None when the run did not audit copies

    @property
    def rejected(self) -> int:
        return self.drafted - self.kept


def headline(trace: Trace | None, metrics: dict | None = None) -> Headline:
    """The headline of `trace`; pass `metrics` when `summarize(trace)` is already at hand (with no trace,
    `metrics` alone: then the audit's copies are unknown)."""
    if metrics is None and trace is None:
        raise ValueError("headline needs a trace or its metrics")
    m = summarize(trace) if metrics is None else metrics
    copies = None
    if trace is not None and audits_copies(trace):
        standing, cut, refusals = audit_counts(trace)
        copies = Copies(trusted=standing + cut, standing=standing, cut=cut, refusals=refusals)
    return Headline(tokens=int(m["tokens"]), rounds=int(m["rounds"]), drafted=int(m["drafted"]),
                    kept=int(m["accepted"]), rejection=float(m["rejection_rate"]),
                    speedup=float(m["modelled_speedup"]), words_differing=m.get("words_differing"),
                    agreement=m.get("full_agreement"), copies=copies)


def speed_text(speedup: float) -> str:
    """A speed-up for people: 'unbounded' when no verifier ran at all (zero modelled cost)."""
    return "∞ (no verifier ran)" if speedup == float("inf") else f"{speedup:.2f}×"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 token', '3 tokens' (or `many` for irregular plurals)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def drafts_sentence(h: Headline) -> str:
    """Drafts kept and rejected, in the card's numbers."""
    if not h.drafted:
        return "Nothing was drafted: every token came from the full model."
    return (f"Of {plural(h.drafted, 'drafted token')}, {h.kept} ended up in the answer and {h.rejected} did not: "
            f"{h.rejection:.0%} of drafts rejected (a refused draft, the drafts after it, and any the audit cut).")


def copies_sentence(h: Headline) -> str:
    """What the audit did, in the card's numbers; "" for a run that did not audit copies."""
    c = h.copies
    if c is None:
        return ""
    if not c.trusted:
        return ("No copy passed τ_accept, so the full model checked every copy before it was kept "
                "(nothing to audit).")
    text = (f"{plural(c.trusted, 'copied token')} {'was' if c.trusted == 1 else 'were'} kept on trust and audited "
            "by full-model passes that had to process them anyway")
    if c.cut:
        return (text + f"; the audit refused {plural(c.refusals, 'copy', 'copies')} and cut {plural(c.cut, 'token')}"
                f" (drafted for nothing), so {c.standing} stand.")
    return text + "; it refused none."
