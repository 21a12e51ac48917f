"""VIA-SD decoding: one loop for plain decoding, classic speculative decoding and VIA-SD.

The algorithm (one round; `_Decoder.run_round` below is this box in code, line for line)
--------------------------------------------------------------------------------------
1. Draft.  The drafter proposes up to gamma tokens d_1..d_g, each with confidence c_j
   (plain decoding drafts nothing).
2. Route each draft token, left to right (`core.decoding.tiers.assign_tier`, which also says why):
   * Tier 1, direct accept: c_j >= tau_accept -> keep d_j; no verifier runs for it.
     A stop token never takes tier 1: it would end the answer unverified.
   * Tier 2, slim verifier: otherwise the slim verifier (the full model with only its routed
     layers, its own KV cache) scores the whole draft in one batched pass, run at most once per
     round. If its confidence s_j >= tau_slim it decides: accept d_j, or reject it and emit its
     own token (regeneration), which ends the round.
   * Tier 3, full verifier: otherwise the full model scores every position it has not processed
     yet, the whole draft included, in one batched pass, and decides: accept, or correct and end
     the round.
   Choices where the definition is silent, made here once:
   * Free verdicts. Once the full verifier has run in a round, it decides every later token of that
     round: its verdicts are exact and already paid for. A slim pass, once run, is reused for later
     tokens, but tier 1 still comes first for them.
   * Audited copies (`copy_evidence="audit"`, prompt lookup). A copy that passes tier 1 on the
     lookup statistic is kept provisionally, as is one tier 2 keeps. The full model must process every kept token anyway
     (its KV cache catches up in its next pass), so that pass also audits them, free: at the first
     it refuses, the output is cut back there and the full model's token is written instead (the
     round's own draft is dropped). The full pass runs at the latest when `audit_span` tokens wait
     or when the answer ends (cap or stop token), so no answer ends unaudited. Greedy output then equals
     the full model's (sampling too while tier 2 is off); speed comes from auditing many copies in one pass.
   * Bonus token. When every draft token was kept and the full verifier's pass covered the whole
     draft, its prediction after the last draft token is emitted too (outcome full-bonus), as in
     classic SD. No bonus comes from the slim verifier or the drafter. With an empty draft (plain
     decoding, or prompt lookup with no match) that same prediction is the round's only token.
3. The round ends at the first rejection or when the draft is used up; stop at EOS or the cap.

Classic SD is this loop with tiers 1 and 2 switched off (both thresholds 1.0); plain decoding is
this loop with no drafter. A verifier judges a token with a verification rule: `ExactRule`
(greedy argmax match, or speculative rejection sampling: tier 3 alone is exact in distribution) or
one of the lossy baselines named by `DecodeConfig.verify_rule`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator

import torch

from core.config import DecodeConfig
from core.decoding.confidence import confidences
from core.decoding.cost import CostModel
from core.decoding.drafters import Draft, Drafter, HybridDrafter, ModelDrafter, PromptLookupDrafter
from core.decoding.layer_routes import resolve_route
from core.decoding.policies import RULES
from core.decoding.sampling import ExactRule, Sampler, Verdict
from core.decoding.scorer import Scorer, ScorerCall
from core.decoding.tiers import Outcome, Reason, Routing, Tier, assign_tier, fires, outcome_of
from core.decoding.timing import Stopwatch
from core.errors import ConfigError
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt, stop_token_ids
from core.trace import CallRecord, RoundRecord, TokenRecord, Trace

__all__ = ["encode_prompt", "generate", "iter_generate", "stop_token_ids"]

TRUST_AFTER = 2
"""Under copy_evidence "audit", copies are kept on trust only after the full model kept a whole copy in this
many rounds in a row (and again after any refusal): one was not enough on the grounded prompts, where a
single refused stretch of trusted copies cost 2-5 % of a run (python -m core.benchmark; README)."""


class SlimGate:
    """Tier 2 pays only when its pass spares the round a full pass; otherwise it is pure overhead.

    A slim pass "hits" when the round it ran in ended without a full pass. While fewer than
    `min_hit_rate` of the last `window` slim passes hit, tier 2 is skipped (its tokens go straight to
    the full verifier, so the round costs what classic SD's does), except every `probe_every`-th
    skipped round, which tries the slim pass again so the gate can reopen.
    """

    def __init__(self, min_hit_rate: float, window: int = 8, probe_every: int = 8) -> None:
        self.min_hit_rate, self.probe_every = min_hit_rate, probe_every
        self.recent: deque[bool] = deque(maxlen=window)
        self.skipped = 0

    def allows(self) -> bool:
        """Whether this round may run the slim pass."""
        if self.min_hit_rate <= 0.0 or len(self.recent) < (self.recent.maxlen or 0):
            return True
        if sum(self.recent) / len(self.recent) >= self.min_hit_rate:
            return True
        self.skipped += 1
        return self.skipped % self.probe_every == 0

    def record(self, slim_ran: bool, full_ran: bool) -> None:
        if slim_ran:
            self.recent.append(not full_ran)


class VerifierPass:
    """One verifier's batched pass over a round's draft, run the first time anything asks for it.

    `ran` says whether it has run; `q(j)`, `best(j)` and `confidence(j)` read draft position j.
    The pass may also cover `earlier` tokens kept before the draft (copies awaiting their audit):
    they sit at draft positions -earlier .. -1.
    Distributions stay on the device; argmax and confidence of every position come to the host in
    one transfer per pass.
    """

    def __init__(self, scorer: Scorer, sequence: list[int], first: int, last: int, sampler: Sampler,
                 signal: str, on_call: Callable[[Scorer, ScorerCall], None], earlier: int = 0) -> None:
        self.scorer, self.sequence, self.first, self.last = scorer, sequence, first - earlier, last
        self.earlier = earlier
        self.sampler, self.signal, self.on_call = sampler, signal, on_call
        self.ran = False
        self._q: torch.Tensor | None = None
        self._best: list[int] = []
        self._confidence: list[float] = []

    def run(self) -> None:
        logits, call = self.scorer.predict(self.sequence, self.first, self.last)
        self._q = self.sampler.distribution(logits)
        best = torch.argmax(self._q, dim=-1)
        both = torch.stack([best.float(), confidences(self._q, best, self.signal)]).tolist()
        self._best, self._confidence = [int(b) for b in both[0]], both[1]
        self.ran = True
        self.on_call(self.scorer, call)

    def _ready(self) -> VerifierPass:
        """Run the pass the first time anything asks for one of its positions."""
        if not self.ran:
            self.run()
        return self

    def q(self, j: int) -> torch.Tensor:
        return self._ready()._q[self.earlier + j]

    def best(self, j: int) -> int:
        return self._ready()._best[self.earlier + j]

    def confidence(self, j: int) -> float:
        return self._ready()._confidence[self.earlier + j]

    def recorded_confidence(self, j: int) -> float | None:
        """The confidence at j if this pass ran and covered j, else None (for the trace)."""
        row = self.earlier + j
        return self._confidence[row] if self.ran and 0 <= row < len(self._confidence) else None


def verification_rule(config: DecodeConfig, sampler: Sampler) -> object:
    """The rule verifiers judge draft tokens with: exact, or a lossy baseline from core.decoding.policies.
    A rule has `judge(q, token, p, best) -> Verdict`."""
    if config.verify_rule == "exact":
        return ExactRule(sampler)
    if config.verify_rule not in RULES:
        raise ConfigError(f"unknown verify_rule '{config.verify_rule}': use exact or {', '.join(RULES) or '-'}")
    return RULES[config.verify_rule](sampler, config.verify_alpha)


class _Decoder:
    """The state of one run: the three scorers, the drafter, the rule and the cost of each call."""

    def __init__(self, bundle: ModelBundle, config: DecodeConfig, replay: bool) -> None:
        self.config = config.validate()
        verifier = bundle.verifier
        self.replay = replay
        self.pieces = _TextPieces(verifier.tokenizer)
        self.generated = 0  # tokens emitted so far: the next record's position
        self.memo = bundle.memo
        self.cost = CostModel(verifier.model)
        self.sampler = Sampler(config.temperature, config.top_p, config.seed)
        self.rule = verification_rule(config, self.sampler)
        self.stop_ids = stop_token_ids(verifier.model, verifier.tokenizer)
        self.full = self._scorer("full", verifier, "full")
        self.slim = self._scorer("slim", verifier, config.slim_route)
        self.drafter: Drafter | None = self._make_drafter(bundle)
        self.tau_accept, self.tau_slim = config.effective_thresholds()
        self.slim_gate = SlimGate(config.slim_min_hit_rate)
        # Under copy_evidence "audit": (sequence position, token) of each token tiers 1 and 2 kept that no full
        # pass has seen yet, a suffix of the output: copies, and greedy model drafts (`_audited`).
        self.awaiting: list[tuple[int, int]] = []
        self.kept_copies = 0  # rounds in a row in which the full model kept a whole copy (audit's trust signal)

    def _scorer(self, role: str, loaded: object, route_spec: object) -> Scorer:
        route = resolve_route(route_spec, loaded.model.config)
        scorer = Scorer(role, loaded.model, route, self.memo, loaded.name, read_memo=self.replay)
        return scorer

    def _make_drafter(self, bundle: ModelBundle) -> Drafter | None:
        c = self.config
        if c.mode == "plain":
            return None
        if c.drafter == "ngram":
            return PromptLookupDrafter(c.ngram_size, c.draft_stop_below)
        if c.drafter in ("model", "hybrid"):
            if bundle.drafter is None:
                raise ConfigError(f"drafter '{c.drafter}' needs a separate drafter model: load one with the bundle")
            scorer = self._scorer("drafter", bundle.drafter, "full")
            description = bundle.drafter.name
        else:
            scorer = self._scorer("drafter", bundle.verifier, c.draft_route)
            description = f"self ({scorer.route.describe()})"
        head = bundle.verifier.model.get_output_embeddings()
        vocab = int(head.weight.shape[0]) if head is not None else None
        drafter = ModelDrafter(scorer, self.sampler, c.draft_signal, self.stop_ids, description, c.draft_stop_below,
                               vocab_size=vocab)
        return HybridDrafter(PromptLookupDrafter(c.ngram_size), drafter) if c.drafter == "hybrid" else drafter

    def run_round(self, tokens: list[int], budget: int,
                  index: int) -> tuple[list[TokenRecord], RoundRecord, list[TokenRecord]]:
        """One round of the algorithm box: draft, route each token through the tiers, maybe a bonus.
        Returns the round's tokens, its record and the round's own tokens an audit refused; when the
        audit refuses earlier tokens, `round_.rolled_back` says how many to cut from the output first."""
        # 1. Draft.
        draft = self.drafter.propose(tokens, min(self.config.gamma, budget)) if self.drafter else Draft()
        round_ = RoundRecord(index=index, draft_tokens=list(draft.tokens), accepted=0, emitted=0,
                             calls=[self._call(self.drafter.scorer, c) for c in draft.calls])
        n, sequence = len(tokens), tokens + draft.tokens

        def record_call(scorer: Scorer, call: ScorerCall) -> None:
            round_.calls.append(self._call(scorer, call))

        signal = self.config.slim_signal
        slim = VerifierPass(self.slim, sequence, n, n + len(draft) - 1, self.sampler, signal, record_call)
        full = VerifierPass(self.full, sequence, n, n + len(draft), self.sampler, signal, record_call,
                            earlier=len(self.awaiting))

        # 2. Route each draft token, left to right (tier 2 only when its gate allows it this round).
        slim_allowed = self.slim_gate.allows()
        tau_slim = self.tau_slim if slim_allowed else 1.0
        records: list[TokenRecord] = []
        for j, token in enumerate(draft.tokens):
            routing = assign_tier(self._draft_confidence(draft, j, slim, full, slim_allowed),
                                  lambda j=j: slim.confidence(j), self.tau_accept, tau_slim, full_already_ran=full.ran,
                                  stop_token=token in self.stop_ids)
            if routing.reason is Reason.NOT_CONFIDENT and draft.probs is None and fires(draft.confidences[j],
                                                                                       self.tau_accept):
                routing = Routing(Tier.FULL, Reason.COPY_NEEDS_EVIDENCE)  # the copy statistic alone would have passed
            if routing.tier is not Tier.FULL and self._audited(draft) and len(self.awaiting) >= self.config.audit_span:
                routing = Routing(Tier.FULL, Reason.AUDIT_DUE)  # enough tokens wait: the full pass runs now
            if routing.tier is Tier.FULL and (cut := self._audit(index, round_, records, n, full, slim)):
                return cut  # the full pass runs now: it audited the kept copies first and refused one
            if routing.tier is Tier.DRAFT:  # tier 1: trusted as drafted
                verdict = Verdict(True, token, "draft trusted, no verifier ran")
            elif routing.tier is Tier.SLIM:  # tier 2: the slim verifier decides
                verdict = self.rule.judge(slim.q(j), token, draft.p(j), slim.best(j))
            else:  # tier 3: the full verifier decides
                verdict = self.rule.judge(full.q(j), token, draft.p(j), full.best(j))
            records.append(self._token(index, verdict, routing, draft, slim, full, j))
            if routing.tier is not Tier.FULL and self._audited(draft):
                self.awaiting.append((n + j, verdict.token))
            round_.accepted += verdict.accepted
            if not verdict.accepted or verdict.token in self.stop_ids:
                break
        else:
            # Bonus: the full pass's own next token after a fully kept draft (or the only token of a plain round).
            if not draft.tokens or (full.ran and len(records) < budget):
                if cut := self._audit(index, round_, records, n, full, slim):
                    return cut
                j = len(draft)
                bonus = Verdict(False, self.sampler.pick(full.q(j)), "full verifier's own next token")
                routing = Routing(Tier.FULL, Reason.BONUS if draft.tokens else Reason.NO_DRAFT)
                records.append(self._token(index, bonus, routing, draft, slim, full, j))
        if self.awaiting and (len(records) >= budget or records[-1].token_id in self.stop_ids):  # none ends unaudited
            if cut := self._audit(index, round_, records, n, full, slim):
                return cut
        round_.emitted = len(records)
        self.slim_gate.record(slim.ran, full.ran)
        if full.ran and draft.tokens and draft.probs is None:  # the full model judged a copy: it kept all, or not
            self.kept_copies = self.kept_copies + 1 if round_.accepted == len(draft) else 0
        return records, round_, []

    def _audited(self, draft: Draft) -> bool:
        """Whether tiers 1 and 2 keep this round's tokens provisionally, for the full model to audit later: copies
        under copy_evidence "audit", and a model's drafts too when greedy (the audit is then an argmax match: exact)."""
        return self.config.copy_evidence == "audit" and (draft.probs is None or self.sampler.greedy)

    def _audit(self, index: int, round_: RoundRecord, records: list[TokenRecord], n: int, full: VerifierPass,
               slim: VerifierPass) -> tuple[list[TokenRecord], RoundRecord, list[TokenRecord]] | None:
        """Judge every token awaiting audit with the full pass (which covers them: its KV cache had to catch
        up over them anyway; the draft starts at sequence position n). None when all stand (nothing awaits
        any more); else the round's result after cutting back to the first refused (`_roll_back`)."""
        waiting, self.awaiting = self.awaiting, []
        for position, token in waiting:
            verdict = self.rule.judge(full.q(position - n), token, None, full.best(position - n))
            if not verdict.accepted:
                correction = Verdict(False, verdict.token, f"audit refused a trusted copy ({verdict.why})")
                return self._roll_back(index, round_, records, position, correction, n, full, slim.ran)
        return None

    def _roll_back(self, index: int, round_: RoundRecord, records: list[TokenRecord], position: int,
                   verdict: Verdict, n: int, full: VerifierPass,
                   slim_ran: bool) -> tuple[list[TokenRecord], RoundRecord, list[TokenRecord]]:
        """Cut the output back to the refused token and write the full model's token there; the round ends.
        Tokens cut before this round are counted in `round_.rolled_back`; this round's are returned."""
        cut = n + len(records) - position
        dropped = records[len(records) - min(cut, len(records)):]
        kept = records[:len(records) - len(dropped)]
        round_.rolled_back = cut - len(dropped)
        self.generated -= cut
        self.pieces.truncate(cut)
        j = position - n  # < 0 for a token of an earlier round
        correction = self._record(index, verdict, Routing(Tier.FULL, Reason.AUDIT_REFUSED), Outcome.FULL_CORRECT,
                                  None, None, full.recorded_confidence(j))
        round_.accepted = len(kept)
        round_.emitted = len(kept) + 1
        self.slim_gate.record(slim_ran, True)
        self.kept_copies = 0
        return kept + [correction], round_, dropped

    def _draft_confidence(self, draft: Draft, j: int, slim: VerifierPass, full: VerifierPass,
                          slim_allowed: bool = True) -> float:
        """What tier 1 reads for draft token j. A copy (a draft with no distribution) carries a
        statistic of the text, not a model's belief: under `copy_evidence` "slim" it counts only as
        far as the slim verifier agrees (its probability of the copied token; the slim pass runs only
        when the statistic alone would pass tier 1), under "verifier" (or while the slim gate is
        shut) it never passes tier 1; under "audit" the statistic counts, as the full model audits later."""
        statistic = draft.confidences[j]
        evidence = self.config.copy_evidence
        if draft.probs is not None or evidence == "statistic" or full.ran:
            return statistic
        if evidence == "audit":  # model evidence: the full model kept whole copies in its last TRUST_AFTER verdicts
            return statistic if self.kept_copies >= TRUST_AFTER else float("-inf")
        if evidence == "verifier" or not slim_allowed:
            return float("-inf")  # below every threshold, 0.0 included
        if not fires(statistic, self.tau_accept):
            return statistic  # tier 1 would not take it anyway: no slim pass on its account
        return min(statistic, float(slim.q(j)[draft.tokens[j]]))

    def _token(self, index: int, verdict: Verdict, routing: Routing, draft: Draft, slim: VerifierPass,
               full: VerifierPass, j: int) -> TokenRecord:
        """The record of draft position j (or of the bonus after the draft), with every confidence seen."""
        if j < len(draft):
            outcome = outcome_of(routing.tier, verdict.accepted)
        else:
            outcome = Outcome.FULL_BONUS if draft.tokens else Outcome.PLAIN
        return self._record(index, verdict, routing, outcome, draft.confidences[j] if j < len(draft) else None,
                            slim.recorded_confidence(j), full.recorded_confidence(j))

    def _record(self, index: int, verdict: Verdict, routing: Routing, outcome: Outcome, draft_confidence: float | None,
                slim_confidence: float | None, full_confidence: float | None) -> TokenRecord:
        """The one place a TokenRecord is built, complete (its text piece and position included)."""
        self.generated += 1
        return TokenRecord(
            position=self.generated - 1, token_id=verdict.token, text=self.pieces.add(verdict.token),
            round=index, tier=int(routing.tier), outcome=outcome.value, reason=routing.reason.value,
            verdict=verdict.why, draft_confidence=draft_confidence, slim_confidence=slim_confidence,
            full_confidence=full_confidence)

    def _call(self, scorer: Scorer, call: ScorerCall) -> CallRecord:
        return CallRecord(role=scorer.role, tokens_processed=call.tokens_processed, layers=call.layers,
                          cost_units=self.cost.cost_units(scorer.model, scorer.route, call.tokens_processed),
                          wall_s=call.wall_s, from_memo=call.from_memo)

    def models_info(self, bundle: ModelBundle) -> dict:
        return {
            "verifier": bundle.verifier.name,
            "drafter": self.drafter.describe() if self.drafter else "none",
            "slim_route": self.slim.route.describe(),
            "num_layers": self.full.route.num_layers,
            "device": str(bundle.verifier.device),
            "dtype": str(bundle.verifier.dtype).replace("torch.", ""),
        }


class _TextPieces:
    """Decodes token by token without breaking multi-byte characters: piece = new suffix of the text."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.text = ""

    def truncate(self, count: int) -> None:
        """Forget the last `count` tokens (an audit cut them)."""
        self.ids = self.ids[:len(self.ids) - count]
        self.text = self.tokenizer.decode(self.ids, skip_special_tokens=False) if self.ids else ""
        if self.text.endswith("\ufffd"):
            self.text = self.text.rstrip("\ufffd")

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=False)
        if text.endswith("\ufffd"):
            return ""  # an incomplete UTF-8 sequence: the next token completes it
        piece, self.text = text[len(self.text):], text
        return piece


def iter_generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
                  should_stop: Callable[[], bool] | None = None,
                  time_budget_s: float | None = None) -> Iterator[Trace]:
    """Run one generation, yielding the growing trace after every round (for streaming UIs).

    `replay=True` lets predictions come from the bundle's memo (exactly the same tokens, no wall
    time); `replay=False` runs every forward pass for real, for honest timing. `trace.wall_s` counts
    decoding only, not the time the consumer spends between yields. A run stopped by `should_stop`
    or past `time_budget_s` ends with its partial trace (`trace.partial`).
    """
    decoder = _Decoder(bundle, config, replay)
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt, config.chat_template)
    trace = Trace(prompt=prompt, prompt_token_count=len(prompt_ids), config=config.to_dict(),
                  models=decoder.models_info(bundle))
    tokens = list(prompt_ids)
    started = time.monotonic()
    while len(trace.tokens) < config.max_new_tokens:
        if should_stop is not None and should_stop():
            trace.stop_reason = "cancelled"
            break
        if time_budget_s is not None and time.monotonic() - started > time_budget_s:
            trace.stop_reason = "time-budget"
            break
        with Stopwatch(bundle.verifier.device) as watch:
            records, round_, dropped = decoder.run_round(tokens, config.max_new_tokens - len(trace.tokens),
                                                         len(trace.rounds))
        round_.wall_s = watch.seconds
        if round_.rolled_back:  # an audit refused a trusted copy of an earlier round: cut the output back to it
            trace.rolled_back.extend(trace.tokens[-round_.rolled_back:])
            del trace.tokens[-round_.rolled_back:], tokens[-round_.rolled_back:]
        trace.rolled_back.extend(dropped)
        trace.tokens.extend(records)
        tokens.extend(r.token_id for r in records)
        trace.rounds.append(round_)
        trace.wall_s += round_.wall_s
        trace.plain_cost_units = decoder.cost.plain_cost(len(prompt_ids), len(trace.tokens))
        if tokens[-1] in decoder.stop_ids:
            trace.stop_reason = "eos"
            break
        yield trace
    else:
        trace.stop_reason = "max_new_tokens"
    yield trace


def generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
             fidelity: bool = False, should_stop: Callable[[], bool] | None = None,
             time_budget_s: float | None = None) -> Trace:
    """Run one generation to the end and return its trace (optionally with fidelity measured)."""
    *_, trace = iter_generate(bundle, prompt, config, replay=replay, should_stop=should_stop,
                              time_budget_s=time_budget_s)
    if fidelity:
        from core.analysis.fidelity import attach_fidelity  # fidelity does not import the engine: no cycle

        attach_fidelity(bundle, trace)
    return trace
