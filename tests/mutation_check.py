"""Mutation check: break one core invariant at a time and show that the test suite notices.

    python tests/mutation_check.py           # every mutant against FULL_TESTS (rules, engine, copy evidence, audit,
                                             # the property test of the claims on screen)
    python tests/mutation_check.py --quick   # a fast subset (CI runs this through tests/decoding/test_mutation.py)

The repository is copied to a temporary folder, the unmutated copy must pass the chosen tests
first, then each mutant is applied to a fresh copy and the same tests run against it. A mutant is
*killed* when at least one test fails. Exit status: 0 when every mutant is killed, 1 when one
survives, 2 when the baseline fails or an anchor is missing.

Mutations are located by an explicit anchor list: each edit names a file and one or more
alternative patterns (old code shapes, newest first); the first pattern that occurs exactly once is
replaced. When none matches, the script stops and names the edit: the code moved, so the anchor
list must be updated. It never guesses.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Edit:
    """Replace exactly one occurrence of the first matching regex in `path` (relative to the repo)."""

    path: str
    alternatives: tuple[tuple[str, str], ...]  # (regex, replacement), tried in order


@dataclass(frozen=True)
class Mutant:
    name: str
    edits: tuple[Edit, ...]


MUTANTS = (
    Mutant("verifier accepts everything", (
        Edit("core/decoding/sampling.py", (  # the engine's greedy rule (ExactRule.judge): accept iff draft == argmax
            (r"Verdict\(best == token, best,", "Verdict(True, token,"),
        )),
        Edit("core/decoding/sampling.py", (  # sampling rule: accept with probability min(1, q/p)
            (r"if p_token > 0 and sampler\.uniform\(\) < min\(1\.0, q_token / p_token\):", "if True:"),
            (r"if p_token > 0 and sampler\.uniform\(\) < min\(1\.0, float\(q\[token\]\) / p_token\):", "if True:"),
        )),
    )),
    Mutant("cache crop off by one", (
        Edit("core/decoding/scorer.py", (  # keep one stale position after a rejection
            (r"self\._crop\(keep\)", "self._crop(keep + 1)"),
            (r"excess = layer\.get_seq_length\(\) - length", "excess = layer.get_seq_length() - length - 1"),
        )),
    )),
    Mutant("tier rule with thresholds swapped", (
        Edit("core/decoding/tiers.py", (  # decide_tier: tier 1 reads tau_slim ...
            (r"fires\(facts\.draft_confidence, policy\.tau_accept\) and _copy_has_evidence",
             "fires(facts.draft_confidence, policy.tau_slim) and _copy_has_evidence"),
        )),
        Edit("core/decoding/tiers.py", (  # ... and tier 2 reads tau_accept
            (r"fires\(facts\.slim_confidence\(\), policy\.tau_slim\)",
             "fires(facts.slim_confidence(), policy.tau_accept)"),
        )),
    )),
    Mutant("copies kept without model evidence", (
        Edit("core/decoding/tiers.py", (  # decide_tier: a copy's statistic alone passes tier 1, whatever copy_evidence
            (r"and _copy_has_evidence\(facts, policy\) and", "and True and"),
        )),
    )),
    Mutant("an app view ignores the recorded audit state", (
        Edit("app/views/render.py", (  # trust_of: every token tiers 1 and 2 kept is drawn as audited, records or not
            (r'return SHOWN_TRUST\.get\(t\.audit, ""\)', 'return "audited" if t.tier in (1, 2) else ""'),
        )),
    )),
    Mutant("audit lets every copy stand", (
        Edit("core/decoding/engine.py", (  # _Decoder._audit: the full pass never refuses a copy kept on trust
            (r"if not verdict\.accepted:\n(\s+)refused = TierDecision", r"if False:\n\1refused = TierDecision"),
        )),
    )),
)

QUICK_TESTS = (
    "tests/decoding/test_rules.py::test_slim_decides_when_confident_else_full",
    "tests/decoding/test_rules.py::test_reasons_name_the_rule_that_fired_and_agree_with_the_tier",
    "tests/decoding/test_rules.py::test_greedy_exact_rule_accepts_only_the_argmax",
    "tests/decoding/test_rules.py::test_rejection_sampling_emits_the_target_distribution",
    "tests/decoding/test_engine.py::test_every_token_to_the_full_verifier_reproduces_plain_greedy",
    "tests/decoding/test_engine.py::test_all_to_the_slim_verifier_reproduces_the_slim_models_greedy_output",
    "tests/decoding/test_engine.py::test_kv_caches_of_all_three_depths_match_recomputation_after_rejections",
    "tests/decoding/test_engine.py::test_full_verifier_rejection_sampling_is_exact_in_distribution",
    "tests/decoding/test_copy_evidence.py::test_statistic_verifier_and_audit_settings_and_model_drafts",
    "tests/decoding/test_audit.py::test_audited_copies_reproduce_plain_greedy_decoding[4-0.2]",
    "tests/app/test_claims.py::test_the_audit_marks_and_counts_follow_the_recorded_audit_state",
)
FULL_TESTS = ("tests/decoding/test_rules.py", "tests/decoding/test_engine.py", "tests/decoding/test_copy_evidence.py",
              "tests/decoding/test_audit.py", "tests/app/test_claims.py")
SKIP = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".cache", ".venv", "node_modules", ".ruff_cache",
                              ".pytest_cache")


class AnchorNotFoundError(RuntimeError):
    pass


def apply(edit: Edit, root: Path) -> int:
    """Apply one edit in the copy at `root`; returns the 1-based line it changed."""
    path = root / edit.path
    if not path.exists():
        raise AnchorNotFoundError(f"{edit.path}: file not found")
    text = path.read_text()
    for pattern, replacement in edit.alternatives:
        found = list(re.finditer(pattern, text, re.S))
        if len(found) == 1:
            path.write_text(text[:found[0].start()] + found[0].expand(replacement) + text[found[0].end():])
            return text.count("\n", 0, found[0].start()) + 1
    tried = "; ".join(repr(p) for p, _ in edit.alternatives)
    raise AnchorNotFoundError(f"{edit.path}: no anchor occurs exactly once (tried {tried}); update MUTANTS")


def run_tests(root: Path, tests: tuple[str, ...], stop_at_first: bool, timeout: int) -> tuple[bool, list[str], float]:
    """(passed, failing test ids, seconds) of pytest on the copy at `root`."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", VIASD_MUTATION_CHILD="1")
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
               *(["-x"] if stop_at_first else []), *tests]
    start = time.perf_counter()
    try:
        result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, ["(timed out)"], time.perf_counter() - start
    failing = re.findall(r"^(?:FAILED|ERROR) (\S+)", result.stdout, re.M)
    if result.returncode not in (0, 1) and not failing:
        last_line = result.stdout.strip().splitlines()[-1:] or [result.stderr[-200:]]
        failing = [f"(pytest exit {result.returncode}: {last_line[0]})"]
    return result.returncode == 0, failing, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fast subset of the tests, stop at the first failure")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per pytest run")
    args = parser.parse_args(argv)
    tests = QUICK_TESTS if args.quick else FULL_TESTS
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="viasd-mutation-") as tmp:
        pristine = Path(tmp) / "pristine"
        shutil.copytree(ROOT, pristine, ignore=SKIP)
        # Every anchor is checked before anything runs, so a moved function fails in seconds.
        for mutant in MUTANTS:
            probe = Path(tmp) / "probe"
            shutil.copytree(pristine, probe, ignore=SKIP)
            try:
                for edit in mutant.edits:
                    apply(edit, probe)
            except AnchorNotFoundError as error:
                print(f"anchor not found for mutant '{mutant.name}': {error}", file=sys.stderr)
                return 2
            finally:
                shutil.rmtree(probe)
        passed, failing, seconds = run_tests(pristine, tests, False, args.timeout)
        rows.append(("(none: baseline)", "-", "passed" if passed else "FAILED", ", ".join(failing) or "-"))
        if not passed:
            _table(rows, seconds)
            print("the unmutated code fails these tests: fix that first", file=sys.stderr)
            return 2
        survivors = 0
        for mutant in MUTANTS:
            copy = Path(tmp) / "mutant"
            shutil.copytree(pristine, copy, ignore=SKIP)
            where = ", ".join(f"{edit.path}:{apply(edit, copy)}" for edit in mutant.edits)
            passed, failing, seconds = run_tests(copy, tests, args.quick, args.timeout)
            survivors += passed
            rows.append((mutant.name, where, "SURVIVED" if passed else "killed",
                         ", ".join(f.split("::")[-1] for f in failing[:3]) + (" ..." if len(failing) > 3 else "")
                         or "-"))
            print(f"  {mutant.name}: {'SURVIVED' if passed else 'killed'} ({seconds:.0f} s)", flush=True)
            shutil.rmtree(copy)
    _table(rows)
    print(f"{len(MUTANTS) - survivors} of {len(MUTANTS)} mutants killed by {' '.join(tests)}")
    return 1 if survivors else 0


def _table(rows: list[tuple[str, str, str, str]], seconds: float | None = None) -> None:
    header = ("mutant", "where", "result", "failing tests")
    widths = [max(len(r[i]) for r in [*rows, header]) for i in range(3)]
    print("\n" + "  ".join(h.ljust(w) for h, w in zip(header[:3], widths, strict=True)) + "  " + header[3])
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    if seconds is not None:
        print(f"({seconds:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
