"""The app's vocabulary: every engine code that reaches the screen has plain words, keyed by the core enums."""

from __future__ import annotations

import pytest

from app.views import words
from core.config import COPY_EVIDENCE, DRAFTERS, MODES
from core.decoding.confidence import SIGNALS
from core.decoding.policies import Why
from core.decoding.tiers import Outcome, Reason, Tier

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
    assert words.name("verdict", "audit refused a trusted copy (argmax differs)") == "audit refused a copy"
    assert words.detail("stop", "max_new_tokens") == "reached the length limit [max_new_tokens]"
