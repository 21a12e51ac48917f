"""The quick mutation check: the suite must fail for each broken core invariant (see tests/mutation_check.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mutation
SCRIPT = Path(__file__).resolve().parents[1] / "mutation_check.py"


@pytest.mark.skipif(os.environ.get("VIASD_MUTATION_CHILD") == "1", reason="already inside a mutation run")
def test_every_mutant_of_a_core_invariant_is_killed_by_the_quick_suite():
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 of 3 mutants killed" in result.stdout
