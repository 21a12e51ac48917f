"""`python -m core.tools.precision_bench`: what one verification pass costs in each precision on this machine,
and what each precision changes against full precision.

Loads the model once in float32, then swaps formats in place, interleaved per repeat so a shared machine's
drift does not favour one: fp32 (the reference), int8 (core/models/int8_linear.py: int8 weights per row, int8
activations per token, fbgemm), int8-intmm (the same on `torch._int_mm`), per-tensor (torch's old dynamic int8:
one activation scale per pass, not batch-invariant), and last bf16 (the model is cast, so it comes last).
Each pass is KV-cached after `--context` tokens and cropped back. Then the numerics: teacher-forced top-1
agreement of each format with float32 on float32's own greedy answers to held-out code prompts, and whether a
row's logits are bit-identical alone and inside the pass (`batch-inv.`).

    python -m core.tools.precision_bench --model embedded:qwen2.5-coder-1.5b-instruct --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timezone

import torch
from torch import nn

from core.models.drafter_quant import decoder_linears
from core.models.int8_linear import PerTokenInt8Linear
from core.models.loading import QWEN_CODER_15B_ID, load_model
from core.models.precision import cpu_class
from core.models.prompting import encode_prompt
from core.models.row_attention import use_row_attention
from core.tools.profile import machine_description

HELD_OUT = (
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Write a Python function that counts how often each word occurs in a string.",
    "Write a Python class for a stack with push, pop and peek.",
)
"""Code prompts written for this tool, apart from examples/ (held out from every calibration)."""
FORMATS = ("fp32", "int8", "int8-intmm", "per-tensor", "bf16")


class PerTensorInt8(nn.Module):
    """torch's old dynamic int8 linear (one activation scale per call): the batch-dependent baseline."""

    def __init__(self, layer: PerTokenInt8Linear, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.layer, self.bias = layer, bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.layer.in_features).float()
        out = torch.ops.quantized.linear_dynamic(flat, self.layer._packed, True)
        out = out if self.bias is None else out + self.bias
        return out.to(x.dtype).reshape(*x.shape[:-1], self.layer.out_features)


def slots(model: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    """Every linear the int8 verifier replaces: the decoder layers' and the output head."""
    head_parent, head_name = model, next(n for n, m in model.named_children() if m is model.get_output_embeddings())
    return [*decoder_linears(model), (head_parent, head_name, model.get_output_embeddings())]


def build_formats(places: list[tuple[nn.Module, str, nn.Linear]], names: list[str]) -> dict[str, list[nn.Module]]:
    """Per format, the module for each place (fp32: the model's own)."""
    original = [linear for _, _, linear in places]
    built: dict[str, list[nn.Module]] = {"fp32": original}
    if "int8" in names or "per-tensor" in names:
        built["int8"] = [PerTokenInt8Linear(linear, kernel="fbgemm") for linear in original]
    if "per-tensor" in names:
        built["per-tensor"] = [PerTensorInt8(q, lin.bias) for q, lin in zip(built["int8"], original, strict=True)]
    if "int8-intmm" in names:
        built["int8-intmm"] = [PerTokenInt8Linear(linear, kernel="int_mm") for linear in original]
    return built


def use(model: nn.Module, places: list[tuple[nn.Module, str, nn.Linear]], built: dict[str, list[nn.Module]],
        name: str) -> None:
    """Swap format `name` in; the per-token formats with row attention, as `quantise_verifier` sets them up."""
    for (parent, attribute, _), module in zip(places, built[name], strict=True):
        setattr(parent, attribute, module)
    if name.startswith("int8"):
        use_row_attention(model)
    else:
        model.set_attn_implementation("sdpa")


@torch.inference_mode()
def pass_seconds(model: nn.Module, context: list[int], tokens: list[int]) -> dict[int, float]:
    """One KV-cached pass of each of `tokens` after `context`: the cache is built once, untimed, and cropped back
    after every pass (a float32 prefill is the slow part on a CPU without bf16)."""
    cache = model(input_ids=torch.tensor([context]), use_cache=True).cache
    seconds = {}
    for k in tokens:
        start = time.perf_counter()
        model(input_ids=torch.tensor([context[1:k + 1]]), cache=cache, use_cache=True)
        seconds[k] = time.perf_counter() - start
        cache.crop(-k)
    return seconds


@torch.inference_mode()
def greedy(model: nn.Module, ids: list[int], n: int) -> list[int]:
    out, cache, step = [], None, torch.tensor([ids])
    for _ in range(n):
        result = model(input_ids=step, cache=cache, use_cache=True)
        cache, token = result.cache, int(result.logits[0, -1].argmax())
        out.append(token)
        step = torch.tensor([[token]])
    return out


@torch.inference_mode()
def numerics(model: nn.Module, texts: list[list[int]], answers: list[list[int]]) -> tuple[float, bool]:
    """(top-1 agreement with `answers` teacher-forced, whether each row's logits are batch-invariant)."""
    agree = total = 0
    invariant = True
    for ids, answer in zip(texts, answers, strict=True):
        full = ids + answer
        logits = model(input_ids=torch.tensor([full]), use_cache=False).logits[0, len(ids) - 1:-1]
        agree += int((logits.argmax(-1) == torch.tensor(answer)).sum())
        total += len(answer)
        cache = model(input_ids=torch.tensor([ids]), use_cache=True).cache
        block = model(input_ids=torch.tensor([answer[:4]]), cache=cache, use_cache=True).logits[0, 0]
        cache = model(input_ids=torch.tensor([ids]), use_cache=True).cache
        alone = model(input_ids=torch.tensor([answer[:1]]), cache=cache, use_cache=True).logits[0, 0]
        invariant = invariant and torch.equal(block, alone)
    return agree / max(total, 1), invariant


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=QWEN_CODER_15B_ID)
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--tokens", default="1,4,8")
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--answer-tokens", type=int, default=48, help="fp32 greedy tokens per prompt for the numerics")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = [f for f in args.formats.split(",") if f]
    tokens = [int(k) for k in args.tokens.split(",")]
    loaded = load_model(args.model, "cpu", "float32")
    model = loaded.model
    torch.manual_seed(0)
    context = torch.randint(10, 20000, (args.context,)).tolist()
    texts = [encode_prompt(loaded.tokenizer, t, chat_template=True) for t in HELD_OUT]
    answers = [greedy(model, ids, args.answer_tokens) for ids in texts] if args.answer_tokens else []
    places = slots(model)
    built = build_formats(places, names)
    ordered = [n for n in names if n != "bf16"] + (["bf16"] if "bf16" in names else [])
    samples: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.repeats):
        for name in ordered[:-1] if ordered[-1] == "bf16" else ordered:
            use(model, places, built, name)
            for k, took in pass_seconds(model, context, tokens).items():
                samples.setdefault((name, k), []).append(took)
    agreement = {}
    for name in ordered:
        if name == "bf16":
            use(model, places, built, "fp32")
            model.to(torch.bfloat16)
            for _ in range(args.repeats):
                for k, took in pass_seconds(model, context, tokens).items():
                    samples.setdefault((name, k), []).append(took)
        else:
            use(model, places, built, name)
        if answers:
            agreement[name] = numerics(model, texts, answers)
    print(report(args.model, tokens, ordered, samples, agreement))


def report(model: str, tokens: list[int], names: list[str], samples: dict[tuple[str, int], list[float]],
           agreement: dict[str, tuple[float, bool]]) -> str:
    """The printed table: a header line (model, date, machine, CPU class, load), then one row per format."""
    cpu = torch.device("cpu")
    load = open("/proc/loadavg").read().split()[0]
    lines = [f"# {model} | {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC | {machine_description(cpu)} | class "
             f"{cpu_class(cpu)} (torch {torch.backends.cpu.get_cpu_capability()}) | load {load}",
             "| format | " + " | ".join(f"{k} tok (ms)" for k in tokens) + " | top-1 vs fp32 | batch-inv. |",
             "|---" * (len(tokens) + 3) + "|"]
    for name in names:
        cells = [f"{statistics.median(samples[(name, k)]) * 1e3:.0f}" for k in tokens]
        agree, inv = agreement.get(name, (float("nan"), None))
        shown = "yes" if inv else "no" if inv is False else "-"
        lines.append(f"| {name} | {' | '.join(cells)} | {agree:.3f} | {shown} |")
    return "\n".join(lines)

if __name__ == "__main__":
    main()
