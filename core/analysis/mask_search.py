"""Search for a slim verifier's layer mask: random search, then evolutionary refinement, on a cheap objective.

In the paper's spirit (VIA-SD finds its slim mask offline by random search plus Bayesian optimisation on a
margin-violation cost, as SWIFT does), not by ranking layers one at a time: which layers can go together is not
the sum of what each costs alone. For a fixed number k of skipped layers:

1. seeds (e.g. the block-influence ranking's first k) and `random_count` random masks are scored;
2. for `generations` rounds, `children` new masks are bred from the best `population` so far: a child is a
   parent with one skipped layer swapped for a kept one (mutation), or k layers drawn from the union of two
   parents' skips (crossover); each is scored once (a memo keeps repeats free);
3. the masks are returned best first.

The objective is any function of a mask, lower is better; `margin_violation` is the one calibrate uses: per
position of the calibration text, how far the routed model's margin for the full model's own token (its logit
minus the best other logit, in nats) falls short of `margin`: mean(max(0, margin - (z_y - max_{j != y} z_j))).
A wrong top-1 counts at least `margin`; a right but hesitant one counts a little; a confident right one nothing.
It is smooth where top-1 agreement is a step, so the search can tell two masks of equal agreement apart.
Pure: no model here (core/tools/calibrate_pair.py supplies the objective), so the search is tested on toys.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch

Mask = tuple[int, ...]
"""Sorted indices of the skipped layers."""


@dataclass(frozen=True)
class Scored:
    mask: Mask
    value: float  # the objective (lower is better)
    origin: str  # "seed", "random", "mutation" or "crossover"


@dataclass
class SearchResult:
    """Every mask scored for one k, best first, and how many objective evaluations it took."""

    k: int
    scored: list[Scored] = field(default_factory=list)
    evaluations: int = 0

    @property
    def best(self) -> Scored:
        return self.scored[0]


def margin_violation(logits: torch.Tensor, targets: torch.Tensor, margin: float = 1.5) -> float:
    """mean over positions of max(0, margin - (z_target - max_{j != target} z_j)); logits [N, V], targets [N]."""
    z = logits.float()
    target = z.gather(1, targets[:, None]).squeeze(1)
    others = z.scatter(1, targets[:, None], float("-inf")).max(dim=1).values
    return float(torch.clamp(margin - (target - others), min=0.0).mean())


def _mutate(mask: Mask, pool: list[int], rng: random.Random) -> Mask:
    kept = [i for i in pool if i not in mask]
    if not kept or not mask:
        return mask
    out = set(mask)
    out.remove(rng.choice(mask))
    out.add(rng.choice(kept))
    return tuple(sorted(out))


def _crossover(a: Mask, b: Mask, k: int, rng: random.Random) -> Mask:
    both = sorted(set(a) & set(b))
    either = sorted((set(a) | set(b)) - set(both))
    return tuple(sorted(both + rng.sample(either, k - len(both))))


def search_masks(objective: Callable[[Mask], float], pool: Iterable[int], k: int, *, seeds: Iterable[Mask] = (),
                 random_count: int = 12, generations: int = 4, children: int = 6, population: int = 4,
                 seed: int = 0, log: Callable[[str], None] | None = None) -> SearchResult:
    """Masks of exactly k layers from `pool`, best first (see the module docstring)."""
    pool = sorted(set(pool))
    if not 0 < k <= len(pool):
        raise ValueError(f"cannot skip {k} layers out of a pool of {len(pool)}")
    rng = random.Random(seed)
    result = SearchResult(k)
    seen: dict[Mask, Scored] = {}

    def score(mask: Mask, origin: str) -> None:
        mask = tuple(sorted(mask))
        if len(mask) != k or mask in seen:
            return
        value = objective(mask)
        result.evaluations += 1
        seen[mask] = Scored(mask, value, origin)
        if log is not None:
            log(f"    k={k} {origin:9} {value:.4f}  skips {','.join(map(str, mask))}")

    for mask in seeds:
        score(tuple(i for i in mask if i in pool)[:k], "seed")
    for _ in range(random_count):
        score(tuple(rng.sample(pool, k)), "random")
    for _ in range(generations):
        parents = sorted(seen.values(), key=lambda s: s.value)[:population]
        for c in range(children):
            if c % 3 == 2 and len(parents) > 1:
                a, b = rng.sample(parents, 2)
                score(_crossover(a.mask, b.mask, k, rng), "crossover")
            else:
                score(_mutate(rng.choice(parents).mask, pool, rng), "mutation")
    result.scored = sorted(seen.values(), key=lambda s: s.value)
    return result
