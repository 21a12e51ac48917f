"""Token dump: every decision of 77 fixed runs, written as JSON lines, so a refactor of the loop can be proved to
change nothing (greedy output, tiers, reasons, verdicts, confidences, rounds, calls, costs, audit states, cuts).

    python tests/token_dump.py --out /tmp/after.jsonl            # 57 tiny-model runs + 20 SmolLM2 runs
    python tests/token_dump.py --tiny-only --out /tmp/after.jsonl
    python tests/token_dump.py --compare /tmp/before.jsonl /tmp/after.jsonl

The 57 tiny runs (tests/tiny.py: a 6-layer verifier with quiet middle layers and a separate 2-layer drafter)
cover mode x drafter (self, model, ngram, hybrid) x copy evidence x thresholds (1.0, 0.0, equal pairs) x greedy
and sampling x gamma x slim gate x audit span x the lossy rules, drawn by a seeded generator after a fixed set
of edge cases; the 20 SmolLM2 runs (embedded, float32) are grounded prompts under the prompt-lookup settings.
The tool lives in tests/ because it builds the tests' tiny models; it imports only names that have not moved
(`generate`, `DecodeConfig`, `load_bundle`), so the same file runs on an older commit to make its baseline.
Wall-clock times are left out (they differ run to run); everything else a trace records is dumped.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from core.config import LOOKUP_PRESET, DecodeConfig  # noqa: E402
from core.decoding.engine import generate  # noqa: E402

TINY_PROMPTS = ("the cat sat on the mat. the cat sat on the", "a dog saw a log. a dog saw a log and a dog",
                "one two three, one two three, one two")
TINY_BASE = DecodeConfig(max_new_tokens=40, chat_template=False, draft_route="skip-middle-50",
                         slim_route="skip-middle-25")
EDGE_CASES = (
    dict(mode="plain"),
    dict(mode="sd", drafter="self", gamma=4),
    dict(mode="sd", drafter="ngram", gamma=6, copy_evidence="audit", tau_accept=0.9, tau_slim=1.0),
    dict(mode="via", drafter="self", tau_accept=1.0, tau_slim=1.0),
    dict(mode="via", drafter="self", tau_accept=0.0, tau_slim=0.0),
    dict(mode="via", drafter="model", tau_accept=0.5, tau_slim=0.5),
    dict(mode="via", drafter="self", tau_accept=0.6, tau_slim=1.0, copy_evidence="audit"),
    dict(mode="via", drafter="model", tau_accept=0.4, tau_slim=0.2, copy_evidence="audit", audit_span=2),
    dict(mode="via", drafter="ngram", tau_accept=0.3, tau_slim=1.0, copy_evidence="audit", audit_span=3),
    dict(mode="via", drafter="hybrid", tau_accept=0.5, tau_slim=0.3, copy_evidence="audit", gamma=6),
    dict(mode="via", drafter="hybrid", tau_accept=0.5, tau_slim=0.3, copy_evidence="slim", gamma=6),
    dict(mode="via", drafter="ngram", tau_accept=0.5, tau_slim=0.3, copy_evidence="statistic"),
    dict(mode="via", drafter="self", tau_accept=0.5, tau_slim=0.3, slim_min_hit_rate=0.9, gamma=2),
    dict(mode="via", drafter="self", tau_accept=0.7, tau_slim=0.4, temperature=0.8, seed=3),
    dict(mode="via", drafter="ngram", tau_accept=0.5, tau_slim=1.0, copy_evidence="audit", temperature=1.0, seed=1),
    dict(mode="sd", drafter="self", verify_rule="bild", verify_alpha=1.0, draft_stop_below=0.3),
    dict(mode="sd", drafter="model", verify_rule="cascade-opt", verify_alpha=0.2),
)


def tiny_configs(count: int = 57) -> list[tuple[str, DecodeConfig]]:
    """(prompt, config) of every tiny run: the edge cases, then seeded random draws until `count`."""
    rng = random.Random(20)
    runs = [(TINY_PROMPTS[i % len(TINY_PROMPTS)], TINY_BASE.with_(**case)) for i, case in enumerate(EDGE_CASES)]
    thresholds = (0.0, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0)
    while len(runs) < count:
        tau_accept = rng.choice(thresholds)
        tau_slim = rng.choice([t for t in thresholds if t <= tau_accept] + [1.0])
        sampling = rng.random() < 0.3
        config = TINY_BASE.with_(
            mode=rng.choice(("sd", "via", "via", "via")), drafter=rng.choice(("self", "model", "ngram", "hybrid")),
            copy_evidence=rng.choice(("slim", "verifier", "statistic", "audit")), tau_accept=tau_accept,
            tau_slim=tau_slim, gamma=rng.choice((1, 2, 3, 4, 6, 8)), slim_min_hit_rate=rng.choice((0.0, 0.0, 0.5)),
            audit_span=rng.choice((2, 4, 32)), draft_stop_below=rng.choice((0.0, 0.0, 0.2)),
            temperature=0.9 if sampling else 0.0, top_p=rng.choice((1.0, 0.9)), seed=rng.randrange(100))
        runs.append((rng.choice(TINY_PROMPTS), config.validate()))
    return runs


def grounded_configs(count: int = 20) -> list[tuple[str, DecodeConfig]]:
    """(prompt, config) of the SmolLM2 runs: grounded prompts under the prompt-lookup settings and self-drafting."""
    from examples import load_prompts

    prompts = [p.text for p in load_prompts("grounded")]
    settings = (LOOKUP_PRESET, LOOKUP_PRESET.with_(mode="sd"),
                LOOKUP_PRESET.with_(copy_evidence="statistic", tau_accept=0.6),
                LOOKUP_PRESET.with_(drafter="self", gamma=4, tau_accept=0.8, tau_slim=0.5),
                LOOKUP_PRESET.with_(copy_evidence="slim", tau_accept=0.8, tau_slim=0.5, gamma=10))
    runs = []
    for i in range(count):
        runs.append((prompts[i // len(settings) % len(prompts)], settings[i % len(settings)].with_(max_new_tokens=48)))
    return runs


def record(t: object) -> dict:
    """A token's record as dumped, every recorded field (floats exactly as recorded)."""
    keep = ("position", "token_id", "text", "round", "tier", "outcome", "reason", "verdict", "draft_confidence",
            "slim_confidence", "full_confidence", "audit", "audit_round")
    return {k: getattr(t, k) for k in keep}


def dump(trace: object, name: str, config: DecodeConfig) -> dict:
    """One run's line: its decisions, rounds and priced calls (no wall clock)."""
    rounds = []
    for r in trace.rounds:
        calls = [{k: v for k, v in asdict(c).items() if k != "wall_s"} for c in r.calls]
        rounds.append({"index": r.index, "draft_tokens": list(r.draft_tokens), "accepted": r.accepted,
                       "emitted": r.emitted, "rolled_back": r.rolled_back, "calls": calls})
    return {"run": name, "config": config.to_dict(), "tokens": [record(t) for t in trace.tokens],
            "cut": [record(t) for t in trace.rolled_back], "rounds": rounds, "stop_reason": trace.stop_reason,
            "plain_cost_units": trace.plain_cost_units, "prefill_units": trace.prefill_units,
            "equals_full_greedy": trace.equals_full_greedy}


def guarded(bundle: object, prompt: str, config: DecodeConfig, name: str) -> dict:
    """The run's dump, or its error (a crash is a recorded outcome too: the comparison shows it)."""
    try:
        return dump(generate(bundle, prompt, config), name, config)
    except Exception as error:  # noqa: BLE001
        return {"run": name, "config": config.to_dict(), "error": f"{type(error).__name__}: {error}"}


def run_all(out: Path, tiny_only: bool) -> None:
    from tiny import tiny_bundle

    from core.models.loading import ModelBundle

    tiny = tiny_bundle("llama", layers=6, drafter_layers=2, middle_scale=0.1, avoid_eos=True)
    lines = []
    for i, (prompt, config) in enumerate(tiny_configs()):
        fresh = ModelBundle(verifier=tiny.verifier, drafter=tiny.drafter)  # an empty memo: every pass runs
        lines.append(guarded(fresh, prompt, config, f"tiny-{i:02d}"))
    if not tiny_only:
        from core.models.loading import load_bundle

        smol = load_bundle(dtype="float32")
        for i, (prompt, config) in enumerate(grounded_configs()):
            lines.append(guarded(smol, prompt, config, f"smollm2-{i:02d}"))
    out.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    print(f"{len(lines)} runs -> {out}")


def compare(before: Path, after: Path) -> int:
    """Print every difference, run by run and field by field; 0 when the dumps are identical."""
    old = [json.loads(line) for line in before.read_text().splitlines()]
    new = [json.loads(line) for line in after.read_text().splitlines()]
    differing = 0
    for a, b in zip(old, new, strict=False):
        fields = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        if fields:
            differing += 1
            print(f"{a['run']}: differs in {', '.join(fields)}")
    if len(old) != len(new):
        print(f"run counts differ: {len(old)} before, {len(new)} after")
        differing += 1
    print(f"{len(old)} runs before, {len(new)} after: {'identical' if not differing else f'{differing} differ'}")
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write the dump here")
    parser.add_argument("--tiny-only", action="store_true", help="only the 57 tiny-model runs")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        parser.error("--out or --compare is needed")
    run_all(args.out, args.tiny_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
