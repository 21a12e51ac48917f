"""A property test of the claims on screen: for 208 random configurations on the tiny models and a dozen on the
embedded SmolLM2, every number and sentence the app shows about a run is recomputed from the trace's records
(tests/claims.py), and every claim about other runs (the sensitivity line's notches, an exact prediction) is
checked by running the engine again. Each configuration also asks the tier rule again with every routed token's
recorded facts: it must answer what the engine recorded.

The configurations cover mode x drafter (self, model, prompt lookup, hybrid) x copy evidence x thresholds (0, 1
and equal pairs) x greedy / sampling x gamma x slim gate x audit span; the last test checks that they do, and that
the checks met the paths they are about (tokens kept on trust, sensitivity lines, exact predictions).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from claims import (
    check_cards,
    check_prediction,
    check_sensitivity,
    check_tokens_and_legend,
    check_views,
    configurations,
)
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.decoding.tiers import decide_tier, replayed_facts
from core.round_policy import switched_off
from core.trace import Trace

TINY_PROMPTS = ("the cat sat on the mat. the cat sat on the", "a dog saw a log. a dog saw a log and a dog",
                "one two three, one two three, one two")
TINY = DecodeConfig(max_new_tokens=24, chat_template=False, draft_route="skip-middle-50", slim_route="skip-middle-25")
CHUNKS, PER_CHUNK = 8, 26
SEEN: Counter = Counter()
"""What the checks met, over every chunk run so far (asserted by the last test)."""


@pytest.fixture(scope="module")
def bundle():
    """A verifier with quiet middle layers (routed models agree often, not always) and a separate drafter."""
    return tiny_bundle("llama", layers=6, drafter_layers=2, middle_scale=0.1, avoid_eos=True)


def check_the_rule_answers_as_recorded(trace: Trace) -> None:
    """Every decision a draft took (written, cut, or left unwritten by a refusal): the tier rule, asked again with
    its recorded facts under the stamped policy, gives the recorded tier and reason (any slim number it reads was
    recorded, since reading it ran the pass). Tokens no draft decided record no facts."""
    for t in [*trace.tokens, *trace.rolled_back]:
        assert (replayed_facts(t) is None) == (t.draft_confidence is None), t
    for t in trace.decisions():
        decision = decide_tier(replayed_facts(t), trace.policy)
        assert (int(decision.tier), decision.reason.value) == (t.tier, t.reason), t


def check_run(bundle: object, prompt: str, config: DecodeConfig, rng: random.Random) -> None:
    trace = generate(bundle, prompt, config)
    assert trace.policy == config.policy
    check_the_rule_answers_as_recorded(trace)
    seen = check_views(trace, bundle)
    SEEN["runs"] += 1
    SEEN["trusted"] += seen["trusted"]
    SEEN["caption points"] += seen["points"]
    SEEN["sensitivity lines"] += check_sensitivity(trace, bundle)
    SEEN["exact predictions"] += check_prediction(trace, bundle, rng)
    SEEN["cut"] += len(trace.rolled_back)


def tiny_configurations() -> list[DecodeConfig]:
    return configurations(CHUNKS * PER_CHUNK, 20, ("self", "model", "ngram", "hybrid"), TINY)


# the quick tier runs the first chunk; the full tier all of them (and then checks what they met, below)
@pytest.mark.parametrize("chunk", [c if c == 0 else pytest.param(c, marks=pytest.mark.full) for c in range(CHUNKS)])
def test_every_claim_on_screen_agrees_with_the_records(bundle, chunk):
    rng = random.Random(chunk)
    for i, config in enumerate(tiny_configurations()[chunk * PER_CHUNK:(chunk + 1) * PER_CHUNK]):
        check_run(bundle, TINY_PROMPTS[(chunk + i) % len(TINY_PROMPTS)], config, rng)


QUICK = [TINY.with_(mode="via", drafter=drafter, copy_evidence=evidence, tau_accept=0.3, tau_slim=tau_slim, gamma=4)
         for drafter in ("self", "ngram", "hybrid") for evidence, tau_slim in (("audit", 0.2), ("statistic", 1.0))]
"""Runs with tokens kept on trust beside tokens tier 1 kept unchecked: the audit marks' quick check."""


def test_the_audit_marks_and_counts_follow_the_recorded_audit_state(bundle):
    """The quick part of the property test (the mutation check runs it): marks, legend and cards on runs where
    some tier-1 tokens wait on trust and others do not."""
    trusted = unchecked = 0
    for i, config in enumerate(QUICK):
        trace = generate(bundle, TINY_PROMPTS[i % len(TINY_PROMPTS)], config)
        check_tokens_and_legend(trace)
        check_cards(trace)
        trusted += sum(t.audit != "none" for t in trace.tokens)
        unchecked += sum(t.tier == 1 and t.audit == "none" for t in trace.tokens)
    assert trusted and unchecked, "the runs must hold both kinds of tier-1 token"


@pytest.mark.embedded
def test_every_claim_on_screen_agrees_with_the_records_on_smollm2():
    from core.models.loading import load_bundle
    from examples import load_prompts

    bundle = load_bundle(dtype="float32")
    prompts = [p.text for p in load_prompts("grounded")][:4] + [p.text for p in load_prompts("chat")][:2]
    base = DecodeConfig(max_new_tokens=20, draft_route="skip-middle-50", slim_route="skip-middle-25")
    rng = random.Random(7)
    for i, config in enumerate(configurations(12, 13, ("self", "ngram"), base)):
        check_run(bundle, prompts[i % len(prompts)], config, rng)


def test_the_configurations_cover_the_space_and_the_checks_met_their_paths():
    drawn = tiny_configurations()
    assert len(drawn) >= 200
    assert {c.mode for c in drawn} == {"plain", "sd", "via"}
    assert {c.drafter for c in drawn} == {"self", "model", "ngram", "hybrid"}
    assert {c.copy_evidence for c in drawn} == {"slim", "verifier", "statistic", "audit"}
    assert any(c.tau_accept == 0.0 for c in drawn) and any(switched_off(c.tau_accept) for c in drawn)
    assert any(c.tau_slim == c.tau_accept < 1.0 for c in drawn) and any(not c.greedy for c in drawn)
    assert {c.gamma for c in drawn} >= {1, 2, 4} and any(c.slim_min_hit_rate > 0 for c in drawn)
    if SEEN["runs"] >= len(drawn):  # every chunk ran in this session: the checks met what they check
        assert SEEN["trusted"] > 50 and SEEN["cut"] > 0 and SEEN["caption points"] > 1000
        assert SEEN["sensitivity lines"] >= 5 and SEEN["exact predictions"] >= 5, SEEN
