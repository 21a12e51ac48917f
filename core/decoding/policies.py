"""Lossy verification rules: BiLD and Speculative Cascades, as rules of the one engine.

A verification rule decides, at one draft position, whether a verifier (slim or full) keeps the
draft token; `core.decoding.sampling.ExactRule` is the lossless one. The rules here trade exactness for
longer accepted runs, each with a parameter that has an *exact setting* at which it is classic
speculative decoding again:

* BiLD, `BildRule` (Kim et al., "Speculative Decoding with Big Little Decoder", NeurIPS 2023,
  arXiv:2302.07863; code: github.com/kssteven418/BigLittleDecoder, `T5ForConditionalGeneration`'s
  BiLD loop in src/transformers/models/t5/modeling_t5.py). Two thresholds. *Fallback*: the small
  model drafts until its max probability drops below it; that is the engine's drafter setting
  `DecodeConfig.draft_stop_below`, not a verifier rule. *Rollback* (`verify_alpha`, in nats): the
  large model rejects a draft token x when its distance to the large model's prediction,
  the cross-entropy d = -log q(x), exceeds the threshold; the reference code then keeps the token
  anyway when it is the large model's own argmax. The paper decodes greedily; under sampling we
  keep x when d <= rollback and otherwise run speculative rejection sampling. Exact setting:
  rollback 0 (a token is kept iff it is the argmax; under sampling d <= 0 needs q(x) = 1).
* Speculative Cascades, `CascadeRule` (Narasimhan et al., "Faster Cascades via Speculative
  Decoding", ICLR 2025, arXiv:2405.19261; code: the colab google-research/google-research,
  speculative_cascades/speculative_cascades_gemma.ipynb, `target_distribution_chow/diff/opt`).
  A deferral rule looks at the drafter's distribution p and the verifier's q and either defers
  (the target is pi = q) or not (pi = p):
    - Chow: defer when max p < 1 - alpha;
    - Diff: defer when max q - max p > alpha;
    - OPT:  defer when max q - max p > alpha * TV(p, q), TV = sum max(0, p - q).
  Verification then targets pi: under sampling accept x with min(1, pi(x) / p(x)) and otherwise
  draw from the normalised residual max(0, pi - p); greedy accepts iff x = argmax pi. Not
  deferring therefore keeps the draft; deferring is classic SD against q. Exact setting: an alpha
  at which every position defers (`exact_alpha`): -1 for Chow (1 - alpha = 2 > any probability)
  and Diff (max q > 0 >= max p - 1); -2 for OPT, because |max q - max p| <= TV(p, q) always, so
  with alpha < -1 it defers wherever p differs from q at all, and where p = q, pi = q anyway.
  alpha = 1 never defers for any of the three. The deferral reads the same distributions the
  verifier judges with (softmax when greedy, after temperature and top-p when sampling); the colab
  reads the drafter's maxima before temperature.

Prompt lookup has no p. As in core.decoding.sampling, it counts as p = one-hot at the copied token:
* BiLD ignores p when greedy (rollback reads only q); under sampling the rejection-sampling
  fallback accepts with probability q(x) and resamples from q without x.
* Chow: max p = 1, so it never defers for alpha >= 0 and keeps every copied token; only alpha < 0
  (the exact setting) verifies them. Over prompt lookup Chow is all or nothing.
* Diff defers when max q > 1 + alpha, i.e. when the verifier itself is confident (alpha < 0).
* OPT: TV = 1 - q(x), so it defers when max q - 1 > alpha * (1 - q(x)).

Every rule answers `judge(q, token, p, best) -> Verdict`; `best` is q's argmax, already on the host.
`Verdict.why` (a `core.decoding.tiers.Why`, re-exported here) is what the trace records per token as
`TokenRecord.verdict`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from core.config import DecodeConfig
from core.decoding.sampling import ExactRule, Sampler, Verdict, aligned, rejection_sample
from core.errors import ConfigError
from core.vocabulary import DEFERRAL_RULES, LOSSY_RULES, Why, check_alpha


def _draft_distribution(q: torch.Tensor, token: int, p: torch.Tensor | None) -> torch.Tensor:
    """The drafter's distribution over q's vocabulary; prompt lookup (p None) is one-hot at its token."""
    if p is not None:
        return aligned(q, p)
    one_hot = torch.zeros_like(q)
    if token < q.shape[-1]:
        one_hot[token] = 1.0
    return one_hot


def _exact(sampler: Sampler, q: torch.Tensor, token: int, p: torch.Tensor | None, best: int) -> Verdict:
    """Classic SD against q, the lossless rule each lossy rule falls back to (greedy: a cascade that deferred)."""
    if sampler.greedy:
        return Verdict(best == token, best, Why.DEFERRED_KEPT if best == token else Why.DEFERRED_REPLACED)
    accepted, out = rejection_sample(sampler, q, token, p)  # it aligns p to q's vocabulary
    return Verdict(accepted, out, Why.RATIO_KEPT if accepted else Why.RESAMPLED)


class BildRule:
    """BiLD's rollback: keep a draft token unless -log q(token) > `rollback` (nats). See the module docstring."""

    name = "bild"

    def __init__(self, sampler: Sampler, rollback: float) -> None:
        self.sampler = sampler
        self.rollback = rollback

    def distance(self, q: torch.Tensor, token: int) -> float:
        """BiLD's distance of a draft token to the verifier's prediction: cross-entropy -log q(token)."""
        q_token = float(q[token]) if token < q.shape[-1] else 0.0
        return -math.log(q_token) if q_token > 0 else math.inf

    def judge(self, q: torch.Tensor, token: int, p: torch.Tensor | None, best: int) -> Verdict:
        if self.sampler.greedy and token == best:
            return Verdict(True, token, Why.ARGMAX)
        if self.distance(q, token) <= self.rollback:
            return Verdict(True, token, Why.WITHIN_ROLLBACK)
        if self.sampler.greedy:
            return Verdict(False, best, Why.ROLLED_BACK)
        return _exact(self.sampler, q, token, p, best)


class CascadeRule:
    """A speculative cascade: defer to the verifier (pi = q) or keep the drafter (pi = p), then verify against pi."""

    def __init__(self, sampler: Sampler, deferral: str, alpha: float) -> None:
        if deferral not in DEFERRAL_RULES:
            raise ConfigError(f"deferral rule must be one of {', '.join(DEFERRAL_RULES)}, not '{deferral}'")
        self.sampler = sampler
        self.deferral = deferral
        self.alpha = alpha
        self.name = f"cascade-{deferral}"

    def defers(self, q: torch.Tensor, p: torch.Tensor) -> bool:
        """The deferral rule on the drafter's p and the verifier's q (both over q's vocabulary)."""
        if self.deferral == "chow":
            return float(p.max()) < 1.0 - self.alpha
        stats = [q.max(), p.max()] + ([torch.clamp(p - q, min=0.0).sum()] if self.deferral == "opt" else [])
        max_q, max_p, *total_variation = torch.stack(stats).tolist()  # one transfer to the host
        if self.deferral == "diff":
            return max_q - max_p > self.alpha
        return max_q - max_p > self.alpha * total_variation[0]

    def target(self, q: torch.Tensor, token: int, p: torch.Tensor | None) -> torch.Tensor:
        """The mixed target pi at this position: q where the rule defers, else the drafter's p."""
        p_full = _draft_distribution(q, token, p)
        return q if self.defers(q, p_full) else p_full

    def judge(self, q: torch.Tensor, token: int, p: torch.Tensor | None, best: int) -> Verdict:
        p_full = _draft_distribution(q, token, p)
        if self.defers(q, p_full):
            return _exact(self.sampler, q, token, p, best)
        if not self.sampler.greedy:  # pi = p: min(1, p(x) / p(x)) = 1, the draft is always kept
            return Verdict(True, token, Why.NOT_DEFERRED)
        top = int(torch.argmax(p_full))  # greedy drafters draft p's argmax, so this keeps the draft
        return Verdict(top == token, top, Why.NOT_DEFERRED if top == token else Why.NOT_DEFERRED_REPLACED)


def make_rule(name: str, sampler: Sampler, alpha: float) -> BildRule | CascadeRule:
    """The lossy rule called `name` with parameter `alpha` (see LOSSY_RULES)."""
    check_alpha(name, alpha)
    if name == "bild":
        return BildRule(sampler, float(alpha))
    return CascadeRule(sampler, name.removeprefix("cascade-"), float(alpha))


RULES: dict[str, Callable[[Sampler, float], BildRule | CascadeRule]] = {
    name: partial(make_rule, name) for name in LOSSY_RULES
}
"""What the engine builds a lossy rule from: name -> factory(sampler, verify_alpha)."""


def verification_rule(config: DecodeConfig, sampler: Sampler) -> ExactRule | BildRule | CascadeRule:
    """The rule verifiers judge draft tokens with under `config`: exact, or a lossy baseline.
    A rule has `judge(q, token, p, best) -> Verdict`."""
    if config.verify_rule == "exact":
        return ExactRule(sampler)
    if config.verify_rule not in RULES:
        raise ConfigError(f"unknown verify_rule '{config.verify_rule}': use exact or {', '.join(RULES) or '-'}")
    return RULES[config.verify_rule](sampler, config.verify_alpha)
