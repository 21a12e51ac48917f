"""The per-family numerics of a verifier precision (python -m core.tools.precision_numerics) on tiny random models:
a row per family and one for all; a precision against itself agrees exactly (float32 with float32, int8 with int8:
teacher-forced scoring in one pass gives the tokens one-at-a-time decoding gave, since int8 is batch-invariant)."""

import pytest
import torch
from tiny import loaded, tiny_model

from core.models.verifier_quant import quantise_verifier
from core.tools.precision_numerics import aggregate, chosen_prompts, header, measure, report, rows
from examples import FAMILIES

TOKENS = 12


@pytest.fixture(scope="module")
def prompts():
    return chosen_prompts(list(FAMILIES), 2)


def tiny_verifier(quant: str = "none"):
    model = tiny_model("llama", layers=4, seed=3)
    return loaded("tiny", quantise_verifier(model, quant) if quant != "none" else model)


def test_float32_against_itself_agrees_exactly(prompts):
    results = measure(tiny_verifier(), prompts, "none", TOKENS)
    table = rows(results)
    assert [r.name for r in table] == [*FAMILIES, "all"]
    assert all(r.prompts == 2 and r.scored > 0 for r in table[:-1]) and table[-1].prompts == 2 * len(FAMILIES)
    for row in table:
        assert row.agreement == 1.0 and row.words_differing == 0.0 and row.identical == row.prompts


def test_int8_against_itself_agrees_exactly(prompts):
    results = measure(tiny_verifier("int8"), prompts, "none", TOKENS)
    for row in rows(results):
        assert row.agreement == 1.0 and row.words_differing == 0.0 and row.identical == row.prompts


def test_int8_against_float32_is_scored_per_family(prompts):
    model = tiny_verifier()
    results = measure(model, prompts[:4], "int8", TOKENS)
    assert model.verifier_quant == "int8" and type(model.model.get_output_embeddings()).__name__ == "PerTokenInt8Linear"
    for r in results:
        assert 0 <= r.agreed <= len(r.reference) and 0.0 <= r.words_differing <= 1.0
        assert r.identical == (r.output == r.reference)
    table = rows(results)
    assert table[-1].scored == sum(len(r.reference) for r in results)
    assert table[-1].identical == sum(r.identical for r in results)
    lines = header("tiny", "int8", TOKENS, 2, "0.00 0.00 0.00") + report(table)
    assert f"{torch.get_num_threads()} threads" in lines[0] and "class" in lines[0] and "UTC" in lines[0]
    assert "int8" in lines[1]
    assert len([line for line in lines if line.startswith("| ")]) == len(table) + 1


def test_aggregate_pools_tokens_and_averages_words():
    from core.tools.precision_numerics import PromptNumerics

    a = PromptNumerics("code", 0, [1, 2, 3, 4], [1, 2, 3, 4], 4, 0.0)
    b = PromptNumerics("code", 1, [5, 6], [5, 7], 1, 0.5)
    row = aggregate("code", [a, b])
    assert (row.scored, row.agreement, row.words_differing, row.identical) == (6, 5 / 6, 0.25, 1)


def test_unknown_family_is_one_line():
    with pytest.raises(SystemExit, match="unknown family 'poetry'"):
        chosen_prompts(["poetry"], 1)
