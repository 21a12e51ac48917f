"""Cost profiles: how long one forward pass takes on a device, per model, layers run and tokens processed.

`python -m core.profile` measures the current device: for each route (how many decoder layers run)
and each number of tokens processed in one KV-cached pass (1, 2, 4, 8, 16, 64 and a prefill), the
median wall time of a real pass through `core.scorer.Scorer`, the very code the engine runs. It
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
import json
import os
import platform
import statistics
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from core.errors import ProfileError

PROFILE_DIR = Path(__file__).parent / "profiles"
DEFAULT_PROFILE = "accelerator-modelled"
"""The profile traces are priced with unless one is chosen: the memory-bound accelerator model."""

TOKEN_COUNTS = (1, 2, 4, 8, 16, 64)
RIDGE_TOKENS = 295.0
"""Tokens one weight read can serve before a pass turns compute-bound: an H100's bf16 peak over its
memory bandwidth (about 990 TFLOP/s / 3.35 TB/s = 295 FLOP per byte; one token costs 2 FLOP per
2-byte weight). So 16 tokens cost 5 % more than one, a 2,000-token prefill about 7.8 passes."""


@dataclass(frozen=True)
class ModelCosts:
    """Fitted pass-time laws of one model (time unit: the profile's)."""

    num_layers: int
    single_fixed: float
    single_layer: float
    fixed: float
    per_token: float
    layer_fixed: float
    layer_per_token: float

    def time(self, layers: int, tokens: int) -> float:
        """Time of one pass running `layers` decoder layers over `tokens` new tokens (KV cache on)."""
        if tokens <= 1:
            return self.single_fixed + layers * self.single_layer
        return self.fixed + self.per_token * tokens + layers * (self.layer_fixed + self.layer_per_token * tokens)


@dataclass
class CostProfile:
    """Pass-time laws for some models on one device, with where they came from."""

    name: str
    kind: str  # "measured" (timed on a device) or "modelled" (derived from weights read)
    label: str  # one line for screens: what, where, when
    device: str
    dtype: str
    time_unit: str
    models: dict[str, ModelCosts] = field(default_factory=dict)
    ridge_tokens: float | None = None  # modelled profiles: the rule applied to any model
    machine: str = ""
    date: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    points: list[dict] = field(default_factory=list)  # measured passes with the fitted value beside
    notes: str = ""

    def costs_for(self, model: torch.nn.Module) -> ModelCosts | None:
        """The laws for `model`: stored for measured profiles, derived from the weights for modelled ones."""
        found = self.models.get(model_signature(model))
        if found is None and self.kind == "modelled":
            found = accelerator_costs(model, self.ridge_tokens or RIDGE_TOKENS)
        return found

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> CostProfile:
        data = json.loads(text)
        data["models"] = {k: ModelCosts(**v) for k, v in data.get("models", {}).items()}
        return cls(**data)

    def save(self, path: Path | str) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n")
        return path


def model_signature(model: torch.nn.Module) -> str:
    """A key naming a model's shape (family, depth, width, size): the same weights get the same key."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    params = sum(p.numel() for p in model.parameters())
    return f"{config.model_type}-{config.num_hidden_layers}x{config.hidden_size}-{params / 1e6:.1f}M"


def shipped_profiles() -> dict[str, Path]:
    """Profiles in the repository (core/profiles/*.json), by name."""
    return {p.stem: p for p in sorted(PROFILE_DIR.glob("*.json"))}


def profile_choices() -> dict[str, str]:
    """Shipped profiles as {name: label}, for a chooser (the app's modelled card offers them)."""
    return {name: load_profile(name).label for name in shipped_profiles()}


def device_profile(device: torch.device | str, requested: str | None = None) -> str | None:
    """The profile to predict wall-clock speed on `device`: the one requested, else the first shipped
    measured profile for this kind of device (e.g. cpu-*; on a CPU the one measured with torch's current
    thread count, `<name>-<n>threads`, when there is one), else None (the modelled accelerator)."""
    if requested:
        return requested
    kind = torch.device(device).type
    measured = [name for name in shipped_profiles() if name.startswith(kind + "-")]
    threads = f"-{torch.get_num_threads()}threads"
    same_threads = [name for name in measured if name.endswith(threads)]  # CPU profiles depend on the thread count
    single = [name for name in measured if not name.endswith("threads")]
    if kind == "cpu" and (same_threads or single):
        return (same_threads or single)[0]
    return measured[0] if measured else None


def load_profile(spec: str | Path | CostProfile | None = None) -> CostProfile:
    """A profile by shipped name, by file path, or the default (the modelled accelerator)."""
    if isinstance(spec, CostProfile):
        return spec
    if spec is None:
        return accelerator_profile([])  # the rule itself; the shipped file only writes it out for the embedded model
    spec = str(spec)
    path = shipped_profiles().get(spec) or Path(spec)
    if not path.is_file():
        names = ", ".join(shipped_profiles())
        raise ProfileError(f"no cost profile '{spec}': use one of {names} or a JSON file from python -m core.profile")
    try:
        return CostProfile.from_json(path.read_text())
    except (ValueError, TypeError, KeyError) as error:
        raise ProfileError(f"cost profile {path} is not a valid profile: {error}") from None


def accelerator_costs(model: torch.nn.Module, ridge: float = RIDGE_TOKENS) -> ModelCosts:
    """Memory-bound pass laws from the weights: time ~ weights read * (1 + tokens / ridge).

    Unit: parameters read (a layer: its mean size). The embedding lookup reads one row per token
    and is left out."""
    from core.routing import decoder_layers

    layers = decoder_layers(model)
    n = len(layers)
    layer = sum(p.numel() for p in layers.parameters()) / n
    output = model.get_output_embeddings()
    head = float(sum(p.numel() for p in output.parameters())) if output is not None else 0.0
    return ModelCosts(num_layers=n, single_fixed=head * (1 + 1 / ridge), single_layer=layer * (1 + 1 / ridge),
                      fixed=head, per_token=head / ridge, layer_fixed=layer, layer_per_token=layer / ridge)


def accelerator_profile(models: list[torch.nn.Module], ridge: float = RIDGE_TOKENS) -> CostProfile:
    """The modelled accelerator profile, with the laws of `models` written out for reference."""
    return CostProfile(
        name="accelerator-modelled", kind="modelled",
        label=f"modelled memory-bound accelerator (cost = weights read, x(1 + tokens/{ridge:.0f}))",
        device="accelerator (modelled)", dtype="any", time_unit="parameters read",
        models={model_signature(m): accelerator_costs(m, ridge) for m in models}, ridge_tokens=ridge,
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        notes="Not a measurement. A GPU at batch size 1 streams every weight a pass uses once; scoring up to "
              "~16 tokens in that pass costs almost nothing extra. Any model is priced by this rule.")


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
    from core.scorer import Scorer

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


def measure_profile(bundle: object, name: str, routes: tuple[str, ...] = ("full", "auto-slim", "auto-draft",
                                                                         "skip-middle-50"),
                    repeats: int = 5, token_counts: tuple[int, ...] = TOKEN_COUNTS) -> CostProfile:
    """Measure and fit a profile for the bundle's verifier (and separate drafter, when loaded)."""
    from core.routing import resolve_route

    device = bundle.verifier.device
    loaded = [bundle.verifier] + ([bundle.drafter] if bundle.drafter is not None else [])
    models: dict[str, ModelCosts] = {}
    points: list[PassTiming] = []
    for item in loaded:
        by_depth = {}  # one route per layer count: the laws price a route by how many layers it runs
        for r in routes:
            route = resolve_route(r, item.model.config)
            by_depth.setdefault(len(route.layers), (r, route))
        resolved = dict(by_depth.values())
        mine = measure(item.model, resolved, repeats=repeats, token_counts=token_counts)
        models[model_signature(item.model)] = fit(mine, item.num_layers)
        points.extend(mine)
    dtype = str(bundle.verifier.dtype).replace("torch.", "")
    machine = machine_description(device)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = f"; load average {os.getloadavg()[0]:.1f} at the end" if hasattr(os, "getloadavg") else ""
    return CostProfile(name=name, kind="measured", label=f"measured on {machine}, {dtype}, {date}{load}",
                       device=device.type, dtype=dtype, time_unit="s", models=models, machine=machine, date=date,
                       versions=versions(), points=[asdict(p) for p in points],
                       notes="python -m core.profile: median of KV-cached passes through core.scorer.Scorer; "
                             "context 160 tokens; the prefill row processes 160 tokens from an empty cache.")


def fit_table(profile: CostProfile) -> str:
    """The measured points beside the fitted law, as printed text."""
    lines = [f"{'model':24}{'route':16}{'layers':>7}{'tokens':>7}{'measured ms':>13}{'fitted ms':>11}{'error':>8}"]
    for p in profile.points:
        error = p["fitted"] / p["seconds"] - 1
        lines.append(f"{p['model']:24}{p['route']:16}{p['layers']:7d}{p['tokens']:7d}{p['seconds'] * 1e3:13.1f}"
                     f"{p['fitted'] * 1e3:11.1f}{error:+8.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from core.models import EMBEDDED_ID, load_bundle

    parser = argparse.ArgumentParser(description="Measure a cost profile of forward passes on this device.")
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--drafter-model", help="also profile a separate drafter")
    parser.add_argument("--device")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--name", help="profile name (default: <device>-<date>)")
    parser.add_argument("--out", help="where to write the JSON (default: core/profiles/<name>.json)")
    parser.add_argument("--accelerator", action="store_true",
                        help="write the modelled accelerator profile instead of measuring")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model, args.drafter_model, args.device, args.dtype)
    if args.accelerator:
        models = [bundle.verifier.model] + ([bundle.drafter.model] if bundle.drafter else [])
        profile = accelerator_profile(models)
    else:
        name = args.name or f"{bundle.verifier.device.type}-{datetime.now(timezone.utc):%Y%m%d}"
        profile = measure_profile(bundle, name, repeats=args.repeats)
        print(fit_table(profile))
    path = profile.save(args.out or PROFILE_DIR / f"{profile.name}.json")
    print(f"\n{profile.label}\nsaved {path}")


if __name__ == "__main__":
    main()
