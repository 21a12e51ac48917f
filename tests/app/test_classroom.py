"""Classroom captions, shared links, the ZeroGPU wrapper and the About text: no model needed."""

from __future__ import annotations

import importlib.machinery
import re
import sys
import types
from urllib.parse import parse_qsl

import pytest

from app import gpu, share
from app.settings import Settings
from app.views import captions, walkthroughs
from app.views import round_replay as classroom
from app.views.render import token_title
from core.errors import ConfigError
from core.trace import CallRecord, RoundRecord, TokenRecord, Trace
from core.vocabulary import Audit, Outcome, Reason, Why


def _token(reason: Reason, outcome: Outcome, *, tier: int = 3, text: str = " sky", verdict: str = "argmax",
           draft: float | None = 0.95, slim: float | None = None, round_: int = 0, position: int = 0,
           audit: Audit = Audit.NONE, audit_round: int | None = None) -> TokenRecord:
    return TokenRecord(position=position, token_id=7, text=text, round=round_, tier=tier, outcome=outcome.value,
                       reason=reason.value, verdict=verdict, draft_confidence=draft, slim_confidence=slim,
                       audit=audit.value, audit_round=audit_round)


def _trace(mode: str = "sd") -> Trace:
    """Two rounds: round 0 = full check, then a free verdict, then a free-verdict correction; round 1 = bonus-free."""
    tokens = [
        _token(Reason.NOT_CONFIDENT, Outcome.FULL_ACCEPT, text=" The", draft=0.41, position=0),
        _token(Reason.FREE_VERDICT, Outcome.FULL_ACCEPT, text=" sky", draft=0.95, position=1),
        _token(Reason.FREE_VERDICT, Outcome.FULL_CORRECT, text=" is", verdict="argmax differs", position=2),
        _token(Reason.NOT_CONFIDENT, Outcome.FULL_ACCEPT, text=" blue", round_=1, position=3),
    ]
    full = CallRecord("full", 4, 30, 1.0, 0.0, True)
    rounds = [RoundRecord(0, [1, 2, 3, 4], accepted=2, emitted=3, calls=[full]),
              RoundRecord(1, [5], accepted=1, emitted=1, calls=[full])]
    return Trace(prompt="Why is the sky blue?", prompt_token_count=5, config={"mode": mode, "tau_accept": 0.8,
                 "tau_slim": 0.5, "gamma": 4}, models={"verifier": "tiny"}, tokens=tokens, rounds=rounds)


def test_a_free_verdict_caption_reads_the_recorded_reason_not_the_confidence() -> None:
    t = _token(Reason.FREE_VERDICT, Outcome.FULL_ACCEPT, draft=0.95)
    sentence = captions.explain_token(t, " sky", mode="via")
    assert "already run" in sentence and "free" in sentence
    assert "0.95" not in sentence and "only" not in sentence and "below" not in sentence


@pytest.mark.parametrize("reason", list(Reason))
def test_every_recorded_reason_has_its_own_caption_and_table_label(reason: Reason) -> None:
    outcome = {Reason.DRAFT_CONFIDENT: Outcome.DIRECT_ACCEPT, Reason.SLIM_CONFIDENT: Outcome.SLIM_ACCEPT,
               Reason.BONUS: Outcome.FULL_BONUS, Reason.NO_DRAFT: Outcome.PLAIN}.get(reason, Outcome.FULL_ACCEPT)
    sentence = captions.explain_token(_token(reason, outcome), " sky")
    assert "reason “" not in sentence, "fell through to the generic sentence"
    assert reason in captions.WHY


def test_captions_say_what_the_verifier_rule_recorded() -> None:
    corrected = _token(Reason.NOT_CONFIDENT, Outcome.FULL_CORRECT, verdict="argmax differs", draft=0.3, slim=0.2)
    sentence = captions.explain_token(corrected, " sea")
    assert "rejected “sea”" in sentence and "wrote “sky”" in sentence and "top choice is a different" in sentence
    odd = _token(Reason.SLIM_CONFIDENT, Outcome.SLIM_ACCEPT, tier=2, verdict="typical: p >= 0.3", slim=0.9)
    assert "“typical: p >= 0.3”" in captions.explain_token(odd, " sky")  # unknown verdicts are quoted, not guessed


def test_classic_sd_caption_says_every_guess_goes_to_the_full_model() -> None:
    t = _token(Reason.NOT_CONFIDENT, Outcome.FULL_ACCEPT)
    assert "Classic speculative decoding" in captions.explain_token(t, " sky", mode="sd")


def test_round_view_numbers_rounds_from_one_and_marks_each_reason() -> None:
    trace = _trace()
    table, caption = classroom.round_view(trace, 0, decode=lambda i: f"<{i}>")
    assert "Round 1 of 2" in caption and "data-round='1'" in caption
    assert caption.count("data-reason='free-verdict'") == 2 and "already run" in caption
    assert "dropped" in table  # the fourth draft word came after the correction
    _, last = classroom.round_view(trace, 5, decode=str)  # clamped to the last round
    assert "Round 2 of 2" in last
    assert "round 1" in token_title(trace.tokens[0])  # tooltips count from 1 too


def test_later_rounds_stay_hidden_until_reached_unless_shown() -> None:
    trace = _trace()
    assert [t.round for t in classroom.visible_trace(trace, 0, show_future=False).tokens] == [0, 0, 0]
    assert len(classroom.visible_trace(trace, 0, show_future=True).tokens) == 4
    assert len(trace.tokens) == 4  # the trace itself is untouched


def test_a_shared_link_round_trips_the_settings() -> None:
    settings = Settings(prompt="Why is the sky blue? & more", mode="sd", drafter="ngram", gamma=6, tau_accept=0.7,
                        tau_slim=0.35, max_new_tokens=32)
    query = share.query_of(settings)
    params = dict(parse_qsl(query.lstrip("?")))
    assert share.wants_run(params)
    opened, problems = share.settings_from_query(params)
    assert problems == [] and opened == settings


def test_a_bad_value_in_a_link_is_skipped_with_a_sentence() -> None:
    opened, problems = share.settings_from_query({"tau_accept": "lots", "gamma": "6", "prompt": "hi"})
    assert opened is not None and opened.gamma == 6 and opened.prompt == "hi"
    assert opened.tau_accept == share.LINK_BASE.tau_accept and problems == ["tau_accept='lots' is not a number"]
    opened, problems = share.settings_from_query({"tau_accept": "0.2", "tau_slim": "0.6"})
    assert opened is None and "out of order" in problems[0]
    assert not share.wants_run({"run": "0"})


def test_gpu_duration_grows_with_the_request_and_stays_within_limits() -> None:
    short, long = gpu.seconds_for_tokens(16), gpu.seconds_for_tokens(400)
    assert gpu.BASE_SECONDS <= short < long <= gpu.MAX_SECONDS
    assert gpu.compare_seconds(Settings(max_new_tokens=64)) > gpu.settings_seconds(Settings(max_new_tokens=64))


def test_on_gpu_is_a_no_op_without_spaces_and_uses_spaces_gpu_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def job(settings: Settings) -> str:
        return "ran"

    monkeypatch.delitem(sys.modules, "spaces", raising=False)
    if not gpu.zero_gpu_available():
        assert gpu.on_gpu(gpu.settings_seconds)(job) is job
    asked = []
    fake = types.ModuleType("spaces")
    fake.__spec__ = importlib.machinery.ModuleSpec("spaces", None)
    fake.GPU = lambda duration: (asked.append(duration), lambda fn: lambda *a, **k: ("on gpu", fn(*a, **k)))[1]
    monkeypatch.setitem(sys.modules, "spaces", fake)
    wrapped = gpu.on_gpu(gpu.settings_seconds)(job)
    assert asked == [gpu.settings_seconds] and wrapped(Settings()) == ("on gpu", "ran")


def test_about_text_has_no_accidental_numbered_list_and_the_drawing_follows_the_theme() -> None:
    from app.tabs import about

    for text in (about.STUDENT_INTRO, about.NUMBERS.split("```")[0], about.NUMBERS.split("```")[-1]):
        for line in text.splitlines():
            assert not re.match(r"^\s*\d+\.\s", line), f"markdown would turn this into a numbered list: {line!r}"
    drawing = about.ROUND_DRAWING
    assert "currentColor" in drawing and "<svg" in drawing and 'role="img"' in drawing
    assert all(f"Tier {n}" in drawing for n in (1, 2, 3)) and "Drafter" in drawing and "Output" in drawing
    assert "#000" not in drawing and "#fff" not in drawing.lower()  # no fixed black or white: both themes read it


# -- audited copies (copy_evidence "audit") -------------------------------------------------------------------------


def _audit_trace(finished: bool = True) -> Trace:
    """Round 0 keeps three copies on trust (" The", " sky", " iz"); round 1's full pass refuses " iz": it cuts
    " iz" (round 0) and its own kept copy " blue", and writes the full model's " is"; round 2 is a plain token.
    The audit states are the ones the engine records (`finished=False`: stopped before round 1's audit ran)."""
    trusted = dict(tier=1, verdict=Why.TRUSTED.value, draft=1.0)
    audited = dict(audit=Audit.AUDITED, audit_round=1) if finished else dict(audit=Audit.TRUSTED)
    kept = [_token(Reason.DRAFT_CONFIDENT, Outcome.DIRECT_ACCEPT, text=" The", position=0, **trusted, **audited),
            _token(Reason.DRAFT_CONFIDENT, Outcome.DIRECT_ACCEPT, text=" sky", position=1, **trusted, **audited)]
    cut = [_token(Reason.DRAFT_CONFIDENT, Outcome.DIRECT_ACCEPT, text=" iz", position=2, **trusted,
                  audit=Audit.REFUSED, audit_round=1),
           _token(Reason.DRAFT_CONFIDENT, Outcome.DIRECT_ACCEPT, text=" blue", position=3, round_=1, **trusted,
                  audit=Audit.CUT, audit_round=1)]
    correction = _token(Reason.AUDIT_REFUSED, Outcome.FULL_CORRECT, text=" is", position=2, round_=1, draft=None,
                        verdict=Why.ARGMAX_DIFFERS.value)
    plain = _token(Reason.NO_DRAFT, Outcome.PLAIN, text=" blue", position=3, round_=2, draft=None)
    full = CallRecord("full", 4, 30, 1.0, 0.0, True)
    rounds = [RoundRecord(0, [1, 2, 3], accepted=3, emitted=3),
              RoundRecord(1, [4, 5], accepted=0, emitted=1, rolled_back=1, calls=[full]),
              RoundRecord(2, [], accepted=0, emitted=1, calls=[full])]
    return Trace(prompt="Fix: the sky iz blue", prompt_token_count=5,
                 config={"mode": "via", "drafter": "ngram", "copy_evidence": "audit", "tau_accept": 0.9,
                         "tau_slim": 1.0, "gamma": 3},
                 models={"verifier": "tiny"}, tokens=[*kept, correction, plain], rounds=rounds, rolled_back=cut,
                 stop_reason="eos" if finished else "cancelled", equals_full_greedy=finished)


def test_each_cut_token_belongs_to_the_round_whose_audit_cut_it() -> None:
    trace = _audit_trace()
    assert [(t.text, t.audit_round) for t in trace.rolled_back] == [(" iz", 1), (" blue", 1)]
    before = classroom.visible_trace(trace, 0, show_future=False)
    assert [t.text for t in before.tokens] == [" The", " sky", " iz"] and before.rolled_back == []
    at_cut = classroom.visible_trace(trace, 1, show_future=False)
    assert [t.text for t in at_cut.tokens] == [" The", " sky", " iz", " blue", " is"]
    assert [t.text for t in at_cut.rolled_back] == [" iz", " blue"]
    assert [t.text for t in classroom.visible_trace(trace, 2, show_future=False).tokens] == [" The", " sky", " is",
                                                                                             " blue"]


def test_the_round_that_cut_shows_the_cut_tokens_struck_through_and_says_why() -> None:
    from app.views import render

    trace = _audit_trace()
    table, caption = classroom.round_view(trace, 1, lambda i: f"<{i}>")
    assert "data-cut-in='2'" in table and "cut by this round's audit" in table and 'class="tok cut"' in table
    assert "refused “iz”" in caption and "2 tokens, struck through" in caption and "“is”" in caption
    assert "cut 2 tokens from the text" in caption
    shown = classroom.visible_trace(trace, 1, show_future=False)
    page = render.tokens_html(shown, current_round=1, cut=shown.rolled_back)
    assert page.count('data-cut="1"') == 2
    _, first = classroom.round_view(trace, 0, lambda i: f"<{i}>")
    assert "kept on trust" in first and "audits them" in first and "data-tokens='3'" in first


def test_copies_kept_on_trust_read_audited_or_pending() -> None:
    from app.views import cards, render
    from app.views.insight import audit_sentence
    from core.analysis.metrics import summarize

    finished, stopped = _audit_trace(), _audit_trace(finished=False)
    assert [render.trust_of(t) for t in finished.tokens] == ["audited", "audited", "", ""]
    stopped.tokens = stopped.tokens[:2]  # stopped before any full pass: both copies still wait for their audit
    assert [render.trust_of(t) for t in stopped.tokens] == ["awaiting", "awaiting"]
    before = classroom.visible_trace(finished, 0, show_future=False)  # round 0: round 1's audit not yet run
    assert [render.trust_of(t) for t in before.tokens] == ["awaiting", "awaiting", "awaiting"]
    page = render.tokens_html(finished)
    assert page.count('data-trust="audited"') == 2 and "audited it and it stands" in page
    assert "audit pending" in render.legend_html(finished) and "cut by the audit" in render.legend_html(finished)
    assert "cut by the audit" not in render.legend_html(_trace())  # runs without the audit keep the old legend
    assert 'data-metric="rolled_back">2<' in cards.metrics_html(summarize(finished), finished)
    sentence = audit_sentence(finished)
    assert "4 copied tokens were kept on trust" in sentence and "refused 1 token and cut 2 tokens" in sentence
    assert "so 2 stand" in sentence and "equals the full model's" in sentence
    assert audit_sentence(_trace()) == ""


def test_walkthrough_three_fixes_with_the_audit_read_from_the_preset() -> None:
    from core.config import LOOKUP_PRESET
    from examples import load_walkthroughs

    walk = next(w for w in load_walkthroughs() if w.get("fixed_config"))
    assert walkthroughs.walkthrough_config(walk).copy_evidence == "statistic"
    fixed = walkthroughs.walkthrough_config(walk, fixed=True)
    assert fixed == LOOKUP_PRESET and fixed.copy_evidence == "audit"
    assert all("verifier (fixed_config)" not in p for p in walk["talking_points"])
    assert walkthroughs.walkthrough_config({"config": {"preset": "lookup", "gamma": 4}}).gamma == 4
    with pytest.raises(ConfigError, match="unknown preset"):
        walkthroughs.walkthrough_config({"config": {"preset": "fast"}})
    after = _audit_trace()
    notes = walkthroughs.fix_notes(walk, _trace(), after, list(classroom.recorded_cuts(after)))
    assert "Measured on these two runs" in notes and "of which the audit cut 2" in notes and "in round 2 " in notes
