"""The app's vocabulary: every engine code that reaches the screen has plain words, keyed by the core enums."""

from __future__ import annotations

import pytest

from app.views import words
from core.config import COPY_EVIDENCE, DRAFTERS, MODES
from core.vocabulary import SIGNALS, Outcome, Reason, Tier, Why

SHOWN_METRICS = ("words_differing", "full_agreement", "modelled_speedup", "rejection_rate", "accepted", "drafted",
                 "rounds", "tokens", "rolled_back", "full_nll", "common_prefix", "identical_to_full",
                 "tokens_per_round", "mean_accepted_length", "full_calls_per_token", "stop_reason")


@pytest.mark.parametrize(("kind", "codes"), [
    ("outcome", list(Outcome)), ("reason", list(Reason)), ("verdict", [w.value for w in Why] + ["argmax differs"]),
    ("tier", list(Tier)), ("mode", list(MODES)), ("drafter", list(DRAFTERS)), ("copy_evidence", list(COPY_EVIDENCE)),
    ("signal", list(SIGNALS)), ("stop", ["eos", "max_new_tokens", "cancelled", "time-budget"]),
    ("metric", list(SHOWN_METRICS)),
])
def test_every_engine_code_has_plain_words(kind: str, codes: list) -> None:
    for code in codes:
        found = words.term(kind, code)
        raw = str(getattr(code, "value", code))
        assert found.meaning, f"{kind} {raw!r} has no meaning sentence"
        assert found.name != raw or raw in ("rounds", "margin"), f"{kind} {raw!r} shows its code"
        assert "_" not in found.name, f"{kind} {raw!r} reads like a code: {found.name!r}"


def test_an_enum_and_its_value_find_the_same_words_and_unknown_codes_show_themselves() -> None:
    assert words.name("outcome", Outcome.FULL_CORRECT) == words.name("outcome", "full-corrected")
    assert words.name("tier", 2) == words.name("tier", Tier.SLIM)
    assert words.name("reason", "a-new-reason") == "a-new-reason" and words.meaning("reason", "x") == ""
    assert words.detail("stop", "max_new_tokens") == "reached the length limit [max_new_tokens]"


def test_the_about_tab_explains_words_differing_with_an_example_the_code_agrees_with() -> None:
    from app.tabs import about
    from core.analysis.textdiff import word_diff

    assert "## Words differing" in about.NUMBERS and "inserted, deleted or changed" in about.NUMBERS
    assert '"The sky is blue" against "The sky looks blue"' in about.NUMBERS and "25 % of words differ" in about.NUMBERS
    assert word_diff("The sky looks blue", "The sky is blue").words_differing == 0.25
    for key in about.SHOWN_METRICS:  # the table uses the cards' own words
        assert f"| {words.metric_label(key)} | {words.meaning('metric', key)} |" in about.NUMBERS
