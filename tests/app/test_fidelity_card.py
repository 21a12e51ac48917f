"""The fidelity card in reduced precision: numerics named until Compare splits them from the tiers."""

from app.views.cards import _reduced_precision_note
from core.analysis.fidelity import separate_numerics
from core.trace import Fidelity, Trace


def run(words: float, dtype: str = "bfloat16") -> Trace:
    trace = Trace(prompt="p", prompt_token_count=1, config={}, models={"dtype": dtype})
    trace.fidelity = Fidelity(reference_tokens=10, common_prefix=0, identical=words == 0, full_agreement=1.0,
                              full_nll=0.1, words_differing=words)
    return trace


def test_the_fidelity_card_warns_of_numerics_in_bf16_until_compare_splits_them() -> None:
    assert "rounds differently" in _reduced_precision_note(run(0.2))
    assert _reduced_precision_note(run(0.2, "float32")) == ""
    traces = {"sd": run(0.03), "via": run(0.07)}
    separate_numerics(traces)
    assert _reduced_precision_note(traces["via"]) == "", "the split row says it instead"
