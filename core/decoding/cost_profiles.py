"""Cost profiles as data: per model, how long one forward pass takes for the layers it runs and the tokens
it processes. `python -m core.tools.profile` (core/tools/profile.py) measures and saves them; the cost model
(core/decoding/cost.py) reads them here.

A modelled accelerator profile needs no measurement: at decoding batch sizes a pass reads every
weight it uses once and is memory-bound, so it costs the weights read, and k tokens add only
k / RIDGE of that until the arithmetic catches up (`accelerator_costs`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import torch

from core.errors import ProfileError
from core.models.drafter_quant import quant_of
from core.models.quantised import weight_bytes
from core.models.routed_layers import decoder_layers

PROFILE_DIR = Path(__file__).resolve().parent.parent / "profiles"

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
    """A key naming a model's shape (family, depth, width, size) and, for a quantised drafter, its setting: the
    same weights get the same key, and an int4 copy of them another (e.g. `qwen2-24x896-630.2M-int4`)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    quant = quant_of(model)
    params = quant[1] if quant is not None else sum(p.numel() for p in model.parameters())
    base = f"{config.model_type}-{config.num_hidden_layers}x{config.hidden_size}-{params / 1e6:.1f}M"
    return base if quant is None else f"{base}-{quant[0]}"


def shipped_profiles() -> dict[str, Path]:
    """Profiles in the repository (core/profiles/*.json), by name."""
    return {p.stem: p for p in sorted(PROFILE_DIR.glob("*.json"))}


def profile_dtype(name: str) -> str:
    """The dtype a shipped profile was measured in (read from its file)."""
    return load_profile(name).dtype


def device_profile(device: torch.device | str, requested: str | None = None,
                   dtype: torch.dtype | str | None = None) -> str | None:
    """The profile to predict wall-clock speed on `device` in `dtype`: the one requested, else the first
    shipped measured profile for this kind of device and this dtype (e.g. cpu-*-bf16-*; on a CPU the one
    measured with torch's current thread count, `<name>-<n>threads`, when there is one), else None (the
    modelled accelerator). `dtype=None`: float32 profiles first (the CPU default before dtypes were a setting)."""
    if requested:
        return requested
    kind = torch.device(device).type
    wanted = str(dtype).replace("torch.", "") if dtype is not None else None
    measured = [name for name in shipped_profiles() if name.startswith(kind + "-")]
    if wanted is not None:
        measured = [name for name in measured if profile_dtype(name) == wanted]
    else:
        measured.sort(key=lambda name: profile_dtype(name) != "float32")
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
        raise ProfileError(f"no cost profile '{spec}': use one of {names} "
                           "or a JSON file from python -m core.tools.profile")
    try:
        return CostProfile.from_json(path.read_text())
    except (ValueError, TypeError, KeyError) as error:
        raise ProfileError(f"cost profile {path} is not a valid profile: {error}") from None


def accelerator_costs(model: torch.nn.Module, ridge: float = RIDGE_TOKENS) -> ModelCosts:
    """Memory-bound pass laws from the weights: time ~ weights read * (1 + tokens / ridge).

    Unit: bytes of weights read (a layer: its mean size), so an int4 drafter reads a quarter of its bf16 self
    (core.models.quantised.weight_bytes). The embedding lookup reads one row per token and is left out."""
    layers = decoder_layers(model)
    n = len(layers)
    layer = weight_bytes(layers) / n
    output = model.get_output_embeddings()
    head = float(weight_bytes(output)) if output is not None else 0.0
    return ModelCosts(num_layers=n, single_fixed=head * (1 + 1 / ridge), single_layer=layer * (1 + 1 / ridge),
                      fixed=head, per_token=head / ridge, layer_fixed=layer, layer_per_token=layer / ridge)


def accelerator_profile(models: list[torch.nn.Module], ridge: float = RIDGE_TOKENS) -> CostProfile:
    """The modelled accelerator profile, with the laws of `models` written out for reference."""
    return CostProfile(
        name="accelerator-modelled", kind="modelled",
        label=f"modelled memory-bound accelerator (cost = weights read, x(1 + tokens/{ridge:.0f}))",
        device="accelerator (modelled)", dtype="any", time_unit="bytes read",
        models={model_signature(m): accelerator_costs(m, ridge) for m in models}, ridge_tokens=ridge,
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        notes="Not a measurement. A GPU at batch size 1 streams every weight a pass uses once; scoring up to "
              "~16 tokens in that pass costs almost nothing extra. Any model is priced by this rule.")
