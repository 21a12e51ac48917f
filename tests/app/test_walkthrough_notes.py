"""Every walkthrough's notes against its own trace: no number written by hand, every round a real one (from 1),
every other walkthrough named by its title, nothing the Classroom tab does not show.

The traces are the ones the captions test reads (tests/data/walkthroughs/, or the walkthrough's own saved
trace); a talking point that needs a fact its trace lacks would be left out, so here every one must fill.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.views import walkthroughs
from app.views.lesson_facts import fill, lesson_facts, listing, slim_rounds
from app.views.numbers import headline
from core.trace import Trace
from examples import HERE, load_walkthroughs

DATA = Path(__file__).resolve().parents[1] / "data" / "walkthroughs"
WALKS = sorted((HERE / "walkthroughs").glob("*.json"))
TITLES = [w["title"] for w in load_walkthroughs()]
HAND_WRITTEN = (r"(?i)\btiers? [123](?: and [123])?\b", r"τ_accept 0\b", r"\b1×", r"SmolLM2-135M",
                r"Qwen2\.5-Coder-[\d.]+B", r"\b[\d.]+B\b", r"\bbf16\b")
"""Numbers a talking point may write itself: tier names, the setting it asks the class to imagine (τ_accept 0:
trust every draft), plain decoding's own speed (1×) and model names. Every other number is a `{fact}` read from
the trace."""
LABELS = {"Why this speed"}
"""Quoted names of what the notes show, not walkthroughs."""
NOT_ON_THE_CLASSROOM = ("fidelity card", "break-even view", "why sentence", "walkthrough 1", "walkthrough 2",
                        "walkthrough 3", "walkthrough 4")


def _trace(path: Path, fix: bool = False) -> Trace:
    saved = walkthroughs.recorded_trace(json.loads(path.read_text()))
    if saved is not None:
        return saved
    return Trace.from_json((DATA / f"{path.stem}{'.fix' if fix else ''}.json").read_text())


def _points(walk: dict, key: str = "talking_points") -> list[str]:
    return [walk.get("intro", "")] * (key == "talking_points") + list(walk.get(key) or [])


def _cases() -> list[tuple[Path, str]]:
    cases = []
    for path in WALKS:
        walk = json.loads(path.read_text())
        cases.append((path, "talking_points"))
        if walk.get("fix_talking_points"):
            cases.append((path, "fix_talking_points"))
    return cases


@pytest.mark.parametrize(("path", "key"), _cases(), ids=[f"{p.stem}-{k}" for p, k in _cases()])
def test_every_number_in_the_notes_is_read_from_the_trace(path: Path, key: str) -> None:
    walk = json.loads(path.read_text())
    trace = _trace(path, fix=key == "fix_talking_points")
    facts = lesson_facts(trace)
    for point in _points(walk, key):
        bare = re.sub(r"\{[a-z_]+\}", "", point)
        for allowed in HAND_WRITTEN:
            bare = re.sub(allowed, "", bare)
        assert not re.search(r"\d", bare), f"a number written by hand in {path.name}: {point!r}"
        filled = fill(point, facts)
        assert filled is not None, f"{path.name}: this trace lacks a fact the point needs: {point!r}"
        for rounds in re.findall(r"\brounds? ((?:\d+(?:, | and )?)+)", filled):
            for number in map(int, re.findall(r"\d+", rounds)):
                assert 1 <= number <= len(trace.rounds), f"{path.name}: no round {number}: {filled!r}"
        for phrase in NOT_ON_THE_CLASSROOM:
            assert phrase not in filled.lower(), f"{path.name} points at what the Classroom does not show: {phrase}"


def test_other_walkthroughs_are_named_by_their_titles() -> None:
    for path in WALKS:
        walk = json.loads(path.read_text())
        text = " ".join(_points(walk) + list(walk.get("fix_talking_points") or []))
        for named in set(re.findall(r"“([A-Z][^”]{8,})”", text)) - LABELS:
            if ":" not in named and " " in named and named[0].isupper() and named.split()[0] in {
                    t.split()[0] for t in TITLES}:
                assert any(t.startswith(named) for t in TITLES), f"{path.name} names no walkthrough: “{named}”"


def test_the_numbers_the_issue_found_wrong_are_now_the_replays_own() -> None:
    """"Why self-drafting loses" quoted 34 % kept, 1.5 tokens a round and 0.36x; "Where the slim verifier pays"
    counted rounds from 0. Both now read their trace: the kept count and speed-up are the cards' headline, and the
    slim rounds are listed from 1."""
    path = next(p for p in WALKS if p.stem == "05_why_self_drafting_loses")
    trace, walk = _trace(path), json.loads(path.read_text())
    h = headline(trace)
    notes = walkthroughs.walkthrough_notes(walk, trace)
    assert f"{h.kept} of the {h.drafted} drafts were kept" in notes and f"{h.speedup:.2f}×" in notes
    assert f"{h.tokens / h.rounds:.2f} tokens on average" in notes
    pair = next(p for p in WALKS if json.loads(p.read_text()).get("recorded_trace"))
    trace = _trace(pair)
    decided, missed = slim_rounds(trace)
    expected = [r.index + 1 for r in trace.rounds if "slim" in r.models_run and "full" not in r.models_run]
    assert decided == expected and 0 not in decided + missed
    notes = walkthroughs.walkthrough_notes(json.loads(pair.read_text()), trace)
    assert f"rounds {listing(decided)}." in notes and f"rounds {listing(missed)}." in notes


def test_a_point_that_needs_a_missing_fact_is_left_out_not_shown_with_a_hole() -> None:
    assert fill("{kept} of {drafted}", {"kept": "3", "drafted": "9"}) == "3 of 9"
    assert fill("{wall_s} s measured", {}) is None
