"""`python -m core.tools.record_sweep`: record a prompt's threshold sweep (a live run re-routed over a grid).

    python -m core.tools.record_sweep --all                 # regenerate every shipped sweep (examples/sweeps/)
    python -m core.tools.record_sweep --all --only smollm2  # the SmolLM2 ones only (no pair needed)
    python -m core.tools.record_sweep --example code:0 --preset qwen2.5-coder --pair qwen2.5-coder --out DIR
    python -m core.tools.record_sweep ... --load-option drafter_quant=int8   # any load_bundle option, recorded

Each point is a real re-route of the live run's model outputs through the engine's memo (core.sweeps.record);
the file records the models with their hashes, dtype, cost profile, machine, date and this command line.
Run it on a quiet machine: the live run's wall clock and plain decoding's are in the file.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.config import DecodeConfig, preset
from core.models.catalog import EMBEDDED_ID, QWEN_CODER_05B_ID, QWEN_CODER_15B_ID
from core.models.loading import drafter_setting, load_bundle
from core.sweeps.grid import Grid, Point, default_grid
from core.sweeps.record import SUFFIX, record, to_file
from examples import HERE as EXAMPLES
from examples import load_prompts

SWEEPS = EXAMPLES / "sweeps"
PAIR = {"verifier": QWEN_CODER_15B_ID, "drafter": QWEN_CODER_05B_ID, "dtype": "auto"}
SMOLLM2 = {"verifier": EMBEDDED_ID, "drafter": None, "dtype": None}


@dataclass(frozen=True)
class Shipped:
    """One sweep the app ships: its file name, example prompt, settings and models."""

    name: str
    example: str  # FAMILY:INDEX (0-based)
    config: DecodeConfig
    models: dict = field(default_factory=dict)
    calibrated_slim: float | None = None  # the τ_slim the calibration fitted for the run's slim route
    load_options: dict = field(default_factory=dict)  # load_bundle options it is recorded with (the command's win)

    @property
    def path(self) -> Path:
        return SWEEPS / f"{self.name}{SUFFIX}"


PAPER_VIA = DecodeConfig(mode="via", drafter="model", slim_route="calibrated-slim", gamma=6, tau_accept=0.9,
                         tau_slim=1.0, copy_evidence="verifier", max_new_tokens=96)
"""The pair sweeps' setting: the paper's VIA-SD (tier 1 keeps confident drafts unchecked, so the thresholds trade
fidelity for speed), with the 0.5B's own weights (PAIR_LOAD). The pair's recommended setting is the exact one,
`preset("qwen2.5-coder")`; these sweeps show the trade-off, and were recorded before that preset changed."""
PAIR_LOAD = {"drafter_quant": "none"}

SHIPPED = (
    Shipped("qwen2.5-coder-code0", "code:0", PAPER_VIA, PAIR, 0.575, PAIR_LOAD),
    Shipped("qwen2.5-coder-code9", "code:9", PAPER_VIA, PAIR, 0.575, PAIR_LOAD),
    Shipped("qwen2.5-coder-math12", "math:12", PAPER_VIA, PAIR, 0.575, PAIR_LOAD),
    Shipped("qwen2.5-coder-code6", "code:6", PAPER_VIA, PAIR, 0.575, PAIR_LOAD),
    Shipped("smollm2-three-tier-chat0", "chat:0", DecodeConfig(max_new_tokens=48), SMOLLM2),
    Shipped("smollm2-lookup-grounded8", "grounded:8", preset("lookup"), SMOLLM2),
)
"""What ships (examples/sweeps/): four prompts on the Qwen2.5-Coder pair (code, an edit, math, a chat-like
question) and two on SmolLM2 (the three-tier chat run and the prompt-lookup opening of earlier versions)."""


def example_prompt(spec: str) -> tuple[str, object]:
    family, _, index = spec.partition(":")
    prompts = load_prompts(family)
    if not prompts or not index.isdigit() or int(index) >= len(prompts):
        raise SystemExit(f"no example {spec!r}: use FAMILY:INDEX, e.g. code:0")
    chosen = prompts[int(index)]
    return chosen.text, chosen.expectations


def _floats(text: str | None) -> tuple[float, ...] | None:
    return tuple(float(v) for v in text.split(",")) if text else None


def load_options(pairs: list[str]) -> dict[str, object]:
    """`--load-option KEY=VALUE` pairs as load_bundle keyword arguments (numbers and true/false parsed)."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if not key or not _:
            raise SystemExit(f"--load-option wants KEY=VALUE, not {pair!r}")
        options[key] = {"true": True, "false": False}.get(value.lower(), value)
    return options


def record_one(spec: Shipped, out: Path, grid: Grid, extra: dict, command: str, memo_bytes: int) -> Path:
    prompt, expectations = example_prompt(spec.example)
    models = spec.models or SMOLLM2
    started = time.perf_counter()
    extra = {**spec.load_options, **extra}
    if models.get("drafter"):  # recorded by name, so a later change of the pair's default cannot move the points
        extra["drafter_quant"] = drafter_setting(models["verifier"], models["drafter"], extra.get("drafter_quant"))
    bundle = load_bundle(models["verifier"], models.get("drafter"), dtype=models.get("dtype"), **extra)
    bundle.memo.max_bytes = max(bundle.memo.max_bytes, memo_bytes)  # no point evicts a row another point needs
    print(f"{spec.name}: loaded {bundle.verifier.name} ({bundle.verifier.dtype}) in "
          f"{time.perf_counter() - started:.1f} s; {len(grid.points())} points", flush=True)

    def progress(point: Point, trace: object, seconds: float) -> None:
        print(f"  {point.key:>16}  {len(trace.tokens):3d} tokens  {seconds:6.2f} s", flush=True)

    sweep = record(bundle, prompt, spec.config, grid, expectations, progress)
    sweep.meta.update(example=spec.example, name=spec.name, command=command, load_options=extra,
                      recorded=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      load_average=[round(v, 2) for v in os.getloadavg()],
                      load={k: v for k, v in models.items()})
    path = to_file(sweep, out / f"{spec.name}{SUFFIX}")
    print(f"{spec.name}: {len(sweep.order)} points, {len({id(t) for t in sweep.traces.values()})} runs, "
          f"{sweep.meta['seconds']:.0f} s, {path.stat().st_size / 1024:.0f} KiB -> {path}", flush=True)
    return path


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m core.tools.record_sweep", description=__doc__.splitlines()[0])
    p.add_argument("--all", action="store_true", help="record every shipped sweep (core.tools.record_sweep.SHIPPED)")
    p.add_argument("--only", default="", help="with --all: only the sweeps whose name contains this")
    p.add_argument("--example", help="FAMILY:INDEX of the prompt (without --all)")
    p.add_argument("--preset", help="the settings: a core.config preset name (default: DecodeConfig's)")
    p.add_argument("--pair", choices=["qwen2.5-coder"], help="run on the offline Qwen2.5-Coder pair")
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--name", help="file name without the suffix (default: from the example)")
    p.add_argument("--tau-accept-values", help="comma list (default: 0.30 to 1.00 in 0.05 notches)")
    p.add_argument("--tau-slim-values", help="comma list (default: off, the calibrated value, one lower)")
    p.add_argument("--gammas", help="comma list of draft lengths (default: about a third around the run's γ)")
    p.add_argument("--load-option", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to load_bundle (e.g. drafter_quant=int8) and recorded in the file")
    p.add_argument("--memo-gib", type=float, default=6.0,
                   help="prediction memo budget while recording (default 6 GiB: the pair's grid fits)")
    p.add_argument("--out", type=Path, default=SWEEPS, help=f"folder to write to (default: {SWEEPS})")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    command = "python -m core.tools.record_sweep " + shlex.join(sys.argv[1:] if argv is None else argv)
    extra = load_options(args.load_option)
    if args.all:
        specs = [s for s in SHIPPED if args.only in s.name]
    else:
        if not args.example:
            raise SystemExit("give --example FAMILY:INDEX, or --all")
        config = preset(args.preset) if args.preset else DecodeConfig()
        name = args.name or args.example.replace(":", "")
        specs = [Shipped(name, args.example, config, PAIR if args.pair else SMOLLM2,
                         0.575 if args.pair else None)]
    for spec in specs:
        config = spec.config.with_(max_new_tokens=args.max_new_tokens) if args.max_new_tokens else spec.config
        spec = replace(spec, config=config)
        grid = default_grid(config, spec.calibrated_slim)
        grid = Grid(_floats(args.tau_accept_values) or grid.tau_accept, _floats(args.tau_slim_values) or grid.tau_slim,
                    tuple(int(g) for g in _floats(args.gammas) or ()) or grid.gamma)
        record_one(spec, args.out, grid, extra, command, int(args.memo_gib * 2**30))


if __name__ == "__main__":
    main()
