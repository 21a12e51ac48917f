"""The recorded pair trace and its walkthrough: replayable without the download, and every round number the
talking points quote is what the trace says."""

import json

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
    assert [i for i, s in roles.items() if "slim" in s and "full" not in s] == [4, 7, 8, 10]  # tier 2 paid
    assert [i for i, s in roles.items() if {"slim", "full"} <= s] == [0, 1, 2, 3, 5, 11, 15, 18]  # it did not
    assert [i for i, s in roles.items() if s == {"drafter"}] == [6, 9, 12, 13, 14, 16, 17]  # tier 1 alone
    wasted = sum(c.wall_s for r in trace.rounds if {"slim", "full"} <= roles[r.index] for c in r.calls
                 if c.role == "slim")
    drafting = sum(c.wall_s for r in trace.rounds for c in r.calls if c.role == "drafter")
    assert round(wasted, 2) == 1.28 and round(drafting, 1) == 6.8 and round(trace.wall_s, 1) == 10.5
    round4 = [t for t in trace.tokens if t.round == 4]
    assert len(round4) == 1 and round4[0].tier == 2 and round4[0].outcome == "slim-regenerated"
