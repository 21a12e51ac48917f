"""Precision as a setting: "auto" picks bf16 only where the device computes it natively; the cost model
prices a run by a profile of its own dtype, never by one measured in another."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tiny import tiny_model

from core.decoding.cost import CostModel
from core.decoding.cost_profiles import CostProfile, ModelCosts, device_profile, model_signature
from core.errors import ModelLoadError
from core.models.loading import default_dtype, pick_device
from core.models.precision import auto_dtype, cpu_bf16_native, cpu_flags, resolve_dtype, short_dtype

CPU = torch.device("cpu")


def test_native_bf16_is_read_from_the_cpu_flags() -> None:
    assert cpu_bf16_native(frozenset({"avx2", "avx512f", "avx512_bf16"}))
    assert cpu_bf16_native(frozenset({"amx_bf16", "amx_tile"}))
    assert not cpu_bf16_native(frozenset({"avx2", "fma", "avx512f"})), "AVX-512 alone emulates bf16"


def test_cpuinfo_flags_are_parsed(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512_bf16\n\nprocessor\t: 1\n")
    assert cpu_flags(info) == frozenset({"fpu", "avx2", "avx512_bf16"})
    assert cpu_flags(tmp_path / "missing") is None


def test_auto_is_bf16_only_with_native_support() -> None:
    assert auto_dtype(CPU, bf16_native=True) == torch.bfloat16
    assert auto_dtype(CPU, bf16_native=False) == torch.float32


def test_explicit_names_and_defaults_resolve() -> None:
    assert resolve_dtype("float32", CPU) == torch.float32 and resolve_dtype("bfloat16", CPU) == torch.bfloat16
    assert resolve_dtype(None, CPU) == torch.float32
    assert resolve_dtype(None, CPU, default="auto") == auto_dtype(CPU)
    with pytest.raises(ModelLoadError, match="unknown dtype 'int3'"):
        resolve_dtype("int3", CPU)
    assert short_dtype(torch.bfloat16) == "bf16" and short_dtype("float32") == "fp32"


def test_the_embedded_model_keeps_fp32_on_cpu_and_the_pair_asks_for_auto() -> None:
    assert default_dtype("embedded:smollm2-135m-instruct", CPU) == "float32"
    assert default_dtype("org/any-hub-model", CPU) == "float32"
    assert default_dtype("embedded:qwen2.5-coder-1.5b-instruct", CPU) == "auto"
    assert default_dtype("embedded:smollm2-135m-instruct", torch.device("cuda")) == "auto"
    from core.models.precision import recommend

    wanted = recommend(CPU).dtype  # the pair on a CPU: this machine's recommendation, not bf16 wherever native
    assert pick_device("cpu", None, "embedded:qwen2.5-coder-0.5b-instruct")[1] == resolve_dtype(wanted, CPU)


def measured(model: torch.nn.Module, dtype: str) -> CostProfile:
    laws = ModelCosts(num_layers=4, single_fixed=1.0, single_layer=1.0, fixed=1.0, per_token=0.1, layer_fixed=1.0,
                      layer_per_token=0.1)
    return CostProfile(name=f"cpu-test-{dtype}", kind="measured", label="test", device="cpu", dtype=dtype,
                       time_unit="s", models={model_signature(model): laws})


def test_a_profile_prices_only_runs_of_its_own_dtype() -> None:
    model = tiny_model("llama", 4)
    same = CostModel(model, measured(model, "float32"))
    assert same.profile_note == "" and same.unit == pytest.approx(5.0)
    other = CostModel(model.to(torch.bfloat16), measured(model, "float32"))
    assert "measured in float32" in other.profile_note and "bfloat16" in other.label


def test_device_profile_chooses_by_dtype() -> None:
    fp32 = device_profile("cpu", dtype=torch.float32)
    assert fp32 is not None and "fp32" in fp32
    bf16 = device_profile("cpu", dtype="bfloat16")
    assert bf16 is None or "bf16" in bf16
    assert device_profile("cpu", dtype="float16") is None, "no fp16 CPU profile ships: the modelled accelerator"
    assert device_profile("cpu", "accelerator-modelled", torch.bfloat16) == "accelerator-modelled"


CLASSES = [  # (cpuinfo flags, torch's capability, class, dtype, verifier quantisation, drafter dtype and setting)
    (frozenset({"avx2", "fma"}), "AVX2", "avx2", "float32", "int8", torch.float32, "w8a8"),
    (frozenset({"avx2", "avx512f", "avx512_vnni"}), "AVX512", "avx512", "float32", "int8", torch.float32, "w8a8"),
    (frozenset({"avx2", "avx512f", "avx512_bf16"}), "AVX512", "avx512-bf16", "float32", "int8", torch.bfloat16,
     "int4"),
    (frozenset({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}), "AVX512", "amx", "bfloat16", "none",
     torch.bfloat16, "int4"),
    (frozenset({"avx2", "avx512f", "avx512_bf16"}), "AVX2", "avx2", "float32", "int8", torch.float32,
     "w8a8"),  # ATEN_CPU_CAPABILITY=avx2
    (frozenset({"asimd"}), "DEFAULT", "other", "float32", "none", torch.float32, "none"),
]


@pytest.mark.parametrize("flags, capability, klass, dtype, quant, drafter_dtype, drafter_quant", CLASSES)
def test_each_cpu_class_gets_its_recommended_precision(monkeypatch, flags, capability, klass, dtype, quant,
                                                       drafter_dtype, drafter_quant) -> None:
    import core.models.precision as precision
    from core.models.loading import default_drafter_quant, drafter_format
    from core.models.verifier_quant import resolve

    monkeypatch.setattr(precision, "cpu_flags", lambda *a: flags)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    cpu = torch.device("cpu")
    choice = precision.recommend(cpu)
    assert (precision.cpu_class(cpu), choice.cpu_class, choice.dtype, choice.verifier_quant) == (klass, klass, dtype,
                                                                                               quant)
    native = klass in ("amx", "avx512-bf16")
    assert auto_dtype(cpu) == (torch.bfloat16 if native else torch.float32), "--dtype auto: bf16 where native"
    pair, drafter = "embedded:qwen2.5-coder-1.5b-instruct", "embedded:qwen2.5-coder-0.5b-instruct"
    assert pick_device("cpu", None, pair)[1] == (torch.bfloat16 if dtype == "bfloat16" else torch.float32)
    assert drafter_format(pair, cpu, None) == (drafter_dtype, drafter_quant)
    assert default_drafter_quant(pair, drafter, "cpu") == drafter_quant
    # an asked dtype: the drafter setting that is fast in it
    assert drafter_format(pair, cpu, "bfloat16") == (torch.bfloat16, "int4")
    assert drafter_format(pair, cpu, "float32") == (torch.float32, "none" if klass == "other" else "w8a8")
    # the pair (default precision "auto") takes the recommendation; an asked dtype or a Hub id keep the reference
    assert resolve(None, cpu, None, "auto") == quant
    assert resolve("auto", cpu, "float32", "float32") == quant
    assert resolve(None, cpu, "float32", "auto") == "none" and resolve(None, cpu, None, "float32") == "none"
    assert resolve("int8", cpu, None, "float32") == "int8" and resolve("none", cpu, None, "auto") == "none"


def test_cuda_is_its_own_class_and_keeps_the_reference(monkeypatch) -> None:
    from core.models.precision import cpu_class, recommend

    assert cpu_class(torch.device("cuda")) == "cuda" and recommend(torch.device("cuda")).verifier_quant == "none"
