"""Plain-language names for every engine term the app shows, keyed by the engine's own enums and codes.

The engine records codes (`core.vocabulary.Outcome` / `Reason` / `Why` / `Audit`,
stop reasons, `core.analysis.metrics` keys, `core.config` choices). A person reads words: every
view looks its label up here, so one term has one name on every card, sentence, chart and caption.
The codes stay in tooltips' details (`detail`) and in the downloads; nothing here decides anything.

Each entry is a `Term`: `name` (a few words, for labels and table cells) and `meaning` (one sentence,
for tooltips, legends and the About tab). Lookups fall back to the code itself, so a new engine code
shows up as itself instead of breaking a view.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.vocabulary import Outcome, Reason, Tier, Why


@dataclass(frozen=True)
class Term:
    """How one engine code reads on screen."""

    name: str
    meaning: str


TIERS: dict[Tier, Term] = {
    Tier.DRAFT: Term("tier 1: kept as drafted", "The drafter was sure enough; no verifier looked at the word."),
    Tier.SLIM: Term("tier 2: slim check", "A cut-down copy of the full model (some layers skipped) decided the word."),
    Tier.FULL: Term("tier 3: full check", "The full model decided the word, exactly as it would alone."),
}

OUTCOMES: dict[Outcome, Term] = {
    Outcome.DIRECT_ACCEPT: Term("kept unchecked (tier 1)", "The drafter was sure enough; no verifier ran for it."),
    Outcome.SLIM_ACCEPT: Term("slim check kept it (tier 2)", "The slim verifier agreed with the drafted word."),
    Outcome.SLIM_REGENERATE: Term("slim check replaced it (tier 2)",
                                  "The slim verifier rejected the drafted word and wrote its own."),
    Outcome.FULL_ACCEPT: Term("full check kept it (tier 3)", "The full model agreed with the drafted word."),
    Outcome.FULL_CORRECT: Term("full check replaced it (tier 3)",
                               "The full model rejected the drafted word and wrote its own."),
    Outcome.FULL_BONUS: Term("free extra word (tier 3)",
                             "Every drafted word was kept, and the full model's pass gave the next word for free."),
    Outcome.PLAIN: Term("full model alone", "Ordinary decoding: one full-model pass per word."),
}

REASONS: dict[Reason, Term] = {
    Reason.DRAFT_CONFIDENT: Term("drafter sure enough", "The drafter's confidence reached τ_accept, so no check ran."),
    Reason.SLIM_CONFIDENT: Term("slim verifier sure enough",
                                "The drafter was below τ_accept; the slim verifier's confidence reached τ_slim."),
    Reason.NOT_CONFIDENT: Term("neither sure enough",
                               "Neither the drafter nor the slim verifier was confident enough, so the full model "
                               "checked the word."),
    Reason.FREE_VERDICT: Term("full model already ran",
                              "The full model had already run in this round, so its word here costs nothing more."),
    Reason.COPY_NEEDS_EVIDENCE: Term("a copy needs a model's word",
                                     "A word copied from the text is never kept without a model agreeing."),
    Reason.AUDIT_DUE: Term("audit due", "Enough words kept on trust were waiting for the full model's check; it "
                                        "ran now."),
    Reason.AUDIT_REFUSED: Term("audit refused a word kept on trust",
                               "The full model refused an earlier word kept on trust; the text was cut back there "
                               "and its own word written instead."),
    Reason.STOP_TOKEN: Term("end of answer: always checked", "The end of the answer is never kept unchecked."),
    Reason.BONUS: Term("free extra word", "Every drafted word was kept; the full model's pass gave one more."),
    Reason.NO_DRAFT: Term("nothing drafted", "Nothing was drafted, so the full model wrote the word itself."),
}

VERDICTS: dict[str, Term] = {
    Why.ARGMAX.value: Term("the verifier's own top choice", "The word is the one the verifier itself would write."),
    "argmax differs": Term("not the verifier's top choice", "The verifier's own top choice is a different word."),
    Why.WITHIN_ROLLBACK.value: Term("close enough (BiLD)",
                                    "Not the verifier's top choice, but likely enough under BiLD's rollback limit."),
    Why.ROLLED_BACK.value: Term("too unlikely (BiLD)", "BiLD replaced a word the verifier found too unlikely."),
    Why.NOT_DEFERRED.value: Term("drafter trusted (cascade)", "The cascade rule let the drafter's word stand."),
    Why.NOT_DEFERRED_REPLACED.value: Term("drafter's top choice (cascade)",
                                          "The cascade rule kept the drafter's own top choice."),
    Why.DEFERRED_KEPT.value: Term("verifier's top choice (cascade)",
                                  "The cascade deferred to the verifier, and the word is its top choice."),
    Why.DEFERRED_REPLACED.value: Term("verifier disagreed (cascade)",
                                      "The cascade deferred to the verifier, which would write a different word."),
    Why.RATIO_KEPT.value: Term("kept by chance rule", "Sampling: kept with probability min(1, q/p), which keeps the "
                                                      "full model's distribution exact."),
    Why.RESAMPLED.value: Term("redrawn by chance rule",
                              "Sampling: rejected, and redrawn from what the drafter under-weighted."),
    Why.TRUSTED.value: Term("no verifier ran", "Kept as drafted: no verifier looked at it."),
    Why.OWN_TOKEN.value: Term("the full model's next word", "A free extra word from the full pass."),
}

STOPS: dict[str, Term] = {
    "eos": Term("the model ended its answer", "The model wrote its end-of-answer marker."),
    "max_new_tokens": Term("reached the length limit", "The run wrote as many tokens as the length slider allows."),
    "cancelled": Term("stopped by you", "The run was stopped before it finished."),
    "time-budget": Term("ran out of time", "The run hit the server's time limit before it finished."),
    "running": Term("still running", "The run has not finished yet."),
}

METRICS: dict[str, Term] = {
    "words_differing": Term("words differing", "Share of words inserted, deleted or changed compared with the full "
                                               "model's own answer to the same prompt (0 % = the same answer)."),
    "full_agreement": Term("token agreement", "Share of tokens that are the full model's own top choice given the "
                                              "text before them (a second, finer fidelity measure)."),
    "identical_to_full": Term("same text as the full model", "Whether the answer is token for token the full "
                                                             "model's own."),
    "common_prefix": Term("same opening", "How many tokens from the start match the full model's own answer."),
    "full_nll": Term("full model's surprise", "How unlikely the full model finds this text, on average per token "
                                              "(lower = more like what it would write)."),
    "modelled_speedup": Term("speed-up (modelled)", "How many times faster than plain decoding these decisions would "
                                                    "run on an accelerator, by the cost model. Not a measurement."),
    "modelled_cost": Term("cost (full-model passes)", "The run's price in full-model passes, by the cost model."),
    "rejection_rate": Term("drafts rejected", "Share of drafted tokens that did not end up in the answer: the one a "
                                              "verifier refused, the ones drafted after it, and copies an audit cut."),
    "accepted": Term("drafts kept", "Drafted tokens that ended up in the answer, by any tier."),
    "drafted": Term("tokens drafted", "Tokens the drafter proposed, over all rounds."),
    "rounds": Term("rounds", "Draft-and-check cycles; plain decoding has one per token."),
    "tokens": Term("tokens written", "Tokens in the answer."),
    "rolled_back": Term("cut by the audit", "Tokens kept on trust that the full model's audit later cut."),
    "mean_accepted_length": Term("drafts kept per round", "Kept draft tokens per round, every round counted."),
    "mean_acceptance_length": Term("tokens per drafting round",
                                   "1 + drafts kept per round that drafted (vLLM's mean acceptance length)."),
    "tokens_per_round": Term("tokens per round", "Tokens written per round, the verifier's own token included."),
    "full_calls_per_token": Term("full-model calls per token", "How often the full model ran, per token written."),
    "tokens_per_s": Term("tokens per second (measured)", "Measured on this machine's CPU."),
    "wall_s": Term("wall time (measured)", "Seconds the run took on this machine."),
    "timing_complete": Term("timing complete", "Every pass ran for real (none replayed from the memo)."),
    "stop_reason": Term("why it stopped", "How the run ended."),
    "expectations_met": Term("task checks met", "The prompt's checkable expectations this answer meets."),
}

UNITS: dict[str, Term] = {
    "nats/token": Term("per token (lower is closer)", "Measured in nats, the natural-log unit of surprise."),
    "cost_units": Term("full-model passes", "One unit is the cost of one full-model pass over one token."),
}

MODES: dict[str, Term] = {
    "plain": Term("plain decoding", "The full model alone, one pass per token: the reference."),
    "sd": Term("classic speculative decoding", "A drafter guesses, the full model checks every guess: exact."),
    "via": Term("VIA-SD (three tiers)", "Keep, slim-check or full-check each guess, by confidence."),
}

DRAFTERS: dict[str, Term] = {
    "self": Term("the model itself, layers skipped", "The verifier with many layers skipped drafts for itself."),
    "model": Term("a smaller model", "A separate small model with the same tokenizer drafts."),
    "ngram": Term("prompt lookup (copying)", "Copies what followed the same words earlier in the text; free."),
    "hybrid": Term("copying, else a smaller model", "Copies from the text when it matches, and asks a smaller "
                                                    "model with the same tokenizer otherwise."),
}

COPY_EVIDENCE: dict[str, Term] = {
    "slim": Term("the slim verifier must agree", "A copy is kept unchecked only if the slim verifier is sure too."),
    "verifier": Term("always checked", "Copies never skip the check: a verifier decides every copied word."),
    "statistic": Term("trusted unchecked", "Copies are trusted on the lookup statistic alone (can copy back typos)."),
    "audit": Term("kept on trust, audited", "What tiers 1 and 2 keep (copies, and the drafter's own words when "
                                            "greedy) stands at once; the full model's next pass checks it and cuts "
                                            "the text back to the first word it refuses."),
}

TRUST: dict[str, Term] = {
    "audited": Term("kept on trust, then audited", "Kept before the full model checked it; its next pass did, and "
                                                   "the word stands."),
    "awaiting": Term("kept on trust, audit pending", "Kept before the full model checked it; its next pass will."),
}

SIGNALS: dict[str, Term] = {
    "prob": Term("probability", "The probability the model gives the chosen token."),
    "margin": Term("margin", "Top-1 minus top-2 probability."),
    "entropy": Term("certainty", "1 − entropy / log(vocabulary size)."),
}

ROLES: dict[str, Term] = {
    "drafter": Term("drafter", "The cheap model (or copier) that guesses words."),
    "slim": Term("slim verifier", "The full model with some layers skipped."),
    "full": Term("full model", "The model whose answer is the reference."),
}

_TABLES: dict[str, dict] = {"outcome": OUTCOMES, "reason": REASONS, "verdict": VERDICTS, "stop": STOPS,
                            "metric": METRICS, "unit": UNITS, "mode": MODES, "drafter": DRAFTERS,
                            "copy_evidence": COPY_EVIDENCE, "signal": SIGNALS, "role": ROLES, "tier": TIERS,
                            "trust": TRUST}


def term(kind: str, code: object) -> Term:
    """The Term for `code` in vocabulary `kind` ("outcome", "reason", ...); the code itself when unknown."""
    key: object = getattr(code, "value", code)
    if kind == "tier":
        key = Tier(code) if code in set(Tier) else code
    return _TABLES[kind].get(key) or Term(str(key), "")


def name(kind: str, code: object) -> str:
    """The short plain name of an engine code (see `term`)."""
    return term(kind, code).name


def meaning(kind: str, code: object) -> str:
    """The one-sentence meaning of an engine code; "" when unknown."""
    return term(kind, code).meaning


def detail(kind: str, code: object) -> str:
    """For tooltips' details: the plain name, then the engine's code in brackets (codes stay findable)."""
    shown = name(kind, code)
    raw = str(getattr(code, "value", code))
    return shown if shown == raw else f"{shown} [{raw}]"


def metric_label(key: str) -> str:
    """The on-screen label of a `core.analysis.metrics.summarize` key (or a table column named after one)."""
    return name("metric", key)
