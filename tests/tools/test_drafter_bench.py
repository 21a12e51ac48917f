"""The drafter table (python -m core.tools.drafter_bench) on a tiny saved pair: every setting is measured step by
step beside the verifier's passes, classic SD runs for real, and the modelled column follows the break-even maths."""

import pytest
from tiny import save_tiny_pair

from core.analysis.breakeven import expected_speedup
from core.tools import drafter_bench


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    verifier, drafter = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    return drafter_bench.main(["--model", str(verifier), "--drafter-model", str(drafter), "--quants",
                               "none,int8,int4+vocab16", "--dtype", "float32", "--tokens", "10", "--prompts", "2",
                               "--gamma", "3"])


def test_every_setting_gets_a_row_measured_on_the_same_texts(rows):
    assert [r.quant for r in rows] == ["none", "int8", "int4+vocab16"]
    assert all(r.tokens == 20 and r.step_ms > 0 and r.verifier_ms > 0 for r in rows)
    assert all(0.0 <= r.agreement <= 1.0 and set(r.coverage) == set(drafter_bench.TAUS) for r in rows)
    assert rows[0].fallback is None and rows[2].fallback is not None  # only a restricted head falls back
    assert all(r.sd_tokens_per_s > 0 and r.sd_x_plain > 0 for r in rows)


def test_the_modelled_column_is_the_break_even_formula(rows):
    for r in rows:
        assert drafter_bench.modelled_sd(r.agreement, r.cost, 3) == pytest.approx(
            expected_speedup(min(r.agreement, 0.999999), r.cost, 3, 1.1))
    assert drafter_bench.modelled_sd(0.9, 0.1, 6) > drafter_bench.modelled_sd(0.9, 0.4, 6)
    printed = "\n".join(drafter_bench.table(rows, 3))
    assert "int4+vocab16" in printed and "modelled SD" in printed
