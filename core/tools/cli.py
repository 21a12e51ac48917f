"""`python -m core`: generate from a prompt, print the text coloured by tier and a metrics table."""

from __future__ import annotations

import argparse
import os
import sys
import time

from core.analysis.breakeven import explain
from core.analysis.drafting_pays import fit_to_machine
from core.analysis.fidelity import attach_fidelity, numerics_split
from core.analysis.metrics import measured_speedup, summarize
from core.analysis.plain_pace import PLAIN_PACES, decode_pace, measured_speedup_here, probe, slower_because
from core.analysis.tradeoffs import compare
from core.config import COPY_EVIDENCE, DRAFTERS, LOOKUP_PRESET, PRESETS, DecodeConfig, preset
from core.decoding.cost_profiles import device_profile
from core.decoding.engine import generate
from core.errors import ViaSdError
from core.limits import MAX_NEW_TOKENS
from core.models.catalog import WHEEL_MODELS
from core.models.drafter_quant import DRAFTER_QUANTS
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle
from core.models.pairs import pair_preset_for
from core.models.precision import DTYPE_CHOICES, cpu_class, describe_precision
from core.models.verifier_quant import VERIFIER_QUANTS
from core.trace import Trace
from core.vocabulary import SIGNALS
from examples import expectations_for, load_prompts

# Okabe-Ito-like ANSI 256 colours, plus a second cue (underline / bold) per tier.
STYLE = {
    "direct-accepted": ("\033[38;5;214m", "1"), "slim-accepted": ("\033[38;5;75m", "2"),
    "slim-regenerated": ("\033[4;38;5;33m", "2"), "full-accepted": ("\033[38;5;35m", "3"),
    "full-corrected": ("\033[1;4;38;5;161m", "3"), "full-bonus": ("\033[1;38;5;29m", "3"),
    "plain": ("\033[38;5;250m", "3"),
}
RESET = "\033[0m"


def render(trace: Trace, color: bool) -> str:
    """The generated text, each token coloured by outcome (TTY) or tagged [tier] (plain text)."""
    if color:
        return "".join(f"{STYLE[t.outcome][0]}{t.text}{RESET}" for t in trace.tokens)
    return "".join(f"{t.text}[{STYLE[t.outcome][1]}]" for t in trace.tokens)


def legend(color: bool) -> str:
    if color:
        return "  ".join(f"{code}{name}{RESET}" for name, (code, _) in STYLE.items())
    return "tags: [1] direct accept, [2] slim verifier, [3] full verifier"


ROWS = [("tokens", "tokens", "{:d}"), ("measured tokens/s", "tokens_per_s", "{:.2f}"),
        ("modelled speed-up (accelerator)", "modelled_speedup", "{:.2f}x"),
        ("rejection rate", "rejection_rate", "{:.3f}"), ("mean accepted length", "mean_accepted_length", "{:.2f}"),
        ("full calls / token", "full_calls_per_token", "{:.3f}"),
        ("slim calls / token", "slim_calls_per_token", "{:.3f}"),
        ("drafter calls / token", "drafter_calls_per_token", "{:.3f}"),
        ("identical to full model", "identical_to_full", "{}"), ("full-model agreement", "full_agreement", "{:.3f}"),
        ("full-model NLL (nats/token)", "full_nll", "{:.3f}")]


def metrics_table(traces: dict[str, Trace]) -> str:
    """Metrics side by side, one column per run; measured and modelled numbers labelled as such."""
    summaries = {name: summarize(t) for name, t in traces.items()}
    width = max(len(r[0]) for r in ROWS) + 2
    lines = ["".ljust(width) + "".join(name.rjust(12) for name in summaries)]
    for label, key, fmt in ROWS:
        cells = [fmt.format(m[key]) if key in m else "-" for m in summaries.values()]
        lines.append(label.ljust(width) + "".join(c.rjust(12) for c in cells))
    ratios = [measured_speedup(t, traces["plain"]) for t in traces.values()] if "plain" in traces else [None]
    if None not in ratios:
        cells = [f"{r:.2f}x" for r in ratios]
        lines.append("measured speed-up vs plain".ljust(width) + "".join(c.rjust(12) for c in cells))
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m core", description="VIA-SD: three-tier speculative decoding.")
    p.add_argument("prompt", nargs="?", help="the user message (default: an example)")
    p.add_argument("--example", default="chat:0", help="FAMILY:INDEX from examples/ when no prompt is given")
    p.add_argument("--mode", default="via", choices=["plain", "sd", "via", "all"],
                   help="'all' runs plain, classic SD and VIA-SD side by side")
    p.add_argument("--model", default=EMBEDDED_ID, help=f"verifier: an offline model ({', '.join(WHEEL_MODELS)}), "
                   "a Hub id or a local folder")
    p.add_argument("--preset", choices=list(PRESETS), help="start from core.config.preset(NAME) instead of "
                   "DecodeConfig's defaults ('lookup': prompt lookup with audited copies; 'qwen2.5-coder': the "
                   "offline pair's setting, the default when that pair is loaded and no threshold is given); "
                   "options given explicitly still apply")
    p.add_argument("--drafter", choices=list(DRAFTERS), help="default: self (lookup preset: ngram)")
    p.add_argument("--drafter-model", help="offline name, Hub id or folder of a separate drafter (implies --drafter "
                   "model)")
    p.add_argument("--drafter-quant", help="a cheaper drafter model: " + ", ".join(DRAFTER_QUANTS) + " (or "
                   "WEIGHTS+vocabN; core/models/drafter_quant.py). Default: the pair preset's recommended setting "
                   "for a known pair, else none")
    p.add_argument("--verifier-quant", choices=list(VERIFIER_QUANTS), help="the verifier's precision: none (its "
                   "own weights, the reference), int8 (int8 weights and per-token activations, batch-invariant) or "
                   "auto (this CPU's recommendation). Default: auto for the Qwen2.5-Coder pair, else none")
    p.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    p.add_argument("--dtype", choices=list(DTYPE_CHOICES),
                   help="auto = bf16 where the device computes it natively (CUDA, a CPU with AVX512-BF16 or AMX), "
                   "else fp32. Default: auto for the Qwen2.5-Coder pair and on CUDA, float32 for SmolLM2 and Hub "
                   "ids on a CPU; float32 keeps classic SD exact")
    p.add_argument("--draft-route", help=f"default: {DecodeConfig.draft_route}")
    p.add_argument("--slim-route", help=f"default: {DecodeConfig.slim_route}")
    p.add_argument("--gamma", type=int, help=f"default: {DecodeConfig.gamma}")
    p.add_argument("--tau-accept", type=float, help=f"default: {DecodeConfig.tau_accept}")
    p.add_argument("--tau-slim", type=float, help=f"default: {DecodeConfig.tau_slim}; 1.0 switches tier 2 off")
    p.add_argument("--copy-evidence", choices=list(COPY_EVIDENCE),
                   help="what a prompt-lookup copy needs before tier 1 keeps it (default: verifier)")
    p.add_argument("--draft-stop-below", type=float, help="cut a draft at its first token scoring below this")
    p.add_argument("--audit-span", type=int, help="copies kept on trust before the full model must audit them")
    p.add_argument("--ngram-size", type=int, help="prompt lookup: longest n-gram matched")
    p.add_argument("--signal", default="prob", choices=list(SIGNALS), help="confidence signal for every tier")
    p.add_argument("--max-new-tokens", type=int, help=f"default: {DecodeConfig.max_new_tokens} (lookup preset: "
                   f"{LOOKUP_PRESET.max_new_tokens}); at most {MAX_NEW_TOKENS}")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-chat-template", action="store_true")
    p.add_argument("--profile", help="cost profile for the 'why' line: a name in core/profiles or a JSON file "
                   "(default: this device's shipped profile, else the modelled accelerator)")
    p.add_argument("--json", metavar="FILE", help="also write the trace(s) as JSON")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    return p


def _quant_label(models: dict) -> str:
    """', verifier int8 (avx2)': the verifier's precision and the CPU class it was chosen for, where quantised."""
    quant = models.get("verifier_quant", "none")
    return "" if quant == "none" else f", verifier {quant} ({models.get('cpu_class', '?')})"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        prompt = args.prompt or _example(args.example)
        config = build_config(args)
        print(f"loading {args.model}" + (f" with drafter {args.drafter_model}" if args.drafter_model else "") + " ...",
              file=sys.stderr)
        bundle = load_bundle(args.model, args.drafter_model, args.device, args.dtype, progress=ProgressLine(),
                             drafter_quant=args.drafter_quant, verifier_quant=args.verifier_quant)
        if bundle.drafter is not None:
            print(f"drafter: {bundle.drafter.label}", file=sys.stderr)
        print(f"precision: {describe_precision(bundle.verifier.device, bundle.verifier.dtype)}; verifier "
              f"{bundle.verifier.verifier_quant} ({cpu_class(bundle.verifier.device)}); settings: "
              f"{config_origin(args)}", file=sys.stderr)
        if preset_name(args) and args.gamma is None and config.drafter == "model":  # the recommended setting, fitted
            fitted = fit_to_machine(bundle, config)  # to this machine's measured passes (core.analysis.drafting_pays)
            config = fitted.config if args.mode != "all" else config.with_(gamma=fitted.gamma)
            print(f"fitted to this machine: {fitted.note}" + (" (--mode all still runs sd and via to compare)"
                                                             if args.mode == "all" and fitted.config.mode == "plain"
                                                             else ""), file=sys.stderr)
        # every call of the runs is priced once, by the profile of the verifier's own device, dtype and threads
        profile = device_profile(bundle.verifier.device, args.profile, bundle.verifier.dtype)
        if args.mode == "all":  # a first pass after a load pays one-off costs (kernels, pages): not plain's
            generate(bundle, prompt, config.with_(mode="plain", max_new_tokens=2), replay=False)
            traces = compare(bundle, prompt, config, replay=False, profile=profile,
                             expectations=expectations_for(prompt))
        else:
            traces = {args.mode: generate(bundle, prompt, config, replay=False, profile=profile)}
            attach_fidelity(bundle, traces[args.mode], expectations=expectations_for(prompt))
    except ViaSdError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    print(f"prompt: {prompt}\n")
    for name, trace in traces.items():
        print(f"--- {name} ({trace.models['drafter']}; slim {trace.models['slim_route']}; "
              f"{trace.models.get('dtype', '?')}{_quant_label(trace.models)})")
        print(render(trace, color) + "\n")
    print(legend(color) + "\n")
    print(metrics_table(traces))
    splits = [f"{name} {split}" for name, t in traces.items() if (split := numerics_split(t))]
    if splits:
        print("words differing from plain greedy, split: " + "; ".join(splits))
    label = next(iter(traces.values())).cost_label if traces else ""
    print(f"\nmeasured = wall clock on this machine; modelled = the cost profile {label} (core/decoding/cost.py)")
    if args.mode in ("sd", "via"):
        print(measured_line(bundle, traces[args.mode]))
    print(why_lines(traces))
    if args.json:
        with open(args.json, "w") as handle:
            handle.write("[" + ",\n".join(t.to_json() for t in traces.values()) + "]")
    return 0


THRESHOLDS = ("tau_accept", "tau_slim")


def preset_name(args: argparse.Namespace) -> str | None:
    """The named setting the run starts from: --preset, else the loaded pair's own when no threshold is given."""
    if args.preset:
        return args.preset
    pair = pair_preset_for(args.model, args.drafter_model)
    if pair is not None and pair.settings and all(getattr(args, name) is None for name in THRESHOLDS):
        return pair.settings
    return None


def config_origin(args: argparse.Namespace) -> str:
    name = preset_name(args)
    return f'core.config.preset("{name}") and the options given' if name else "DecodeConfig's defaults and the " \
        "options given"


class ProgressLine:
    """Prints install and load progress to stderr: each stage once, then about every 10 % or 5 s."""

    def __init__(self) -> None:
        self.stage = ""
        self.shown = -1.0
        self.at = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        now = time.monotonic()
        if stage == self.stage and fraction < 1.0 and fraction - self.shown < 0.1 and now - self.at < 5:
            return
        if stage == self.stage and fraction == self.shown:
            return
        self.stage, self.shown, self.at = stage, fraction, now
        amount = f"{done / 1e6:,.0f} / {total / 1e6:,.0f} MB" if total > 1 else ("done" if done else "started")
        print(f"  {stage}: {amount} ({fraction:.0%})", file=sys.stderr)


def build_config(args: argparse.Namespace) -> DecodeConfig:
    """The run's settings: DecodeConfig's defaults (or a named preset's: --preset, or the loaded pair's when no
    threshold is given), then every option given on the command line."""
    name = preset_name(args)
    base = (preset(name) if name else DecodeConfig()).given(
        args, "drafter", "draft_route", "slim_route", "gamma", "tau_accept", "tau_slim", "copy_evidence",
        "draft_stop_below", "audit_span", "ngram_size", "max_new_tokens")
    return base.with_(
        mode="via" if args.mode == "all" else args.mode, drafter="model" if args.drafter_model else base.drafter,
        draft_signal=args.signal, slim_signal=args.signal, temperature=args.temperature, top_p=args.top_p,
        seed=args.seed, chat_template=not args.no_chat_template).validate()


def measured_line(bundle: ModelBundle, trace: Trace) -> str:
    """A single-mode run's measured speed-up over plain decoding here: plain's pace from this process's record, else
    from a short timed probe on the same prompt (core.analysis.plain_pace); --mode all times plain over the answer."""
    pace = PLAIN_PACES.get(trace.models)
    if pace is None and decode_pace(trace) is not None:
        pace, _ = probe(bundle, trace)
    measured = measured_speedup_here(trace, pace)
    if measured is None:
        return ("measured speed-up vs plain: not measured (too few rounds to time after the prompt's pass); "
                "--mode all runs plain beside it")
    line = (f"measured speed-up vs plain: {measured.speedup:.2f}x (after the prompt's pass; plain's pace from "
            f"{pace.source}; --mode all times plain over the whole answer)")
    modelled = summarize(trace)["modelled_speedup"]
    if modelled > 1.0 and measured.contradicts:
        line += f"\n  modelled {modelled:.2f}x but slower than plain here: {slower_because(trace, measured)}"
    return line


def why_lines(traces: dict[str, Trace]) -> str:
    """One generated sentence per run saying what made it fast or slow (core.analysis.breakeven), from the
    calls as the engine priced them (by the run's cost profile)."""
    labels = sorted({t.cost_label or t.cost_profile for t in traces.values()})
    lines = [f"\nwhy (cost profile: {', '.join(labels)}):"]
    lines += [f"  {name}: {explain(trace)}" for name, trace in traces.items()]
    return "\n".join(lines)


def _example(spec: str) -> str:
    family, _, index = spec.partition(":")
    prompts = load_prompts(family)
    if not prompts:
        raise ViaSdError(f"no example family '{family}': use chat, code, math or summarisation")
    try:
        return prompts[int(index or 0)].text
    except (ValueError, IndexError):
        raise ViaSdError(f"example '{spec}' not found: {family} has {len(prompts)} prompts (0-based)") from None
