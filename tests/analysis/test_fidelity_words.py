"""Fidelity as a reader measures it, no model: word alignment, expectations, the grounded examples."""

from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.analysis.expectations import Expectations, contains
from core.analysis.metrics import summarize
from core.analysis.textdiff import word_diff, words
from core.errors import ConfigError
from core.trace import Fidelity, TokenRecord, Trace
from core.vocabulary import EditKind
from examples import FAMILIES, expectations_for, load_prompts


def test_special_tokens_never_count_as_words():
    assert words("Hello there.<|im_end|>") == ["Hello", "there."]
    assert words("<|im_start|>assistant\nHi</s>") == ["assistant", "Hi"]
    assert words("a [EOS] b", special=["[EOS]"]) == ["a", "b"]
    assert word_diff("The cat sat.<|im_end|>", "The cat sat.").edits == 0


def test_a_copied_typo_is_one_substituted_word_with_its_span():
    diff = word_diff("Please use the side enterance today.", "Please use the side entrance today.")
    assert (diff.substituted, diff.inserted, diff.deleted) == (1, 0, 0)
    assert diff.words_differing == pytest.approx(1 / 6)
    (span,) = diff.spans
    assert span.kind == EditKind.SUBSTITUTED.value
    assert span.output_words == ("enterance",) and span.reference_words == ("entrance",)
    assert span.output_start == span.reference_start == 4


def test_insertions_and_deletions_are_told_apart():
    diff = word_diff("one two extra three", "one two three four")
    assert (diff.inserted, diff.deleted, diff.substituted) == (1, 1, 0)
    kinds = [(s.kind, s.output_words, s.reference_words) for s in diff.spans]
    assert kinds == [("inserted", ("extra",), ()), ("deleted", (), ("four",))]


def test_identical_and_empty_texts():
    assert word_diff("same words here", "same  words\nhere").words_differing == 0.0
    assert word_diff("", "").words_differing == 0.0
    assert word_diff("", "two words").words_differing == 1.0
    assert word_diff("a b c", "x y z").words_differing == 1.0


@given(st.lists(st.sampled_from("a b c d e".split()), max_size=12),
       st.lists(st.sampled_from("a b c d e".split()), max_size=12))
def test_edit_count_is_a_bounded_symmetric_distance(out, ref):
    forward, backward = word_diff(" ".join(out), " ".join(ref)), word_diff(" ".join(ref), " ".join(out))
    assert forward.edits == backward.edits
    assert abs(len(out) - len(ref)) <= forward.edits <= max(len(out), len(ref))
    assert 0.0 <= forward.words_differing <= 1.0
    # The spans account for every edit, and the output minus insertions plus deletions is the reference.
    assert sum(s.edits for s in forward.spans) == forward.edits
    assert (forward.edits == 0) == (out == ref)


def test_expectations_match_whole_words_ignoring_case():
    assert contains("The Entrance, on the left", "entrance")
    assert not contains("subtotal = 3", "total")
    assert contains("x = running_sum + 1", "running_sum") and not contains("running_sum", "running")
    assert contains("def f(text: str) -> float:", "->")
    checks = Expectations(("receive",), ("recieve",)).check("We recieve it")
    assert [(c.kind, c.term, c.met) for c in checks] == [("must appear", "receive", False),
                                                          ("must not appear", "recieve", False)]


def test_bad_expectations_raise_a_config_error():
    with pytest.raises(ConfigError, match="both"):
        Expectations(("a",), ("A",))
    with pytest.raises(ConfigError, match="non-empty"):
        Expectations(("",))
    with pytest.raises(ConfigError, match="unknown"):
        Expectations.from_dict({"must_apear": ["x"]})


def test_grounded_family_carries_checkable_expectations():
    grounded = load_prompts("grounded")
    assert "grounded" in FAMILIES and len(grounded) >= 12
    assert all(p.expectations for p in grounded)
    assert all(load_prompts(f) for f in ("chat", "code", "math", "summarisation"))
    for prompt in grounded:  # expectations hold on the prompt's own input where they should
        body = prompt.text.split("\n\n", 1)[1]
        for term in prompt.expectations.must_not_appear:
            assert contains(body, term), f"{prompt.label}: '{term}' should be the input's word to change"
    assert expectations_for(grounded[0].text) == grounded[0].expectations
    assert expectations_for("a prompt typed by hand") is None


def test_summary_and_json_carry_the_readers_fidelity():
    fidelity = Fidelity(reference_tokens=3, common_prefix=1, identical=False, full_agreement=0.5, full_nll=1.0)
    fidelity.expectations = Expectations(("entrance",), ("enterance",)).check("the enterance")
    for check in fidelity.expectations:
        check.full_met = True
    fidelity.differing_spans = list(word_diff("the enterance", "the entrance").spans)
    fidelity.words_differing = 0.5
    trace = Trace(prompt="p", prompt_token_count=1, config={}, models={}, fidelity=fidelity,
                  tokens=[TokenRecord(0, 5, "the", 0, 3, "plain", "no-draft", "argmax")])
    m = summarize(trace)
    assert (m["words_differing"], m["expectations_met"], m["expectations_total"], m["full_expectations_met"]) == (
        0.5, 0, 2, 2)
    back = Trace.from_json(trace.to_json())
    assert back.fidelity == fidelity
    old = {k: v for k, v in asdict(fidelity).items() if k in ("reference_tokens", "common_prefix", "identical",
                                                              "full_agreement", "full_nll")}
    assert Fidelity.from_dict(old).expectations == []  # traces saved before these fields still load
