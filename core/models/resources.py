"""Where model files live (the cache), and disk and memory checked before a large load, so a full disk
or a small machine gives one line up front instead of a crash half-way through a 1 GB download or a
7 GB conversion."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from core.errors import ModelLoadError


def cache_dir() -> Path:
    """Where downloaded and converted weights live; `VIASD_CACHE_DIR` overrides ~/.cache/via-sd-explorer."""
    return Path(os.environ.get("VIASD_CACHE_DIR", Path.home() / ".cache" / "via-sd-explorer"))


def free_disk(path: Path) -> int:
    """Free bytes on the file system holding `path` (its nearest existing parent)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no such file: not Linux)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_disk(path: Path, needed: int, purpose: str, free: int | None = None) -> None:
    """Raise ModelLoadError unless `needed` bytes are free where `path` lives."""
    free = free_disk(path) if free is None else free
    if free < needed:
        raise ModelLoadError(f"{purpose} needs {needed / 1e9:.1f} GB of disk in {path}; only {free / 1e9:.1f} GB "
                             "is free (set VIASD_CACHE_DIR to a larger disk)")


def require_memory(needed: int, purpose: str, available: int | None = None) -> None:
    """Raise ModelLoadError unless about `needed` bytes of memory are available (unknown: let it try)."""
    available = available_memory() if available is None else available
    if available is not None and available < needed:
        raise ModelLoadError(f"{purpose} needs about {needed / 1e9:.1f} GB of memory; {available / 1e9:.1f} GB is "
                             "available here")
