"""The quick mutation check: the suite must fail for each broken core invariant (see tests/mutation_check.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mutation
SCRIPT = Path(__file__).resolve().parents[1] / "mutation_check.py"
sys.path.insert(0, str(SCRIPT.parent))
import mutation_check  # noqa: E402  (tests/ is not a package: the script's folder on the path)


@pytest.mark.skipif(os.environ.get("VIASD_MUTATION_CHILD") == "1", reason="already inside a mutation run")
def test_every_mutant_of_a_core_invariant_is_killed_by_the_quick_suite():
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    count = len(mutation_check.MUTANTS)  # the rule, the audit and an app view have mutants too
    assert count >= 6 and f"{count} of {count} mutants killed" in result.stdout
