"""Cost profiles: how long one forward pass takes on a device, per model, layers run and tokens processed.

`python -m core.tools.profile` measures the current device: for each route (how many decoder layers run)
and each number of tokens processed in one KV-cached pass (1, 2, 4, 8, 16, 64 and a prefill), the
median wall time of a real pass through `core.decoding.scorer.Scorer`, the very code the engine runs. It
then fits, per model, two small linear laws and saves them with the points as a profile JSON:

* one-token passes:   t = fixed + layers * layer
* k-token passes:     t = fixed + per_token*k + layers * (layer_fixed + layer_per_token*k)

Two regimes because a CPU's BLAS runs one token as matrix-vector products, which are much cheaper
than the matrix-matrix kernels it switches to from two tokens on (measured here: 40 ms for one
token, 63 ms for two to eight). `fixed` and `per_token` hold the output head, embeddings and
per-call overhead; the layer terms price a route by how many layers it runs.

A modelled accelerator profile needs no measurement: at decoding batch sizes a pass reads every
weight it uses once and is memory-bound, so it costs the weights read, and k tokens add only
k / RIDGE of that until the arithmetic catches up (`accelerator_costs`). Profiles say which kind
they are; the app and the benchmark print their label.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from core.decoding.cost_profiles import (
    PROFILE_DIR,
    TOKEN_COUNTS,
    CostProfile,
    ModelCosts,
    accelerator_profile,
    model_signature,
)
from core.decoding.scorer import Scorer
from core.errors import ProfileError
from core.models.catalog import EMBEDDED_ID
from core.models.drafter_quant import DRAFTER_QUANTS, DrafterQuant
from core.models.layer_routes import resolve_route
from core.models.loading import load_bundle, load_model, quantise_drafter
from core.models.precision import DTYPE_CHOICES, dtype_name, short_dtype
from core.models.restricted_head import RestrictedHead
from core.models.routed_layers import make_routable

# --- measuring -----------------------------------------------------------------------------------------


@dataclass
class PassTiming:
    """One measured configuration: median seconds of `repeats` passes."""

    model: str
    route: str
    layers: int
    tokens: int
    seconds: float
    fitted: float = 0.0


def measure(model: torch.nn.Module, routes: dict[str, object], context: int = 160,
            token_counts: tuple[int, ...] = TOKEN_COUNTS, prefill: int = 160, repeats: int = 5,
            seed: int = 0) -> list[PassTiming]:
    """Time KV-cached passes of `model` under each route for each token count, interleaved.

    The cache holds `context` tokens before each timed pass (cropped back after it), so every pass
    sees the same context length; the prefill row times `prefill` tokens from an empty cache."""
    vocab = int(model.config.get_text_config().vocab_size)
    generator = torch.Generator().manual_seed(seed)
    text = torch.randint(10, vocab, (context + max(token_counts) + prefill,), generator=generator).tolist()
    signature = model_signature(model)
    scorers = {name: Scorer(name, model, route, None, "profile", read_memo=False) for name, route in routes.items()}
    for scorer in scorers.values():
        scorer.predict(text, context, context)
    samples: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):
        for k in token_counts:
            for name, scorer in scorers.items():
                _, call = scorer.predict(text, context + 1, context + k)
                samples.setdefault((name, k), []).append(call.wall_s)
        for name, scorer in scorers.items():
            scorer._crop(0)
            _, call = scorer.predict(text[:prefill], prefill, prefill)
            samples.setdefault((name, prefill), []).append(call.wall_s)
            scorer._crop(0)
            scorer.predict(text, context, context)
    return [PassTiming(signature, name, len(routes[name].layers), k, statistics.median(v))
            for (name, k), v in samples.items()]


def fit(points: list[PassTiming], num_layers: int) -> ModelCosts:
    """Least-squares fit of the two laws, weighted for relative error (short passes matter as much)."""

    def solve(rows: list[PassTiming], features: object) -> np.ndarray:
        a = np.array([features(p) for p in rows], dtype=float)
        y = np.array([p.seconds for p in rows], dtype=float)
        w = 1.0 / y
        coef, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
        return coef

    single = [p for p in points if p.tokens == 1]
    batched = [p for p in points if p.tokens > 1]
    if len({p.layers for p in single}) < 2 or len({(p.layers, p.tokens) for p in batched}) < 4:
        raise ProfileError("fitting a profile needs at least two routes and several token counts")
    s = solve(single, lambda p: (1.0, p.layers))
    b = solve(batched, lambda p: (1.0, p.tokens, p.layers, p.layers * p.tokens))
    costs = ModelCosts(num_layers=num_layers, single_fixed=float(s[0]), single_layer=float(s[1]),
                       fixed=float(b[0]), per_token=float(b[1]), layer_fixed=float(b[2]),
                       layer_per_token=float(b[3]))
    for p in points:
        p.fitted = costs.time(p.layers, p.tokens)
    return costs


def versions() -> dict[str, str]:
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}


def machine_description(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"{cpu} ({os.cpu_count()} cores), {threads} thread{'s' if threads > 1 else ''}"


def default_profile_name(device: torch.device, dtype: torch.dtype, threads: int | None = None) -> str:
    """A profile's name from what it depends on: device, machine, dtype and (CPU) thread count.

    e.g. `cpu-epyc-2core-bf16-2threads`, `cuda-h100-bf16`: one file per (device, dtype, threads), holding
    the laws of every model measured there (`merge` adds a model to an existing file)."""
    dtype_part = short_dtype(dtype)
    if device.type == "cuda":
        gpu = torch.cuda.get_device_name(device).lower().replace("nvidia", "").split()
        return f"cuda-{(gpu or ['gpu'])[0]}-{dtype_part}"
    words = machine_description(device).lower().replace("(r)", "").split()
    brand = next((w for w in words if w in ("epyc", "xeon", "ryzen", "core", "graviton", "neoverse")), "cpu")
    threads = threads or torch.get_num_threads()
    return f"cpu-{brand}-{os.cpu_count()}core-{dtype_part}-{threads}threads"


def merge(existing: CostProfile, new: CostProfile) -> CostProfile:
    """`new` with the other models of `existing` kept (same device and dtype): one file per (device, dtype)."""
    if (existing.device, existing.dtype) != (new.device, new.dtype):
        raise ProfileError(f"cannot merge a {new.device}/{new.dtype} profile into {existing.name} "
                           f"({existing.device}/{existing.dtype})")
    kept = {k: v for k, v in existing.models.items() if k not in new.models}
    points = [p for p in existing.points if p["model"] in kept] + new.points
    label = new.label if not kept else f"{new.label}; other models: {existing.date}"
    return CostProfile(name=new.name, kind=new.kind, label=label, device=new.device, dtype=new.dtype,
                       time_unit=new.time_unit, models={**kept, **new.models}, machine=new.machine, date=new.date,
                       versions=new.versions, points=points, notes=new.notes)


def drafter_variants(bundle: object, quants: tuple[str, ...]) -> list[object]:
    """The bundle's drafter in each setting of `quants` ("none": the loaded one), each a fresh copy quantised.

    A restricted head is timed without its fallback (on random text it would be unsure at every row): the
    profile prices the restricted pass; how often the full head runs, and what that costs, is measured on real
    text by `python -m core.tools.drafter_bench` (README)."""
    out = []
    for quant in quants:
        if DrafterQuant.parse(quant).name == bundle.drafter.quant:
            out.append(bundle.drafter)
            continue
        fresh = load_model(bundle.drafter.name, str(bundle.drafter.device), dtype_name(bundle.drafter.dtype))
        make_routable(quantise_drafter(fresh, quant).model)
        head = fresh.model.get_output_embeddings()
        if isinstance(head, RestrictedHead):
            head.fallback_below = 0.0
        out.append(fresh)
    return out


def measure_profile(bundle: object, name: str, routes: tuple[str, ...] = ("full", "auto-slim", "auto-draft",
                                                                         "skip-middle-50"),
                    repeats: int = 5, token_counts: tuple[int, ...] = TOKEN_COUNTS,
                    drafter_quants: tuple[str, ...] = ("none",)) -> CostProfile:
    """Measure and fit a profile for the bundle's verifier (and separate drafter, when loaded, in each of
    `drafter_quants`: core.models.drafter_quant; each is its own model in the profile)."""
    device = bundle.verifier.device
    drafters = drafter_variants(bundle, drafter_quants) if bundle.drafter is not None else []
    loaded = [bundle.verifier] + drafters
    models: dict[str, ModelCosts] = {}
    points: list[PassTiming] = []
    resolved = []
    for item in loaded:
        by_depth = {}  # one route per layer count: the laws price a route by how many layers it runs
        for r in routes:
            route = resolve_route(r, item.model.config)
            by_depth.setdefault(len(route.layers), (r, route))
        resolved.append(dict(by_depth.values()))
    samples: list[list[list[PassTiming]]] = [[] for _ in loaded]
    for _ in range(repeats):  # model after model, sweep by sweep: a drifting load touches every model alike
        for i, item in enumerate(loaded):
            samples[i].append(measure(item.model, resolved[i], repeats=1, token_counts=token_counts))
    for item, sweeps in zip(loaded, samples, strict=True):
        mine = [replace(same[0], seconds=statistics.median(p.seconds for p in same))
                for same in zip(*sweeps, strict=True)]  # one point's timings across sweeps
        models[model_signature(item.model)] = fit(mine, item.num_layers)
        points.extend(mine)
    dtype = str(bundle.verifier.dtype).replace("torch.", "")
    machine = machine_description(device)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = f"; load average {os.getloadavg()[0]:.1f} at the end" if hasattr(os, "getloadavg") else ""
    models_line = " + ".join(item.label for item in loaded)
    label = f"measured on {machine}, {dtype}, {date}{load} ({models_line})"
    return CostProfile(name=name, kind="measured", label=label,
                       device=device.type, dtype=dtype, time_unit="s", models=models, machine=machine, date=date,
                       versions=versions(), points=[asdict(p) for p in points],
                       notes="python -m core.tools.profile: median of KV-cached passes through "
                             "core.decoding.scorer.Scorer, the models timed sweep by sweep in turn; context 160 "
                             "tokens; the prefill row processes 160 tokens from an empty cache.")


def fit_table(profile: CostProfile) -> str:
    """The measured points beside the fitted law, as printed text."""
    lines = [f"{'model':24}{'route':16}{'layers':>7}{'tokens':>7}{'measured ms':>13}{'fitted ms':>11}{'error':>8}"]
    for p in profile.points:
        error = p["fitted"] / p["seconds"] - 1
        lines.append(f"{p['model']:24}{p['route']:16}{p['layers']:7d}{p['tokens']:7d}{p['seconds'] * 1e3:13.1f}"
                     f"{p['fitted'] * 1e3:11.1f}{error:+8.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure a cost profile of forward passes on this device.")
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--drafter-model", help="also profile a separate drafter")
    parser.add_argument("--drafter-quant", default="none", help="comma list of drafter settings to profile, each "
                        "as its own model (core.models.drafter_quant: " + ", ".join(DRAFTER_QUANTS) + ")")
    parser.add_argument("--device")
    parser.add_argument("--dtype", choices=list(DTYPE_CHOICES), help="default: the model's own (core.models.loading)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--name", help="profile name (default: <device>-<machine>-<dtype>-<threads>threads, e.g. "
                        "cpu-epyc-2core-bf16-2threads)")
    parser.add_argument("--replace", action="store_true", help="overwrite the file instead of adding these models "
                        "to the profile of the same name")
    parser.add_argument("--out", help="where to write the JSON (default: core/profiles/<name>.json)")
    parser.add_argument("--accelerator", action="store_true",
                        help="write the modelled accelerator profile instead of measuring")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    quants = tuple(q.strip() for q in args.drafter_quant.split(",") if q.strip())
    bundle = load_bundle(args.model, args.drafter_model, args.device, args.dtype, drafter_quant="none")
    if args.accelerator:
        models = [bundle.verifier.model] + ([bundle.drafter.model] if bundle.drafter else [])
        profile = accelerator_profile(models)
    else:
        name = args.name or default_profile_name(bundle.verifier.device, bundle.verifier.dtype)
        print(f"measuring {name}; load average {os.getloadavg()[0]:.2f} at the start (uptime)")
        profile = measure_profile(bundle, name, repeats=args.repeats, drafter_quants=quants)
        print(fit_table(profile))
    path = Path(args.out or PROFILE_DIR / f"{profile.name}.json")
    if path.is_file() and not args.replace and not args.accelerator:
        profile = merge(CostProfile.from_json(path.read_text()), profile)
    path = profile.save(path)
    print(f"\n{profile.label}\nsaved {path}")


if __name__ == "__main__":
    main()
