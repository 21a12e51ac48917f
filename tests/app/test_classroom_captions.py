"""Every caption of every shipped walkthrough, checked claim by claim against its trace.

The traces in tests/data/walkthroughs/ were recorded from the embedded SmolLM2 with each walkthrough's
config (fidelity measured) by `python -m app.tools.record_walkthroughs`; they spell their own drafts
(`RoundRecord.draft_texts`), so the captions are rebuilt from them alone, as the app replays a saved trace.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from app.views import captions, walkthroughs
from app.views import round_replay as replay
from app.views.numbers import plural
from app.views.render import REPLACED
from core.trace import Trace
from core.vocabulary import Reason
from examples import HERE

DATA = Path(__file__).resolve().parents[1] / "data" / "walkthroughs"
WALKS = sorted((HERE / "walkthroughs").glob("*.json"))


def _recorded(path: Path) -> Trace:
    """The walkthrough's own saved trace where it ships one (`recorded_trace`), else the one recorded here."""
    saved = walkthroughs.recorded_trace(json.loads(path.read_text()))
    return saved if saved is not None else Trace.from_json((DATA / path.name).read_text())


def _round_tokens(trace: Trace, index: int) -> list:
    """The round's decided tokens in the order the caption tells them (cut ones included, a refusal last)."""
    toks = sorted([t for t in [*trace.tokens, *trace.rolled_back] if t.round == index],
                  key=lambda t: (t.reason == Reason.AUDIT_REFUSED, t.position))
    return toks


def _comparisons_hold(text: str) -> list[str]:
    """Every "0.43 ≥ 0.4" / "0.38 < 0.4" in a caption, checked as arithmetic ("all ≥" ranges: both ends)."""
    wrong = []
    for low, high, sign, threshold in re.findall(r"(\d\.\d+)(?:–(\d\.\d+))?(?:, all)? ([≥<]) (\d(?:\.\d+)?)", text):
        for value in filter(None, (low, high)):
            if (float(value) >= float(threshold)) != (sign == "≥"):
                wrong.append(f"{value} {sign} {threshold}")
    return wrong


@pytest.mark.parametrize("path", WALKS, ids=[p.stem for p in WALKS])
def test_each_caption_claims_only_what_its_round_did(path: Path) -> None:
    walk, trace = json.loads(path.read_text()), _recorded(path)
    config = walkthroughs.walkthrough_config(walk)
    assert (trace.config.mode, trace.config.gamma) == (config.mode, config.gamma), "re-record the trace"
    _check_captions(trace, path.stem)
    if walk.get("fixed_config"):
        _check_captions(Trace.from_json((DATA / f"{path.stem}.fix.json").read_text()), path.stem + " (fix)")


def _check_captions(trace: Trace, name: str) -> None:
    cuts = replay.recorded_cuts(trace)
    assert all(len(r.draft_texts) == r.drafted for r in trace.rounds), f"{name}: re-record: drafts not spelled"
    for index, rnd in enumerate(trace.rounds):
        table, caption = replay.round_view(trace, index)
        text = html.unescape(re.sub(r"<[^>]+>", " ", caption))
        cells = html.unescape(re.sub(r"<[^>]+>", " ", table))
        where = f"{name}, round {index + 1}"
        tiers = captions.tiers_in(trace, index)
        assert f"Round {index + 1} of {len(trace.rounds)}." in text
        n = rnd.drafted
        assert (f"proposed {plural(n, 'token')}" in text) if n else "No draft this round." in text
        for piece in ("<|", "|>", "istant", "im_start", "im_end", "a guess"):
            assert piece not in text and piece not in cells, f"{where}: {piece!r} on screen"
        told = [r for r, n in re.findall(r"data-reason='([^']+)'[^>]*data-tokens='(\d+)'", caption)
                for _ in range(int(n))]
        assert told == [t.reason for t in _round_tokens(trace, index)], f"{where} tells other tokens"
        texts = replay.draft_texts(trace, index)
        for j, t in enumerate(t for t in _round_tokens(trace, index) if t.reason != Reason.AUDIT_REFUSED):
            if j < n and t.outcome in REPLACED:
                rejected = captions.quoted(texts[j])
                assert f"rejected {rejected} and wrote {captions.quoted(t.text)}" in text, where
                assert rejected != captions.quoted(t.text), f"{where}: a rejected word reads as its replacement"
        kept = f"Kept {rnd.accepted} of {plural(n, 'draft')}, wrote" if n else "Wrote"
        assert f"{kept} {plural(rnd.emitted, 'token')}, for" in text, where
        assert ("Its audit cut" in text) == (index in cuts), f"{where}: audit claim"
        assert not _comparisons_hold(text), f"{where}: a comparison that does not hold: {_comparisons_hold(text)}"
        if tiers.mode == "sd":
            assert "not sure" not in text and "Neither" not in text, f"{where}: tiers 1 and 2 are off, not unsure"
            assert "neither sure" not in cells
        if not tiers.tier2:
            assert "slim verifier was" not in text and "Neither was sure" not in text, f"{where}: tier 2 is off"
        assert f"So far {plural(replay.answer_tokens_after(trace, index), 'token')} cost" in text
        for dropped in re.findall(r"<i>(dropped[^<]*)</i>", table):
            assert "was rejected" in dropped or "answer ended" in dropped or "audit refused" in dropped, where
    last = replay.answer_tokens_after(trace, len(trace.rounds) - 1)
    assert last == len(trace.tokens), "the last caption counts the tokens the cards count"


def test_the_fix_changes_one_setting_and_its_notes_name_where_the_audit_cut() -> None:
    path = next(p for p in WALKS if json.loads(p.read_text()).get("fixed_config"))
    walk, before = json.loads(path.read_text()), _recorded(path)
    after = Trace.from_json((DATA / f"{path.stem}.fix.json").read_text())
    assert walkthroughs.changed_settings(before.config, after.config) == ["copy_evidence"]
    cut_rounds = list(replay.recorded_cuts(after))
    assert cut_rounds, "on its prompt the fix's audit must cut, so the struck-through words exist"
    notes = walkthroughs.fix_notes(walk, before, after, cut_rounds)
    assert "The fix changes one setting: copies" in notes
    for r in cut_rounds:
        refused = next(t for t in after.rolled_back if t.audit_round == r and t.audit == "refused")
        word = replay.refused_word(after, r)
        assert word.startswith(refused.text) and f"in round {r + 1} it refused {captions.quoted(word)}" in notes
    for jargon in ("copy_evidence", "TRUST_AFTER", "core.", "full-corrected", "`"):
        assert jargon not in notes, f"developer words in the notes: {jargon}"
