"""The About tab's worked examples, each tied to the code that does what it says (tiny models, no download).

How sure (a probability; the slim verifier's of its own top choice, so it can accept or replace), prompt
lookup's confidence (0.17 and 0.33 on the page's own words), a free extra word (four drafts kept, five
words), kept on trust, the audit and cut by the audit (the refused copy and everything after it cut, the
full model's word in its place). If the engine changed any of these, the page would be wrong and this fails.
"""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_bundle

from app.tabs import about
from core import DecodeConfig, generate
from core.decoding import adaptive
from core.decoding.confidence import confidence
from core.decoding.drafters import PromptLookupDrafter
from core.decoding.sampling import ExactRule, Sampler
from core.decoding.tiers import TierFacts, decide_tier, outcome_of
from core.vocabulary import Audit, Outcome, Reason, Tier


def test_how_sure_is_the_chosen_words_probability_and_the_slim_verifiers_own_top_choice() -> None:
    blue, clear = 0, 1
    drafter = torch.tensor([0.62, 0.25, 0.13])
    slim = torch.tensor([0.20, 0.72, 0.08])
    c = confidence(drafter, blue)
    s = confidence(slim, int(slim.argmax()))  # the verifier's confidence is in its own top choice (engine.py)
    assert (round(c, 2), round(s, 2)) == (0.62, 0.72)
    policy = DecodeConfig(mode="via", drafter="self", tau_accept=0.7, tau_slim=0.5).policy
    decision = decide_tier(TierFacts(draft_confidence=c, slim_confidence=lambda: s, slim_agreement=lambda: 0.0),
                           policy)
    assert decision.tier is Tier.SLIM and decision.reason is Reason.SLIM_CONFIDENT
    verdict = ExactRule(Sampler()).judge(slim, blue, drafter, int(slim.argmax()))
    assert not verdict.accepted and verdict.token == clear
    assert outcome_of(decision.tier, verdict.accepted) is Outcome.SLIM_REGENERATE
    words = " ".join(about.WORDS.split())
    for said in ("0.62 sure of “blue”, below τ_accept 0.7", "it is 0.72 sure, at least τ_slim 0.5",
                 "**replaces** “blue” with “clear”"):
        assert said in words


def test_prompt_lookups_confidence_on_the_pages_own_words() -> None:
    words = "my cat sat ; your cat ran ; the cat".split()
    ids = {w: i for i, w in enumerate(dict.fromkeys(words))}
    draft = PromptLookupDrafter(ngram_size=3).propose([ids[w] for w in words], 2)
    assert draft.tokens == [ids["ran"], ids[";"]]
    assert [round(x, 2) for x in draft.confidences] == [0.17, 0.33]
    words = " ".join(about.WORDS.split())
    assert "“ran”, with confidence 1/3" in words and "= 0.17" in words and "= 0.33" in words


def test_four_drafts_kept_give_five_words_for_one_full_pass() -> None:
    bundle = tiny_bundle("llama", layers=4, avoid_eos=True)
    config = DecodeConfig(mode="sd", drafter="self", draft_route="full", gamma=4, max_new_tokens=10,
                          chat_template=False)  # the drafter is the full model itself: every draft is kept
    trace = generate(bundle, "the cat sat", config, replay=False)
    first = [t for t in trace.tokens if t.round == 0]
    assert [t.outcome for t in first] == [Outcome.FULL_ACCEPT.value] * 4 + [Outcome.FULL_BONUS.value]
    assert sum(c.role == "full" for c in trace.rounds[0].calls) == 1
    assert "Four drafts kept → five words for one pass" in " ".join(about.WORDS.split())


def test_kept_on_trust_audited_and_cut_as_the_page_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adaptive, "TRUST_AFTER", 1)  # this random model rarely keeps two whole copies in a row
    bundle = tiny_bundle("llama", layers=6, avoid_eos=True, middle_scale=0.1)
    prompt = "the cat sat on the mat. the cat sat on the mat and the dog sat on the log. the cat"
    config = DecodeConfig(mode="via", drafter="ngram", gamma=1, max_new_tokens=60, chat_template=False,
                          tau_accept=0.2, tau_slim=1.0, copy_evidence="audit", audit_span=8)
    trace = generate(bundle, prompt, config, replay=False)
    refused = [t for t in trace.rolled_back if t.audit == Audit.REFUSED.value]
    assert refused, "the audit never refused a copy: the example is not exercised"
    for copy in refused:  # kept on trust (tier 1, no verifier), then refused by a later round's full pass
        assert copy.tier == Tier.DRAFT and copy.audit_round > copy.round
        cut = [t for t in trace.rolled_back if t.audit_round == copy.audit_round]
        assert cut[0] is copy and all(t.audit == Audit.CUT.value for t in cut[1:])  # it and all after it
        written = [t for t in trace.tokens if t.round == copy.audit_round and t.reason == Reason.AUDIT_REFUSED]
        assert written and written[0].position == copy.position  # the full model's word in its place
    assert all(t.audit in (Audit.AUDITED.value, Audit.NONE.value) for t in trace.tokens)  # none left unaudited
    for said in ("kept at once, before any model has checked it", "also checks the words kept on trust",
                 "the refused copy and every word written after it are removed",
                 "the full model's own word is written in its place"):
        assert said in " ".join(about.WORDS.split())
