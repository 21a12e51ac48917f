"""The recorded pair trace and its walkthrough: replayable without the download, and every round number the
talking points quote is what the trace says."""

import json

from app.views.lesson_facts import lesson_facts
from core.trace import Trace
from examples import HERE, load_prompts, load_walkthroughs

TITLE = "Where the slim verifier pays (and where it doesn't)"


def _walkthrough_and_trace():
    walk = next(w for w in load_walkthroughs() if w["title"] == TITLE)
    trace = Trace.from_json((HERE / "traces" / walk["recorded_trace"]).read_text())
    return walk, trace


def test_the_trace_replays_without_a_model():
    walk, trace = _walkthrough_and_trace()
    assert trace.prompt == walk["prompt"] == load_prompts("code")[0].text
    assert trace.models["verifier"].endswith("qwen2.5-coder-1.5b-instruct") and trace.models["dtype"] == "bfloat16"
    assert len(trace.tokens) == 96 and len(trace.rounds) == 19
    assert json.loads(trace.to_json())["prompt"] == trace.prompt


def test_the_talking_points_match_the_trace():
    _, trace = _walkthrough_and_trace()
    roles = {r.index: {c.role for c in r.calls} for r in trace.rounds}
    assert [i for i, s in roles.items() if "slim" in s and "full" not in s] == [1, 11, 12, 14, 15]  # tier 2 paid
    assert [i for i, s in roles.items() if {"slim", "full"} <= s] == [0, 2, 3, 4, 5, 7, 13, 16, 17, 18]  # it did not
    assert [i for i, s in roles.items() if s == {"drafter"}] == [6, 8, 9, 10]  # tier 1 alone

    def seconds(role, rounds):
        return sum(c.wall_s for r in trace.rounds if r.index in rounds for c in r.calls if c.role == role)

    facts = lesson_facts(trace)  # what the talking points quote: the recorded times, whatever the recording's load
    assert facts["wall_s"] == f"{trace.wall_s:.1f}" and facts["drafter_wall_s"] == f"{seconds('drafter', roles):.1f}"
    assert facts["rounds_slim_decided"] == "2, 12, 13, 15 and 16" and facts["no_verifier_count"] == "4"
    assert trace.fidelity is not None and all(len(r.draft_texts) == r.drafted for r in trace.rounds)
    round11 = [t for t in trace.tokens if t.round == 11]
    assert len(round11) == 1 and round11[0].tier == 2 and round11[0].outcome == "slim-regenerated"
    assert sum(t.outcome == "slim-accepted" for t in trace.tokens) == 6
    assert trace.config.slim_route == "layers:0-5,7-11,15-27;no-mlp:7,23,25" and trace.config.tau_slim == 0.575
