"""Weights mapped from a safetensors file are resident from the load on (core.models.resident says why)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from core.models.loading import load_bundle, load_model
from tests.tiny import char_tokenizer, tiny_model

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
VOCAB = 32768
"""An 8 MB embedding table (32768 x 64 float32): far more than a load reads by itself."""


def resident_bytes(path: Path) -> int:
    """Bytes of `path` mapped into this process and resident now (the Rss of its mappings in smaps)."""
    total, current = 0, None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header: range perms offset dev inode [path]
            current = fields[5] if len(fields) > 5 else None
        elif fields and fields[0] == "Rss:" and current == str(path):
            total += int(fields[1]) * 1024
    return total


def saved(folder: Path) -> Path:
    tiny_model("llama", 2, vocab=VOCAB).save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    return folder / "model.safetensors"


def test_a_loaded_models_mapped_weights_are_all_resident_before_its_first_run(tmp_path: Path) -> None:
    # the mechanism: transformers maps the file and reads little of it at load (so a row of the embedding
    # becomes resident only when its token first comes, and resident memory climbs for hours)
    plain_file = saved(tmp_path / "plain")
    plain = AutoModelForCausalLM.from_pretrained(plain_file.parent, dtype="float32")
    assert 0 < resident_bytes(plain_file) < 0.5 * plain_file.stat().st_size
    # the app's load reads every page once
    ours_file = saved(tmp_path / "ours")
    ours = load_model(str(ours_file.parent), device="cpu", dtype="float32")
    weights = sum(p.numel() * p.element_size() for p in ours.model.parameters())
    assert resident_bytes(ours_file) >= 0.95 * weights
    assert plain.num_parameters() == ours.model.num_parameters()


def test_a_quantised_drafter_lets_go_of_its_file_and_the_verifier_keeps_its_pages(tmp_path: Path) -> None:
    """The drafter's replaced layers were read to be quantised; once nothing views its file, they leave memory."""
    verifier_file, drafter_file = saved(tmp_path / "verifier"), saved(tmp_path / "drafter")
    bundle = load_bundle(str(verifier_file.parent), str(drafter_file.parent), device="cpu", dtype="float32",
                         drafter_quant="int8")
    assert bundle.drafter is not None and bundle.drafter.quant == "int8"
    assert resident_bytes(drafter_file) == 0
    assert resident_bytes(verifier_file) >= 0.95 * sum(p.numel() * 4 for p in bundle.verifier.model.parameters())
