"""Does drafting pay on this machine? Measure the passes a round is made of, then keep the draft length that is
fastest here, or decode plainly where no draft length beats plain decoding.

Why: what a speculative round costs depends on the machine far more than on the method. On a CPU computing
float32 an 8-token verification pass costs about two one-token passes, and a 0.5B drafter's token costs half a
1.5B pass with int8 weights but a sixth with int4 weights in native bf16; the same pair and setting is 2x
faster than plain on one CPU and 3x slower on another (docs/benchmarks.md). So the recommended setting is fitted
to the machine it runs on: a few real passes are timed once per loaded pair (about a second with an int8
verifier), and the classic-SD speed-up of each draft length is computed from them and an acceptance rate:

    tokens per round  = (1 - a^(g+1)) / (1 - a)          (a: chance a draft token is kept, g: draft length)
    seconds per round = g * drafter token + verification pass of g + 1 tokens
    speed-up          = tokens per round * one-token verifier pass / seconds per round

Classic SD's economics are a floor for VIA-SD's (tier 1 only removes verifier passes), so a draft length that pays
for classic SD pays for VIA-SD too. The decoding loop never sees any of this: it gets a DecodeConfig.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from core.config import DecodeConfig
from core.decoding.timing import Stopwatch
from core.models.loading import ModelBundle

TYPICAL_ACCEPTANCE = 0.8
"""Chance a drafted token is kept, for a same-family drafter on the tasks it suits: the Qwen2.5-Coder pair kept
87-90 % of its drafts on held-out code prompts (docs/benchmarks.md); 0.8 leaves room for prompts it suits less."""
CONTEXT_TOKENS = 48


@dataclass(frozen=True)
class PassCosts:
    """Seconds of one verifier pass by tokens scored (1 and every g + 1 timed) and of one drafter token."""

    verify: dict[int, float]
    draft_token: float

    def speedup(self, gamma: int, acceptance: float = TYPICAL_ACCEPTANCE) -> float:
        """Classic SD's speed-up over plain decoding at draft length `gamma` (module doc)."""
        a = min(max(acceptance, 0.0), 0.999)
        tokens = (1 - a ** (gamma + 1)) / (1 - a)
        return tokens * self.verify[1] / (gamma * self.draft_token + self.verify[gamma + 1])


@dataclass(frozen=True)
class Fit:
    """The setting to run here and why, in one line for the CLI and the Models panel."""

    config: DecodeConfig
    speedup: float  # classic SD's expected speed-up at the chosen draft length (1.0 for plain)
    note: str
    gamma: int = 0  # the fastest draft length here, also where plain decoding was chosen (a comparison runs it)


def _pass_seconds(model: torch.nn.Module, context: torch.Tensor, tokens: int, repeats: int) -> float:
    """Median seconds of a KV-cached pass over `tokens` new tokens after `context` (cropped back after each)."""
    device = context.device
    with torch.inference_mode():
        cache = model(context, use_cache=True).past_key_values
        model(context[:, :tokens], past_key_values=cache, use_cache=True)  # a first pass of this size pays one-offs
        cache.crop(-tokens)
        samples = []
        for _ in range(repeats):
            with Stopwatch(device) as watch:
                model(context[:, :tokens], past_key_values=cache, use_cache=True)
            cache.crop(-tokens)
            samples.append(watch.seconds)
    return statistics.median(samples)


def measure(bundle: ModelBundle, gammas: range, repeats: int = 3) -> PassCosts:
    """Time the verifier's passes of 1 and g + 1 tokens and the drafter's one-token pass, on this machine."""
    if bundle.drafter is None:
        raise ValueError("drafting_pays needs a bundle with a separate drafter model")
    device = bundle.verifier.device
    vocab = min(bundle.verifier.model.config.vocab_size, bundle.drafter.model.config.vocab_size)
    context = (torch.arange(CONTEXT_TOKENS, device=device) * 7 % vocab)[None, :]  # any ids: a pass's cost is the same
    sizes = sorted({1, *(g + 1 for g in gammas)})
    verify = {k: _pass_seconds(bundle.verifier.model, context, k, repeats) for k in sizes}
    return PassCosts(verify, _pass_seconds(bundle.drafter.model, context, 1, repeats))


def fit(config: DecodeConfig, costs: PassCosts, acceptance: float = TYPICAL_ACCEPTANCE) -> Fit:
    """The draft length up to `config.gamma` fastest here, or plain decoding where none beats it."""
    if config.mode == "plain" or config.drafter != "model":
        return Fit(config, 1.0, "", config.gamma)
    best = max(range(1, config.gamma + 1), key=lambda g: costs.speedup(g, acceptance))
    speedup = costs.speedup(best, acceptance)
    ratio = costs.draft_token / costs.verify[1]
    measured = (f"measured here: a drafter token costs {ratio:.2f} of a verifier pass, a {best + 1}-token "
                f"verification {costs.verify[best + 1] / costs.verify[1]:.2f}")
    if speedup < 1.0:
        return Fit(config.with_(mode="plain"), 1.0,
                   f"drafting does not pay on this machine ({measured}; at {acceptance:.0%} of drafts kept the best "
                   f"draft length gives {speedup:.2f}x plain): decoding plainly", best)
    change = f"draft length {best} instead of {config.gamma}" if best != config.gamma else f"draft length {best}"
    expected = f"expected {speedup:.2f}x plain for classic SD at {acceptance:.0%} of drafts kept"
    return Fit(config.with_(gamma=best), speedup, f"{change}, {expected} ({measured})", best)


def fit_to_machine(bundle: ModelBundle, config: DecodeConfig, acceptance: float = TYPICAL_ACCEPTANCE) -> Fit:
    """`fit` after timing this bundle's passes (a few seconds at most; once per loaded pair is enough)."""
    if config.mode == "plain" or config.drafter != "model" or bundle.drafter is None:
        return Fit(config, 1.0, "", config.gamma)
    return fit(config, measure(bundle, range(1, config.gamma + 1)), acceptance)
