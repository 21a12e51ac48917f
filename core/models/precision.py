"""Precision as a setting: float32, bfloat16, float16, or "auto" (bf16 where the device computes it natively).

Why it matters: on a CPU with AVX512-BF16 (or AMX) a bf16 verification pass of up to 8 tokens costs
what a one-token pass costs, the GPU economics that speculative decoding lives on; in fp32 the same
pass costs 1.5-2.5x. Without native bf16 the CPU emulates it and bf16 is slower than fp32, so "auto"
detects the instructions (never assumes them: machines of one kind differ) and falls back to fp32.
The price of bf16: scoring k tokens in one pass rounds differently from one at a time, so classic SD
is no longer bit-exact against plain greedy (core.analysis.fidelity separates that from the tiers).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from core.errors import ModelLoadError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_CHOICES = ("auto", *DTYPES)
"""What `load_bundle(dtype=)` and `--dtype` accept."""

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""/proc/cpuinfo flags of x86 instructions that compute bf16 natively (AVX512-BF16 dot products, AMX tiles)."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's feature flags from /proc/cpuinfo (None where the file is missing: not Linux)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return frozenset()


def cpu_bf16_native(flags: frozenset[str] | None = None) -> bool:
    """Does this CPU compute bf16 natively? From /proc/cpuinfo flags, else torch's own CPU probe."""
    flags = cpu_flags() if flags is None else flags
    if flags is not None:
        return bool(BF16_FLAGS & flags)
    probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    return bool(probe()) if probe is not None else False


def auto_dtype(device: torch.device, bf16_native: bool | None = None) -> torch.dtype:
    """bf16 on CUDA (fp16 where bf16 is missing) and on a CPU with native bf16; fp32 elsewhere."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu":  # torch's dispatch counts too: ATEN_CPU_CAPABILITY=avx2 emulates a CPU without bf16
        native = (cpu_class(device) in ("amx", "avx512-bf16")) if bf16_native is None else bf16_native
        return torch.bfloat16 if native else torch.float32
    return torch.float32


def resolve_dtype(dtype: str | None, device: torch.device, default: str = "float32") -> torch.dtype:
    """The torch dtype for a setting: a name, "auto", or None (then `default`, itself a name or "auto").

    The default differs by model: the embedded SmolLM2 keeps float32 on a CPU (exact, and fast
    enough), a pair preset asks for "auto" (see core.models.loading)."""
    chosen = default if dtype is None else dtype
    if chosen == "auto":
        return auto_dtype(device)
    if chosen not in DTYPES:
        raise ModelLoadError(f"unknown dtype '{chosen}': use {', '.join(DTYPE_CHOICES)}")
    return DTYPES[chosen]


def dtype_name(dtype: torch.dtype) -> str:
    """'bfloat16' for torch.bfloat16: the name runs, profiles and screens print."""
    return str(dtype).replace("torch.", "")


def short_dtype(dtype: torch.dtype | str) -> str:
    """'bf16', 'fp32', 'fp16': the short form used in profile names."""
    name = dtype if isinstance(dtype, str) else dtype_name(dtype)
    return {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}.get(name, name)


def describe_precision(device: torch.device, dtype: torch.dtype) -> str:
    """One line for a run's header: the dtype, and on a CPU why auto would (not) pick bf16."""
    if device.type != "cpu":
        return f"{dtype_name(dtype)} on {device.type}"
    native = cpu_bf16_native()
    capability = torch.backends.cpu.get_cpu_capability()
    return (f"{dtype_name(dtype)} on cpu (torch capability {capability}; native bf16 "
            f"{'yes' if native else 'no'})")


CPU_CLASSES = ("cuda", "amx", "avx512-bf16", "avx512", "avx2", "other")
"""What decides a model's fastest format here: a GPU, or a CPU's widest native instructions."""


def cpu_class(device: torch.device, flags: frozenset[str] | None = None, capability: str | None = None) -> str:
    """The class of `device`: "cuda", or a CPU's from /proc/cpuinfo flags (AMX tiles, AVX-512 with bf16 dot
    products) and torch's own dispatch (`get_cpu_capability`: "AVX2" when ATEN_CPU_CAPABILITY=avx2 emulates
    an older CPU, so emulation counts as that CPU)."""
    if device.type == "cuda":
        return "cuda"
    flags = cpu_flags() if flags is None else flags
    capability = (capability or torch.backends.cpu.get_cpu_capability()).upper()
    if "AVX512" not in capability:
        return "avx2" if "AVX2" in capability else "other"
    if flags and "amx_bf16" in flags:
        return "amx"
    if cpu_bf16_native(flags):
        return "avx512-bf16"
    return "avx512"


@dataclass(frozen=True)
class Recommendation:
    """A machine's formats: the verifier's dtype and quantisation (core.models.verifier_quant), the drafter's dtype
    and quantisation (core.models.drafter_quant; "auto": the verifier's dtype), and why."""

    cpu_class: str
    dtype: str
    verifier_quant: str
    drafter_dtype: str
    drafter_quant: str
    why: str


RECOMMENDED = {
    "cuda": Recommendation("cuda", "auto", "none", "auto", "int4", "a GPU computes bf16 natively"),
    "amx": Recommendation("amx", "bfloat16", "none", "bfloat16", "int4",
                          "AMX computes bf16 natively (not measured by this project: kept as on AVX-512-BF16 before)"),
    "avx512-bf16": Recommendation("avx512-bf16", "float32", "int8", "bfloat16", "int4",
                                  "int8 verifier passes measured 2.7x faster than native bf16; the drafter's bf16 "
                                  "int4 token faster than its int8 one"),
    "avx512": Recommendation("avx512", "float32", "int8", "float32", "w8a8",
                             "no native bf16: int8 products, float32 elsewhere"),
    "avx2": Recommendation("avx2", "float32", "int8", "float32", "w8a8",
                           "no native bf16: int8 products, float32 elsewhere (int4 weights in float32 are slow here)"),
    "other": Recommendation("other", "float32", "none", "float32", "none", "no int8 kernel known here: the reference"),
}
"""Per class, the pair's formats, from measurements on 2026-12-07 (docs/benchmarks.md, "Precision per machine"):
Qwen2.5-Coder-1.5B one-token pass 73 ms int8 against 195 ms bf16 on AVX-512-BF16, 76 against 406 ms float32 under
AVX2 emulation; the 0.5B drafter's token 30 ms in bf16 with int4 weights (native bf16), 42 ms with int8 weights and
activations and 463 ms with int4 weights in float32 (AVX2). AMX and AVX-512 without bf16 are not measured here."""


def recommend(device: torch.device, flags: frozenset[str] | None = None, capability: str | None = None
              ) -> Recommendation:
    """This machine's recommended formats for a pair (see RECOMMENDED)."""
    return RECOMMENDED[cpu_class(device, flags, capability)]
