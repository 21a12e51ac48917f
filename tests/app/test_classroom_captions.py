"""Every caption of every shipped walkthrough, checked claim by claim against its trace.

The traces in tests/data/walkthroughs/ were recorded from the embedded SmolLM2 with each walkthrough's
config (fidelity measured); the captions are rebuilt from them here with the model's own tokenizer.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from app.views import captions, walkthroughs
from app.views import round_replay as replay
from app.views.render import REPLACED
from core.models.loading import embedded_model_dir
from core.trace import Trace
from core.vocabulary import Reason
from examples import HERE

pytestmark = pytest.mark.embedded
DATA = Path(__file__).resolve().parents[1] / "data" / "walkthroughs"
WALKS = sorted((HERE / "walkthroughs").glob("*.json"))


@pytest.fixture(scope="module")
def decode():
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir())
    return lambda token_id: tokenizer.decode([token_id], skip_special_tokens=False)


def _recorded(path: Path) -> Trace:
    """The walkthrough's own saved trace where it ships one (`recorded_trace`), else the one recorded here."""
    saved = walkthroughs.recorded_trace(json.loads(path.read_text()))
    return saved if saved is not None else Trace.from_json((DATA / path.name).read_text())


def _round_tokens(trace: Trace, index: int) -> list:
    """The round's decided tokens in the order the caption tells them (cut ones included, a refusal last)."""
    toks = sorted([t for t in [*trace.tokens, *trace.rolled_back] if t.round == index],
                  key=lambda t: (t.reason == Reason.AUDIT_REFUSED, t.position))
    return toks


@pytest.mark.parametrize("path", WALKS, ids=[p.stem for p in WALKS])
def test_each_caption_claims_only_what_its_round_did(path: Path, decode) -> None:
    walk, trace = json.loads(path.read_text()), _recorded(path)
    if walk.get("recorded_trace"):  # another model's tokens: spell them from the trace itself
        decode = replay.trace_decoder(trace)
    config = walkthroughs.walkthrough_config(walk)
    assert (trace.config.mode, trace.config.gamma) == (config.mode, config.gamma), "re-record the trace"
    cuts, slim_on = replay.recorded_cuts(trace), trace.config.tau_slim < 1.0
    for index, rnd in enumerate(trace.rounds):
        table, caption = replay.round_view(trace, index, decode)
        text = html.unescape(re.sub(r"<[^>]+>", " ", caption))
        assert f"Round {index + 1} of {len(trace.rounds)}." in text
        n = rnd.drafted
        assert (f"proposed {n} token{'s' * (n != 1)}" in text) if n else "No draft this round." in text
        for piece in ("<|", "|>", "istant", "im_start", "im_end"):
            assert piece not in text, f"round {index + 1}: chat-template piece {piece!r} in the caption"
        told = [r for r, n in re.findall(r"data-reason='([^']+)'[^>]*data-tokens='(\d+)'", caption)
                for _ in range(int(n))]
        assert told == [t.reason for t in _round_tokens(trace, index)], f"round {index + 1} tells other tokens"
        for j, t in enumerate(t for t in _round_tokens(trace, index) if t.reason != Reason.AUDIT_REFUSED):
            if j < n and t.outcome in REPLACED:
                rejected = captions.quoted(decode(rnd.draft_tokens[j]))
                assert f"rejected {rejected} and wrote {captions.quoted(t.text)}" in text, f"round {index + 1}"
        assert f"kept {rnd.accepted} of {n} drafted and wrote {rnd.emitted}." in text
        assert ("Its audit cut" in text) == (index in cuts), f"round {index + 1}: audit claim"
        if not slim_on:
            assert "slim verifier (" not in text and "nor the slim" not in text, f"round {index + 1}: tier 2 is off"
        assert f"So far: {replay.answer_tokens_after(trace, index)} tokens in the answer" in text
        for dropped in re.findall(r"<i>(dropped:[^<]*)</i>", table):
            # captions.quoted's spellings; "a guess": a recorded trace spells only the tokens it contains
            named = ("“", "answer ended", "dropped: a line break", "dropped: a space", "dropped: a guess")
            assert any(n in html.unescape(dropped) for n in named), f"round {index + 1}: {dropped}"
    last = replay.answer_tokens_after(trace, len(trace.rounds) - 1)
    assert last == len(trace.tokens), "the last caption counts the tokens the cards count"


def test_the_fix_notes_name_only_rounds_whose_audit_cut(decode) -> None:
    path = next(p for p in WALKS if p.stem == "03_copied_typo")
    walk, before = json.loads(path.read_text()), _recorded(path)
    after = Trace.from_json((DATA / "03_copied_typo.fix.json").read_text())
    cut_rounds = list(replay.recorded_cuts(after))
    notes = walkthroughs.fix_notes(walk, before, after, cut_rounds)
    assert ("step there" in notes) == bool(cut_rounds)
    for r in cut_rounds:
        assert f" {r + 1}" in notes
    for jargon in ("copy_evidence", "TRUST_AFTER", "core.", "full-corrected", "`"):
        assert jargon not in notes, f"developer words in the notes: {jargon}"
