"""`python -m core.tools.tune --model DIR --drafter-model DIR --prompts FILE.jsonl --export out.json` on tiny random
models saved to disk: the export's four sections, both halves' figures, and a transformers section that
`GenerationConfig.validate(strict=True)` accepts and `generate()` runs with (assisted greedy == plain greedy)."""

import json

import pytest
import torch
import transformers

from core.analysis.serving_export import UNSUPPORTED, build_export
from core.analysis.tuning import Target, grid_configs, held_apart, tune
from core.config import DecodeConfig
from core.tools.tune import main

ROWS = [{"prompt": "abc abc abc abc", "must": ["abc"]}, {"prompt": "hello there,\nhow are you"},
        {"prompt": "the cat sat on the mat", "must_not": ["dog"]}, {"prompt": "one two one two"}]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from tiny import save_tiny_pair

    root = tmp_path_factory.mktemp("pair")
    verifier, drafter = save_tiny_pair(root)
    prompts = root / "set.jsonl"
    prompts.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    out = root / "out.json"
    summary = main(["--model", str(verifier), "--drafter-model", str(drafter), "--prompts", str(prompts),
                    "--export", str(out), "--taus", "0.5,1.0", "--gammas", "3", "--stops", "0,0.3", "--tokens", "8",
                    "--min-agreement", "0.9", "--out", str(root / "artifacts"), "--json"])
    return verifier, drafter, summary, json.loads(out.read_text())


def test_the_export_has_four_sections_and_both_halves(exported):
    verifier, drafter, summary, out = exported
    assert list(out) == ["via_sd", "transformers", "vllm", "sglang"]
    via = out["via_sd"]
    assert via["models"]["verifier"] == str(verifier) and via["models"]["drafter"] == str(drafter)
    assert via["setting"]["drafter"] == "model" and via["setting"] == {k: summary["recommended"][k]
                                                                         for k in via["setting"]}
    assert via["tuning_half"]["prompts"] == 2 and via["held_apart_half"]["prompts"] == 2
    for half in ("tuning_half", "held_apart_half"):
        serving = via[half]["serving"]
        assert serving["drafted"] > 0 and len(serving["acceptance_by_position"]) == 3
        assert serving["mean_acceptance_length"] == pytest.approx(1 + sum(serving["acceptance_by_position"]),
                                                                  abs=1e-3)
    assert via["held_apart_half"]["agreement"] == summary["held_apart"]["agreement"]
    assert via["slim_route"]["of_layers"] == 4 and via["date"].endswith("Z") and via["project_version"]
    assert out["vllm"]["speculative_config"] == {"method": "draft_model", "model": str(drafter),
                                                 "num_speculative_tokens": via["setting"]["gamma"]}
    assert out["sglang"]["flags"]["--speculative-algorithm"] == "STANDALONE"
    for engine in ("transformers", "vllm", "sglang"):
        assert out[engine]["version"] and out[engine]["mappings"]
        tier2 = next(m for m in out[engine]["mappings"] if m["setting"].startswith("tau_slim"))
        assert tier2["status"] == UNSUPPORTED


def test_the_transformers_section_validates_and_generate_runs_with_it(exported):
    verifier, drafter, _, out = exported
    section = out["transformers"]
    kwargs = section["generate_kwargs"]
    transformers.GenerationConfig(**kwargs).validate(strict=True)
    assert section["version"] == transformers.__version__ and section["assistant_model"] == str(drafter)
    assert kwargs["num_assistant_tokens"] == out["via_sd"]["setting"]["gamma"]
    model = transformers.AutoModelForCausalLM.from_pretrained(section["verifier"]).eval()
    assistant = transformers.AutoModelForCausalLM.from_pretrained(section["assistant_model"]).eval()
    assistant.generation_config.update(**section["assistant_generation_config"])
    ids = torch.tensor([[3, 4, 5, 3, 4, 5, 3]])
    plain = model.generate(ids, max_new_tokens=12, do_sample=False, eos_token_id=None)
    assisted = model.generate(ids, max_new_tokens=12, assistant_model=assistant, eos_token_id=None, **kwargs)
    assert assisted.tolist() == plain.tolist()  # greedy assisted decoding is lossless: the engine keeps no tier


@pytest.mark.parametrize("drafter", ["self", "ngram"])
def test_self_and_ngram_settings_map_to_generate_arguments_that_run(drafter):
    from tiny import tiny_bundle

    bundle = tiny_bundle(layers=6)
    base = DecodeConfig(drafter=drafter, max_new_tokens=8, draft_route="skip-middle-50")
    result = tune(bundle, ["abc abc abc abc"], Target("agreement", 0.0), grid_configs(base, [0.5], [3], ["prob"],
                                                                                      ["skip-middle-25"]))
    result.held_apart = held_apart(bundle, ["hello abc hello abc"], base, result.recommended, False)
    out = build_export(result, bundle, base, 1)
    kwargs = out["transformers"]["generate_kwargs"]
    transformers.GenerationConfig(**kwargs).validate(strict=True)
    assert ("prompt_lookup_num_tokens" in kwargs) == (drafter == "ngram")
    assert (out["vllm"]["speculative_config"] is None) == (drafter == "self")
    model = bundle.verifier.model
    ids = torch.tensor([[3, 4, 5, 3, 4, 5, 3, 4]])
    plain = model.generate(ids, max_new_tokens=8, do_sample=False, eos_token_id=None)
    assert model.generate(ids, max_new_tokens=8, eos_token_id=None, **kwargs).shape == plain.shape


def test_a_hub_id_offline_is_one_error_line(tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    prompts = tmp_path / "p.txt"
    prompts.write_text("one\ntwo\n")
    with pytest.raises(SystemExit) as info:
        main(["--model", "no-such-owner/no-such-model-46", "--prompts", str(prompts), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1
    assert "no-such-owner/no-such-model-46" in err
