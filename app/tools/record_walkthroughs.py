"""Record the Classroom walkthroughs' traces: `python -m app.tools.record_walkthroughs [--recorded] [--only STEM]`.

A walkthrough that runs live (on the visitor's models) is recorded here on the embedded model into
tests/data/walkthroughs/<stem>.json (and <stem>.fix.json for its "Run the fix" step), with fidelity and
priced as the Classroom prices a live run, so the tests check every caption and every talking point against
what that model does there. `--recorded` also
re-records the walkthroughs that ship a saved trace (`recorded_trace` in examples/traces/) on the models
that trace names (the Qwen pair: 5-11 GB; run it on a quiet machine), every pass for real (its notes quote
measured times), priced by the profile of that device, dtype and thread count.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.views import walkthroughs
from core import attach_fidelity, generate, load_bundle
from core.decoding.cost import CostModel
from core.trace import Trace
from examples import HERE, expectations_for

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "walkthroughs"


def _record(bundle: object, walk: dict, fixed: bool = False, measured: bool = False) -> Trace:
    """One walkthrough run with fidelity. Live walkthroughs are priced as the Classroom prices them (the default
    profile); a saved trace (`measured`) runs every pass for real, priced by this device's measured profile."""
    config = walkthroughs.walkthrough_config(walk, fixed=fixed)
    profile = CostModel.for_model(bundle.verifier.model).profile if measured else None
    trace = generate(bundle, walk["prompt"], config, replay=not measured, profile=profile)
    attach_fidelity(bundle, trace, expectations=expectations_for(walk["prompt"]))
    return trace


def _summary(name: str, trace: Trace) -> str:
    f = trace.fidelity
    differ = f"{f.words_differing:.0%} words differ" if f is not None else "no fidelity"
    return (f"{name}: {len(trace.rounds)} rounds, {len(trace.tokens)} tokens, {len(trace.rolled_back)} cut by the "
            f"audit, {differ}, {trace.wall_s:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recorded", action="store_true", help="also re-record walkthroughs with a saved trace")
    parser.add_argument("--only", default="", help="only the walkthrough whose file name contains this")
    args = parser.parse_args(argv)
    paths = [p for p in sorted((HERE / "walkthroughs").glob("*.json")) if args.only in p.stem]
    live = [(p, json.loads(p.read_text())) for p in paths]
    saved = [(p, w) for p, w in live if w.get("recorded_trace")]
    live = [(p, w) for p, w in live if not w.get("recorded_trace")]
    if live:
        bundle = load_bundle()  # what a visitor's session loads
        for path, walk in live:
            trace = _record(bundle, walk)
            (DATA / f"{path.stem}.json").write_text(trace.to_json())
            print(_summary(path.stem, trace), flush=True)
            if walk.get("fixed_config"):
                fix = _record(bundle, walk, fixed=True)
                (DATA / f"{path.stem}.fix.json").write_text(fix.to_json())
                print(_summary(path.stem + " (fix)", fix), flush=True)
    for path, walk in saved if args.recorded else []:
        old = walkthroughs.recorded_trace(walk)
        bundle = load_bundle(old.models["verifier"], drafter=old.models.get("drafter") if walk["config"].get(
            "drafter") in ("model", "hybrid") else None, dtype=old.models.get("dtype"))
        trace = _record(bundle, walk, measured=True)
        (walkthroughs.TRACES / walk["recorded_trace"]).write_text(trace.to_json())
        print(_summary(path.stem, trace), flush=True)


if __name__ == "__main__":
    main()
