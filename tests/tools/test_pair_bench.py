"""The pair table (python -m core.tools.benchmark --pair) on tiny random models: every row runs, the lossless ones are
exact in fp32, and the report judges the pair's targets from the numbers."""

import pytest
from tiny import tiny_bundle

from core.analysis.expectations import Expectations
from core.decoding.cost import CostModel
from core.tools.bench_rows import Row
from core.tools.benchmark import parse
from core.tools.pair_bench import BASELINES, HF_ASSISTED, HF_GREEDY, PLAIN, SD, VIA, methods, run_pair_prompt
from core.tools.pair_report import lost_answers, method_stats, row_line, summary_lines
from examples import ExamplePrompt

LOSSLESS = {HF_GREEDY, HF_ASSISTED, "HF assisted γ", "HF lookup", PLAIN, SD, VIA, "VIA-SD audited", "SD γ=via"}
"""Exact in fp32 greedy: the recommended VIA-SD setting too (its tier-1 drafts are audited)."""


@pytest.fixture(scope="module")
def args():
    return parse(["--pair", "qwen2.5-coder", "--max-new-tokens", "12", "--gamma", "3", "--lookup-tokens", "4",
                  "--leads", "VIA-SD audited,VIA-SD no slim,SD γ=via"])


@pytest.fixture(scope="module")
def rows(args):
    bundle = tiny_bundle("llama", layers=4, drafter_layers=2)
    table = methods(args, "qwen2.5-coder")
    text = "the cat sat on the mat. the cat sat on the mat. the cat"
    return run_pair_prompt(bundle, ExamplePrompt("tiny", 0, text, Expectations(("cat",))), "tiny", table,
                           CostModel(bundle.verifier.model), flip=True)


def test_the_pair_defaults(args):
    assert args.model == "embedded:qwen2.5-coder-1.5b-instruct"
    assert args.drafter_model == "embedded:qwen2.5-coder-0.5b-instruct"
    assert args.dtype is None and args.per_family is None, "this machine's recommended precision (precision.recommend)"
    assert not args.fit and parse(["--pair", "qwen2.5-coder"]).fit, "no draft length given: fitted to this machine"


def test_with_no_draft_length_given_sd_and_via_sd_run_the_one_fitted_to_this_machine():
    from core.tools.pair_bench import fit_pair

    bundle = tiny_bundle("llama", layers=4, drafter_layers=2)
    fitted = parse(["--pair", "qwen2.5-coder"])
    line = fit_pair(fitted, bundle)
    assert line.startswith("fitted to this machine") and 1 <= fitted.gamma == fitted.via_gamma <= 6
    given = parse(["--pair", "qwen2.5-coder", "--gamma", "3"])
    assert fit_pair(given, bundle).endswith("as given") and given.gamma == 3


def test_every_row_runs_once_in_table_order(rows):
    assert [r.method for r in rows] == list(BASELINES) + ["VIA-SD audited", "VIA-SD no slim", "SD γ=via"]


def test_lossless_rows_emit_the_full_models_greedy_tokens(rows):
    plain = next(r for r in rows if r.method == PLAIN)
    assert len(plain.token_ids) > 0
    for row in rows:
        if row.method in LOSSLESS:
            assert row.token_ids == plain.token_ids, row.method
            assert row.words_differing == pytest.approx(0.0)


def test_rows_carry_the_columns(rows):
    plain = next(r for r in rows if r.method == PLAIN)
    for row in rows:
        assert row.ratios[PLAIN] > 0 and row.ratios[HF_GREEDY] > 0
        assert (row.rejection_rate is None) == (row.trace is None) == row.method.startswith("HF")
        assert row.expectations is not None and row.kept_full_expectations is not None
        assert row.method[:16] in row_line(row, plain.token_ids)
    assert plain.rejection_rate == 0.0 and plain.acceptance_length == 1.0 and plain.predicted == 1.0
    sd = next(r for r in rows if r.method == SD)
    assert sd.acceptance_length >= 1.0 and 0.0 <= sd.rejection_rate <= 1.0


def test_the_report_states_every_target(rows):
    text = "\n".join(summary_lines(rows))
    for target in ("our plain vs HF greedy >= 1.0x", "classic SD vs HF assisted >= 1.0x",
                   "classic SD vs our plain >= 2.2x", f"{VIA} vs classic SD >= 1.10x", f"{VIA} vs our plain >= 2.5x",
                   f"{VIA} words differing <= classic SD's + 1 point", f"{VIA} loses no task classic SD gets right",
                   "VIA-SD audited vs classic SD"):
        assert target in text, target


def _row(prompt: str, method: str, speed: float, *, answer: bool | None = None, kept: bool | None = None) -> Row:
    row = Row(prompt, method, "-", [1] * 10, 10 / speed, answer=answer, kept_full_expectations=kept)
    return row


def test_targets_are_judged_from_the_numbers():
    rows = []
    for p in ("a", "b", "c"):
        rows += [_row(p, PLAIN, 1.0), _row(p, HF_GREEDY, 1.25), _row(p, SD, 2.0, answer=True),
                 _row(p, VIA, 2.2, answer=p != "b")]
    for r in rows:
        r.ratios = {PLAIN: r.tokens_per_s / 1.0, HF_GREEDY: r.tokens_per_s / 1.25}
    assert lost_answers(rows, VIA) == ["b"]
    stats = method_stats(rows)
    assert stats[SD].answers == (3, 3) and stats[VIA].answers == (2, 3)
    text = "\n".join(summary_lines(rows))
    assert "our plain vs HF greedy >= 1.0x: 0.800x -> MISSED by 0.200x" in text
    assert f"{VIA} vs classic SD >= 1.10x: 1.100x -> met" in text
    assert "classic SD vs our plain >= 2.2x: 2.000x -> MISSED by 0.200x" in text
    assert f"{VIA} loses no task classic SD gets right: 1 lost (b) -> MISSED" in text


def test_each_drafter_setting_is_judged_against_its_own_rows():
    rows = []
    for p in ("a", "b"):
        rows += [_row(p, PLAIN, 1.0), _row(p, SD, 2.0, answer=True), _row(p, VIA, 2.4, answer=True),
                 _row(p, f"{SD} [none]", 1.5, answer=True), _row(p, f"{VIA} [none]", 1.5, answer=p == "a"),
                 _row(p, f"{HF_ASSISTED} [none]", 1.6)]
    for r in rows:
        r.ratios = {PLAIN: r.tokens_per_s}
    text = "\n".join(summary_lines(rows))
    assert f"{VIA} [none] vs classic SD [none] >= 1.10x: 1.000x -> MISSED by 0.100x" in text
    assert f"classic SD [none] vs {HF_ASSISTED} [none] >= 1.0x: 0.938x -> MISSED by 0.062x" in text
    assert f"{VIA} [none] loses no task classic SD [none] gets right: 1 lost (b) -> MISSED" in text
    assert f"{VIA} vs classic SD >= 1.10x: 1.200x -> met" in text


def test_other_drafter_settings_add_their_rows(args):
    from core.tools.pair_bench import WithDrafter

    table = methods(parse(["--pair", "qwen2.5-coder", "--drafter-quants", "none,int8"]), "qwen2.5-coder")
    extra = [name for name, m in table.items() if isinstance(m, WithDrafter)]
    assert extra == [f"{n} [{q}]" for q in ("none", "int8") for n in (HF_ASSISTED, SD, VIA)]
    assert table[f"{SD} [int8]"].method == table[SD] and table[f"{SD} [int8]"].quant == "int8"


def test_every_row_shortens_for_the_warm_up_and_another_drafters_hf_row_runs():
    """The benchmark warms every path with `method.with_(max_new_tokens=4)`: HF rows under another drafter too."""
    from core.models.prompting import encode_prompt
    from core.tools.pair_bench import WithDrafter, run_method

    table = methods(parse(["--pair", "qwen2.5-coder", "--drafter-quants", "none"]), "qwen2.5-coder")
    for name, method in table.items():
        short = method.with_(max_new_tokens=4)
        assert (short.method if isinstance(short, WithDrafter) else short).max_new_tokens == 4, name
    bundle = tiny_bundle("llama", layers=2, drafter_layers=1)
    prompt = ExamplePrompt("tiny", 0, "the cat sat on the mat", None)
    ids = encode_prompt(bundle.verifier.tokenizer, prompt.text)
    row = run_method(bundle, prompt, ids, "tiny", f"{HF_ASSISTED} [none]", table[f"{HF_ASSISTED} [none]"].with_(
        max_new_tokens=4), CostModel(bundle.verifier.model), {"none": bundle})
    assert 0 < len(row.token_ids) <= 4 and row.method == f"{HF_ASSISTED} [none]"
