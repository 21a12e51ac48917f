"""A run's downloads (tokens CSV, rounds CSV, trace JSON), written where a day of runs cannot fill the disk.

Gradio copies each file an event returns into its own cache (cleaned by `delete_cache`, app/ui.py), so
the copy written here is needed only until the event's outputs are sent. Every run used to leave a
fresh temp folder behind for good: a public demo running for days filled /tmp. Now the folders live
under one parent per process and only the newest `KEEP` survive.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

from core.trace import Trace

KEEP = 64
"""Export folders kept: the newest runs' files, far more than the events in flight at once."""

_lock = threading.Lock()
_root: Path | None = None


def export_root() -> Path:
    """The parent of this process's export folders (created on first use)."""
    global _root
    with _lock:
        if _root is None or not _root.exists():
            _root = Path(tempfile.mkdtemp(prefix="viasd-exports-"))
        return _root


def _prune(root: Path, keep: int) -> None:
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime_ns)
    for old in folders[:-keep] if keep else folders:
        shutil.rmtree(old, ignore_errors=True)


def export_files(trace: Trace, keep: int = KEEP) -> list[str]:
    """Write the trace as tokens CSV, rounds CSV and JSON into a fresh folder; return the paths."""
    root = export_root()
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    stem = f"viasd_{trace.config.mode}_{time.strftime('%Y%m%d-%H%M%S')}"
    paths = [folder / f"{stem}_tokens.csv", folder / f"{stem}_rounds.csv", folder / f"{stem}.json"]
    trace.to_dataframe().to_csv(paths[0], index=False)
    trace.rounds_dataframe().to_csv(paths[1], index=False)
    paths[2].write_text(trace.to_json())
    with _lock:
        _prune(root, keep)
    return [str(p) for p in paths]


def export_json(data: dict, stem: str, keep: int = KEEP) -> str:
    """Write `data` as `<stem>_<time>.json` into a fresh folder (pruned as the runs' are); return its path."""
    root = export_root()
    folder = Path(tempfile.mkdtemp(prefix="json-", dir=root))
    path = folder / f"{stem}_{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    with _lock:
        _prune(root, keep)
    return str(path)
