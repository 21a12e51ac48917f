"""VIA-SD decoding: one loop for plain decoding, classic speculative decoding and VIA-SD.

The algorithm (one round; `_Decoder.run_round` below is this box in code; README.md here walks its steps)
---------------------------------------------------------------------------------------------------------
1. Draft.  The drafter proposes up to gamma tokens d_1..d_g, each with confidence c_j
   (plain decoding drafts nothing).
2. Route each draft token, left to right (`core.decoding.tiers.decide_tier(facts, policy)`, the whole rule, which
   also says why; the run's `RoundPolicy`, core.round_policy, says what the settings make of each tier):
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
   * Kept on trust (`copy_evidence="audit"`). What tiers 1 and 2 keep of a prompt-lookup copy, and of a model's
     draft when greedy, waits on trust. The full model must process every kept token anyway (its KV cache
     catches up in its next pass), so that pass also audits them, free: at the first it refuses, the output is
     cut back there and the full model's token is written instead (the round's own draft is dropped). The full
     pass runs at the latest when `audit_span` tokens wait or when the answer ends (cap or stop token), so no
     answer ends unaudited. Greedy output then equals the full model's (sampling too while tier 2 is off).
   * Bonus token. When every draft token was kept and the full verifier's pass covered the whole
     draft, its prediction after the last draft token is emitted too (outcome full-bonus), as in
     classic SD. No bonus comes from the slim verifier or the drafter. With an empty draft (plain
     decoding, or prompt lookup with no match) that same prediction is the round's only token.
3. The round ends at the first rejection or when the draft is used up; the slim gate and the audit learn from it
   in one feedback call (`core.decoding.adaptive.Adaptive.update`); stop at EOS or the cap.

Classic SD is this loop with tiers 1 and 2 switched off; plain decoding is this loop with no drafter. A verifier
judges a token with a verification rule: `ExactRule` (greedy argmax match, or speculative rejection sampling: tier
3 alone is exact in distribution) or one of the lossy baselines named by `DecodeConfig.verify_rule`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch

from core.config import DecodeConfig
from core.decoding.adaptive import Adaptive, RoundFeedback, Waiting
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import CostProfile
from core.decoding.drafters import Draft, Drafter, make_drafter
from core.decoding.policies import verification_rule
from core.decoding.rounds import AuditResult, Output, RoundResult
from core.decoding.sampling import Sampler, Verdict
from core.decoding.scorer import Scorer, ScorerCall, VerifierPass
from core.decoding.tiers import TierFacts, decide_tier, outcome_of
from core.decoding.timing import Stopwatch
from core.models.layer_routes import resolve_route
from core.models.loading import ModelBundle
from core.models.precision import cpu_class
from core.models.prompting import encode_prompt, stop_token_ids, template_positions
from core.round_policy import RoundPolicy
from core.trace import CallRecord, RoundRecord, TierInputs, TokenRecord, Trace, UnwrittenDecision
from core.vocabulary import CopyEvidence, Outcome, Reason, Tier, TierDecision, Why

__all__ = ["encode_prompt", "generate", "iter_generate", "stop_token_ids"]


class _Decoder:
    """The state of one run: the three scorers, the drafter, the rule, the policy, the adaptive state, the prices."""

    def __init__(self, bundle: ModelBundle, config: DecodeConfig, replay: bool, prompt_tokens: int = 0,
                 profile: CostProfile | str | None = None, template: tuple[range, ...] = ()) -> None:
        self.config, self.replay, self.prompt_tokens = config.validate(), replay, prompt_tokens
        self.template = template  # the prompt's chat-template positions: prompt lookup never copies them
        verifier = bundle.verifier
        self.memo = bundle.memo
        self.scorers: list[Scorer] = []
        self.cost = CostModel(verifier.model, profile)
        self.sampler = Sampler(config.temperature, config.top_p, config.seed)
        self.rule = verification_rule(config, self.sampler)
        self.stop_ids = stop_token_ids(verifier.model, verifier.tokenizer)
        self.policy = RoundPolicy.of(self.config)  # built once: what the settings make of the tiers
        self.full = self._scorer("full", verifier, "full")
        self.slim = self._scorer("slim", verifier, config.slim_route)
        self.drafter: Drafter | None = make_drafter(config, self.policy.drafts, bundle, self._scorer, self.sampler,
                                                    self.stop_ids, template)
        self.adaptive = Adaptive(self.policy)

    def _scorer(self, role: str, loaded: object, route_spec: object) -> Scorer:
        route = resolve_route(route_spec, loaded.model.config)
        self.scorers.append(Scorer(role, loaded.model, route, self.memo, loaded.identity, read_memo=self.replay))
        return self.scorers[-1]

    def run_round(self, tokens: list[int], budget: int, index: int) -> RoundResult:
        """One round of the algorithm box (the module docstring), step for step. It decides and returns a
        `RoundResult`; `rounds.Output.apply` writes it into the trace."""
        n = len(tokens)  # the draft starts at sequence position n
        # 1. Draft: up to gamma tokens, each with the drafter's confidence c_j (plain decoding drafts nothing).
        draft = self.drafter.propose(tokens, min(self.config.gamma, budget)) if self.drafter else Draft()
        result = RoundResult(RoundRecord(index=index, draft_tokens=list(draft.tokens), accepted=0, emitted=0,
                                         calls=[self._call(self.drafter.scorer, c) for c in draft.calls]),
                             waiting=list(self.adaptive.audit.waiting))
        # 2. Prepare the slim and full passes over the whole draft; each runs the first time a token needs it,
        #    and then rolls its KV cache back to the longest common prefix with this text (`Scorer.rollback_to`):
        #    one rule undoes a rejected draft or an audit's cut, whatever way the last round ended.
        slim, full = self._passes(tokens + draft.tokens, n, len(draft), result)
        slim_open = self.adaptive.gate.allows()  # once per round: may tier 2 run its pass
        # 3. Route each draft token, left to right: the tier rule says who judges it and why.
        for j in range(len(draft)):
            facts = self._facts(draft, j, slim, full, slim_open, result)
            decision = decide_tier(facts, self.policy)
            # 3a. Before the full model judges, its pass audits what waits on trust; a refusal cuts the output back
            #     there and ends the round: this token is decided but never written.
            if decision.tier is Tier.FULL and result.take_audit(self._audit(result.waiting, n, full, index)):
                result.record.unwritten = UnwrittenDecision(
                    index, int(decision.tier), decision.reason.value, draft.confidences[j],
                    slim.recorded_confidence(j), facts.inputs(self._agreement(draft, j, slim)))
                break
            # 3b. Judge: tier 1 keeps the draft; tier 2 or 3 applies the verification rule.
            verdict = self._judge(decision.tier, slim if decision.tier is Tier.SLIM else full, draft, j)
            record = self._token(index, verdict, decision, draft, slim, full, j,
                                 facts.inputs(self._agreement(draft, j, slim)))
            result.tokens.append(record)
            if decision.tier is not Tier.FULL and self.policy.on_trust(draft.is_copy):
                result.keep_on_trust(n + j, record)
            result.record.accepted += verdict.accepted
            # 3c. The round ends at the first rejection (the verifier's own token was written) or a stop token.
            if not verdict.accepted or verdict.token in self.stop_ids:
                break
        else:
            # 4. Bonus: the full pass's own next token after a wholly kept draft (or a plain round's only token).
            if (not draft.tokens or (full.ran and len(result.tokens) < budget)) \
                    and not result.take_audit(self._audit(result.waiting, n, full, index)):
                bonus = Verdict(False, self.sampler.pick(full.q(len(draft))), Why.OWN_TOKEN)
                reason = Reason.BONUS if draft.tokens else Reason.NO_DRAFT
                result.tokens.append(self._token(index, bonus, TierDecision(Tier.FULL, reason), draft, slim, full,
                                                 len(draft)))
        # 5. No answer ends with tokens unaudited (cap or stop token): the full pass audits what still waits.
        ends = not result.refused and (len(result.tokens) >= budget or result.tokens[-1].token_id in self.stop_ids)
        if ends and result.waiting:
            result.take_audit(self._audit(result.waiting, n, full, index))
        if not result.refused:
            result.record.emitted = len(result.tokens)
        # 6. One feedback call: the slim gate and the audit learn from the round.
        judged_copy = full.ran and bool(draft.tokens) and draft.is_copy and not result.refused
        self.adaptive.update(RoundFeedback(slim_ran=slim.ran, full_ran=full.ran, refused=result.refused,
                                           whole_copy_kept=result.record.accepted == len(draft) if judged_copy
                                           else None, waiting=result.waiting))
        return result

    def _judge(self, tier: Tier, verifier: VerifierPass, draft: Draft, j: int) -> Verdict:
        """Draft token j's verdict: kept on the drafter's word (tier 1), else the verifier's rule on it."""
        if tier is Tier.DRAFT:
            return Verdict(True, draft.tokens[j], Why.TRUSTED)
        return self.rule.judge(verifier.q(j), draft.tokens[j], draft.p(j), verifier.best(j))

    def _passes(self, sequence: list[int], n: int, drafted: int, result: RoundResult
                ) -> tuple[VerifierPass, VerifierPass]:
        """The round's slim and full passes, prepared, not run (each runs the first time a token needs it). The full
        pass also covers every token since the first that waits on trust: its KV cache catches up over them anyway."""
        def record_call(scorer: Scorer, call: ScorerCall) -> None:
            result.record.calls.append(self._call(scorer, call))

        signal = self.config.slim_signal
        behind = n - result.waiting[0][0] if result.waiting else 0
        slim = VerifierPass(self.slim, sequence, n, n + drafted - 1, self.sampler, signal, record_call)
        full = VerifierPass(self.full, sequence, n, n + drafted, self.sampler, signal, record_call, earlier=behind)
        return slim, full

    def _facts(self, draft: Draft, j: int, slim: VerifierPass, full: VerifierPass, slim_open: bool,
               result: RoundResult) -> TierFacts:
        """Every fact besides the policy that decides draft token j's tier (core.decoding.tiers.decide_tier)."""
        token = draft.tokens[j]
        return TierFacts(draft.confidences[j], lambda: slim.confidence(j), lambda: float(slim.q(j)[token]),
                         is_copy=draft.is_copy, stop_token=token in self.stop_ids, full_already_ran=full.ran,
                         slim_open=slim_open, copies_trusted=self.adaptive.audit.trusted,
                         audit_due=len(result.waiting) >= self.policy.audit_span)

    def _agreement(self, draft: Draft, j: int, slim: VerifierPass) -> float | None:
        """The slim verifier's probability of a copied token, for its record, when copy evidence "slim" may read it
        and the slim pass has run (reading it then costs no pass)."""
        if not (draft.is_copy and slim.ran and self.policy.copy_evidence is CopyEvidence.SLIM):
            return None
        return float(slim.q(j)[draft.tokens[j]])

    def _audit(self, waiting: Waiting, n: int, full: VerifierPass, index: int) -> AuditResult:
        """The full pass judges every token waiting on trust (the draft starts at sequence position n), in order,
        up to the first it refuses: there the output is cut back and the full model's token written instead (its
        record in round `index`)."""
        audited = []
        for position, record in waiting:
            verdict = self.rule.judge(full.q(position - n), record.token_id, None, full.best(position - n))
            if not verdict.accepted:
                refused = TierDecision(Tier.FULL, Reason.AUDIT_REFUSED)
                correction = self._record(index, verdict, refused, Outcome.FULL_CORRECT, None, None,
                                          full.recorded_confidence(position - n))
                return AuditResult(audited, cut_at=position - self.prompt_tokens, correction=correction,
                                   kept=max(0, position - n), rolled_back=max(0, n - position))
            audited.append(record)
        return AuditResult(audited)

    def _token(self, index: int, verdict: Verdict, decision: TierDecision, draft: Draft, slim: VerifierPass,
               full: VerifierPass, j: int, inputs: TierInputs | None = None) -> TokenRecord:
        """The record of draft position j (or of the bonus after the draft), with every confidence seen and the
        facts the tier rule read (`inputs`; none for a bonus)."""
        if j < len(draft):
            outcome = outcome_of(decision.tier, verdict.accepted)
        else:
            outcome = Outcome.FULL_BONUS if draft.tokens else Outcome.PLAIN
        return self._record(index, verdict, decision, outcome, draft.confidences[j] if j < len(draft) else None,
                            slim.recorded_confidence(j), full.recorded_confidence(j), inputs)

    @staticmethod
    def _record(index: int, verdict: Verdict, decision: TierDecision, outcome: Outcome,
                draft_confidence: float | None, slim_confidence: float | None,
                full_confidence: float | None, inputs: TierInputs | None = None) -> TokenRecord:
        """A token's record as decided; its position and text are written when the round is applied."""
        return TokenRecord(
            position=-1, token_id=verdict.token, text="", round=index, tier=int(decision.tier),
            outcome=outcome.value, reason=decision.reason.value, verdict=verdict.why.value,
            draft_confidence=draft_confidence, slim_confidence=slim_confidence, full_confidence=full_confidence,
            inputs=inputs)

    def _call(self, scorer: Scorer, call: ScorerCall) -> CallRecord:
        """The call's record, priced once here by the run's profile; a prefill's prompt part is priced apart."""
        units = self.cost.cost_units(scorer.model, scorer.route, call.tokens_processed)
        beyond_prompt = max(1, call.tokens_processed - self.prompt_tokens + 1)
        prefill = units - self.cost.cost_units(scorer.model, scorer.route, beyond_prompt) if call.prefill else 0.0
        return CallRecord(role=scorer.role, tokens_processed=call.tokens_processed, layers=call.layers,
                          cost_units=units, wall_s=call.wall_s, from_memo=call.from_memo, prefill=call.prefill,
                          prefill_units=prefill)


def models_info(decoder: _Decoder, bundle: ModelBundle) -> dict:
    """The trace's model description."""
    return {
        "verifier": bundle.verifier.name,
        "drafter": decoder.drafter.describe() if decoder.drafter else "none",
        "slim_route": decoder.slim.route.describe(),
        "num_layers": decoder.full.route.num_layers,
        "device": str(bundle.verifier.device),
        "dtype": str(bundle.verifier.dtype).replace("torch.", ""),
        "verifier_quant": bundle.verifier.verifier_quant, "cpu_class": cpu_class(bundle.verifier.device),
        "threads": torch.get_num_threads(),  # a CPU's pace depends on it (core.analysis.plain_pace)
    }


def iter_generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
                  should_stop: Callable[[], bool] | None = None, time_budget_s: float | None = None,
                  profile: CostProfile | str | None = None) -> Iterator[Trace]:
    """Run one generation, yielding the growing trace after every round (for streaming UIs).

    `replay=True` lets predictions come from the bundle's memo (exactly the same tokens, no wall
    time); `replay=False` runs every forward pass for real, for honest timing. `trace.wall_s` counts
    decoding only, not the time the consumer spends between yields. A run stopped by `should_stop`
    or past `time_budget_s` ends with its partial trace (`trace.partial`). Every call is priced once, by
    `profile` (a name in core/profiles, a CostProfile; None: the modelled accelerator).
    """
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt, config.chat_template)
    template = template_positions(bundle.verifier.tokenizer, prompt_ids, config.chat_template)
    decoder = _Decoder(bundle, config, replay, len(prompt_ids), profile, template)
    trace = Trace(prompt=prompt, prompt_token_count=len(prompt_ids), config=decoder.config, policy=decoder.policy,
                  models=models_info(decoder, bundle), cost_profile=decoder.cost.profile.name,
                  cost_label=decoder.cost.label, prefill_units=decoder.cost.plain_cost(len(prompt_ids), 1))
    output = Output(trace, prompt_ids, bundle.verifier.tokenizer)
    started = time.monotonic()
    while len(trace.tokens) < config.max_new_tokens:
        if should_stop is not None and should_stop():
            trace.stop_reason = "cancelled"
            break
        if time_budget_s is not None and time.monotonic() - started > time_budget_s:
            trace.stop_reason = "time-budget"
            break
        with Stopwatch(bundle.verifier.device) as watch:
            result = decoder.run_round(output.ids, config.max_new_tokens - len(trace.tokens), len(trace.rounds))
        result.record.wall_s = watch.seconds
        output.apply(result)
        trace.wall_s += result.record.wall_s
        trace.plain_cost_units = trace.plain_cost_after(len(trace.tokens))
        trace.equals_full_greedy, trace.cost_label = trace.exact_by_construction(), decoder.cost.label
        if output.ids[-1] in decoder.stop_ids:
            trace.stop_reason = "eos"
            break
        yield trace
    else:
        trace.stop_reason = "max_new_tokens"
    for scorer in decoder.scorers:  # their KV caches serve the next re-route (core.models.kv_pool)
        scorer.release()
    yield trace


def generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
             should_stop: Callable[[], bool] | None = None, time_budget_s: float | None = None,
             profile: CostProfile | str | None = None) -> Trace:
    """Run one generation to the end and return its trace. Fidelity is measured by the caller
    (`core.analysis.fidelity.attach_fidelity`): decoding never reaches up into analysis."""
    *_, trace = iter_generate(bundle, prompt, config, replay=replay, should_stop=should_stop,
                              time_budget_s=time_budget_s, profile=profile)
    return trace
