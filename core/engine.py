"""VIA-SD decoding: one loop for plain decoding, classic speculative decoding and VIA-SD.

The algorithm (one round; `_round` below is this box in code)
-------------------------------------------------------------
1. Draft.  The drafter proposes up to gamma tokens d_1..d_g, each with confidence c_j
   (plain decoding drafts nothing).
2. Route each draft token, left to right:
   * Tier 1, direct accept: c_j >= tau_accept -> keep d_j; no verifier runs for it.
   * Tier 2, slim verifier: otherwise the slim verifier (the full model with only its routed
     layers, its own KV cache) scores the whole remaining draft in one batched pass, run at most
     once per round. If its confidence s_j >= tau_slim it decides: accept d_j, or reject it and emit
     its own token (regeneration), which ends the round.
   * Tier 3, full verifier: otherwise the full model scores every position it has not processed
     yet, the whole draft included, in one batched pass, and decides: accept, or correct and end
     the round.
   Choices where the definition is silent, made here once:
   * Free verdicts. Once the full verifier has run in a round, it decides every later token of that
     round: its verdicts are exact and already paid for. A slim pass, once run, is reused for later
     tokens, but tier 1 still comes first for them.
   * Bonus token. When every draft token was kept and the full verifier's pass covered the whole
     draft, its prediction after the last draft token is emitted too (outcome full-bonus), as in
     classic SD. No bonus comes from the slim verifier or the drafter. With an empty draft (plain
     decoding, or prompt lookup with no match) that same prediction is the round's only token.
3. The round ends at the first rejection or when the draft is used up; stop at EOS or the cap.

Classic SD is this loop with tiers 1 and 2 switched off (both thresholds 1.0); plain decoding is
this loop with no drafter. Greedy verifiers accept a token iff it is their argmax; sampling uses
speculative rejection sampling (core.sampling), so tier 3 alone is exact in distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

from core.confidence import confidence
from core.config import DecodeConfig
from core.cost import CostModel
from core.drafters import Draft, ModelDrafter, PromptLookupDrafter
from core.errors import ConfigError, PromptError
from core.limits import MAX_PROMPT_CHARS, MAX_PROMPT_TOKENS
from core.models import ModelBundle
from core.routing import LayerRoute, resolve_route
from core.sampling import Sampler, verify
from core.scorer import Scorer, ScorerCall
from core.tiers import Outcome, Reason, Tier, assign_tier, outcome_of
from core.timing import Stopwatch
from core.trace import CallRecord, RoundRecord, TokenRecord, Trace


def encode_prompt(tokenizer: object, prompt: str, chat_template: bool = True) -> list[int]:
    """Token ids of the prompt, with the model's chat template applied when it has one."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise PromptError("the prompt is empty: type something or pick an example")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise PromptError(f"the prompt has {len(prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}")
    if chat_template and getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            tokenize=True, return_dict=False)
    else:
        ids = tokenizer(prompt)["input_ids"]
    ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    if len(ids) > MAX_PROMPT_TOKENS:
        raise PromptError(f"the prompt is {len(ids):,} tokens; the limit is {MAX_PROMPT_TOKENS:,}")
    return ids


def stop_token_ids(bundle: ModelBundle) -> set[int]:
    """EOS ids from the tokenizer and the generation config (chat models often have several)."""
    ids: set[int] = set()
    eos = getattr(bundle.verifier.model.generation_config, "eos_token_id", None)
    ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if bundle.verifier.tokenizer.eos_token_id is not None:
        ids.add(bundle.verifier.tokenizer.eos_token_id)
    return ids


class _Decoder:
    """The state of one run: the three scorers, the drafter, the sampler and the trace being written."""

    def __init__(self, bundle: ModelBundle, config: DecodeConfig, replay: bool) -> None:
        self.config = config.validate()
        verifier = bundle.verifier
        self.replay = replay
        memo = bundle.memo
        self.cost = CostModel(verifier.model)
        self.call_cost: dict[str, float] = {}
        self.sampler = Sampler(config.temperature, config.top_p, config.seed)
        self.stop_ids = stop_token_ids(bundle)
        key = f"{verifier.name}|{verifier.dtype}"
        self.full_route = resolve_route("full", verifier.model.config)
        self.slim_route = resolve_route(config.slim_route, verifier.model.config)
        self.full = self._scorer("full", verifier.model, self.full_route, memo, key)
        self.slim = self._scorer("slim", verifier.model, self.slim_route, memo, key)
        self.drafter, self.draft_route = self._make_drafter(bundle, memo, key)
        self.tau_accept, self.tau_slim = config.effective_thresholds()

    def _scorer(self, role: str, model: torch.nn.Module, route: LayerRoute, memo: object, key: str) -> Scorer:
        scorer = Scorer(role, model, route, memo, key, read_memo=self.replay)
        self.call_cost[role] = self.cost.call_cost(model, route)  # fixed per (model, route): priced once
        return scorer

    def _make_drafter(self, bundle: ModelBundle, memo: object, key: str) -> tuple[object, LayerRoute | None]:
        c = self.config
        if c.mode == "plain":
            return None, None
        if c.drafter == "ngram":
            return PromptLookupDrafter(c.ngram_size), None
        if c.drafter == "model":
            if bundle.drafter is None:
                raise ConfigError("drafter 'model' needs a separate drafter model: load one with the bundle")
            model, name = bundle.drafter.model, f"{bundle.drafter.name}|{bundle.drafter.dtype}"
            route = resolve_route("full", model.config)
        else:
            model, name = bundle.verifier.model, key
            route = resolve_route(c.draft_route, model.config)
        scorer = self._scorer("drafter", model, route, memo, name)
        return ModelDrafter(scorer, self.sampler, c.draft_signal, self.stop_ids), route

    def record(self, scorer: Scorer, call: ScorerCall) -> CallRecord:
        return CallRecord(role=scorer.role, tokens_processed=call.tokens_processed, layers=call.layers,
                          cost_units=self.call_cost[scorer.role], wall_s=call.wall_s,
                          from_memo=call.from_memo)

    def run_round(self, tokens: list[int], budget: int, index: int) -> tuple[list[TokenRecord], RoundRecord]:
        """One round: draft, then route each draft token through the three tiers. Returns new tokens."""
        gamma = min(self.config.gamma, budget)
        draft = self.drafter.propose(tokens, gamma) if self.drafter else Draft()
        draft_scorer = getattr(self.drafter, "scorer", None)
        round_ = RoundRecord(index=index, draft_tokens=list(draft.tokens), accepted=0, emitted=0,
                             calls=[self.record(draft_scorer, c) for c in draft.calls])
        n = len(tokens)
        sequence = tokens + draft.tokens
        slim_q: list[torch.Tensor] = []
        full_q: list[torch.Tensor] = []

        def run_slim() -> None:  # tier 2's one batched pass over the draft
            logits, call = self.slim.predict(sequence, n, n + len(draft.tokens) - 1)
            slim_q.extend(self.sampler.distribution(x) for x in logits)
            round_.calls.append(self.record(self.slim, call))

        def run_full() -> None:  # tier 3's one batched pass: catch up, whole draft, bonus position
            logits, call = self.full.predict(sequence, n, n + len(draft.tokens))
            full_q.extend(self.sampler.distribution(x) for x in logits)
            round_.calls.append(self.record(self.full, call))

        def slim_confidence(j: int) -> float:
            if not slim_q:
                run_slim()
            return confidence(slim_q[j], int(torch.argmax(slim_q[j])), self.config.slim_signal)

        emitted: list[tuple[int, Tier, Outcome, Reason]] = []
        for j, token in enumerate(draft.tokens):
            routing = assign_tier(draft.confidences[j], lambda j=j: slim_confidence(j),
                                  self.tau_accept, self.tau_slim, full_already_ran=bool(full_q),
                                  stop_token=token in self.stop_ids)
            tier = routing.tier
            p = draft.probs[j] if draft.probs else None
            if tier is Tier.DRAFT:
                accepted, out = True, token
            elif tier is Tier.SLIM:
                accepted, out = verify(self.sampler, slim_q[j], token, p)
            else:
                if not full_q:
                    run_full()
                accepted, out = verify(self.sampler, full_q[j], token, p)
            emitted.append((out, tier, outcome_of(tier, accepted), routing.reason))
            round_.accepted += accepted
            if not accepted or out in self.stop_ids:
                break
        else:
            if not draft.tokens or (full_q and len(emitted) < budget):
                if not full_q:
                    run_full()
                bonus = self.sampler.pick(full_q[len(draft.tokens)])
                emitted.append((bonus, Tier.FULL, Outcome.FULL_BONUS if draft.tokens else Outcome.PLAIN,
                                Reason.BONUS if draft.tokens else Reason.NO_DRAFT))

        records = []
        for j, (token, tier, outcome, reason) in enumerate(emitted):
            records.append(TokenRecord(
                position=n + j, token_id=token, text="", round=index, tier=int(tier), outcome=outcome.value,
                reason=reason.value,
                draft_confidence=draft.confidences[j] if j < len(draft.tokens) else None,
                slim_confidence=self._conf(slim_q, j), full_confidence=self._conf(full_q, j)))
        round_.emitted = len(records)
        return records, round_

    def _conf(self, dists: list[torch.Tensor], j: int) -> float | None:
        if j >= len(dists):
            return None
        return confidence(dists[j], int(torch.argmax(dists[j])), self.config.slim_signal)

    def models_info(self, bundle: ModelBundle) -> dict:
        if self.drafter is None:
            drafter = "none"
        elif self.config.drafter == "ngram":
            drafter = f"prompt lookup (n <= {self.config.ngram_size})"
        elif self.config.drafter == "model":
            drafter = bundle.drafter.name
        else:
            drafter = f"self ({self.draft_route.describe()})"
        return {
            "verifier": bundle.verifier.name,
            "drafter": drafter,
            "slim_route": self.slim_route.describe(),
            "num_layers": self.full_route.num_layers,
            "device": str(bundle.verifier.device),
            "dtype": str(bundle.verifier.dtype).replace("torch.", ""),
        }


class _TextPieces:
    """Decodes token by token without breaking multi-byte characters: piece = new suffix of the text."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.text = ""

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=False)
        if text.endswith("\ufffd"):
            return ""  # an incomplete UTF-8 sequence: the next token completes it
        piece, self.text = text[len(self.text):], text
        return piece


def iter_generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
                  should_stop: Callable[[], bool] | None = None) -> Iterator[Trace]:
    """Run one generation, yielding the growing trace after every round (for streaming UIs).

    `replay=True` lets predictions come from the bundle's memo (exactly the same tokens, no wall
    time); `replay=False` runs every forward pass for real, for honest timing.
    """
    decoder = _Decoder(bundle, config, replay)
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt, config.chat_template)
    trace = Trace(prompt=prompt, prompt_token_count=len(prompt_ids), config=config.to_dict(),
                  models=decoder.models_info(bundle))
    pieces = _TextPieces(bundle.verifier.tokenizer)
    tokens = list(prompt_ids)
    with Stopwatch(bundle.verifier.device) as total:
        while len(trace.tokens) < config.max_new_tokens:
            if should_stop is not None and should_stop():
                trace.stop_reason = "cancelled"
                break
            with Stopwatch(bundle.verifier.device) as watch:
                records, round_ = decoder.run_round(tokens, config.max_new_tokens - len(trace.tokens),
                                                    len(trace.rounds))
            round_.wall_s = watch.seconds
            for record in records:
                record.position = len(trace.tokens)
                record.text = pieces.add(record.token_id)
                trace.tokens.append(record)
                tokens.append(record.token_id)
            trace.rounds.append(round_)
            trace.wall_s += round_.wall_s
            if tokens[-1] in decoder.stop_ids:
                trace.stop_reason = "eos"
                break
            yield trace
        else:
            trace.stop_reason = "max_new_tokens"
    trace.wall_s = total.seconds
    yield trace


def generate(bundle: ModelBundle, prompt: str, config: DecodeConfig, *, replay: bool = True,
             fidelity: bool = False, should_stop: Callable[[], bool] | None = None) -> Trace:
    """Run one generation to the end and return its trace (optionally with fidelity measured)."""
    *_, trace = iter_generate(bundle, prompt, config, replay=replay, should_stop=should_stop)
    if fidelity:
        from core.fidelity import attach_fidelity

        attach_fidelity(bundle, trace)
    return trace
