"""Prompt lookup copies the user's text and the answer, never the chat template; a trace spells its drafts."""

import pytest

from core import DecodeConfig, encode_prompt, generate, load_bundle
from core.models.prompting import template_positions
from core.trace import Trace

pytestmark = pytest.mark.embedded
PROMPT = "Summarise in one sentence: The city council voted on Tuesday to expand the bike lane network."
LOOKUP = DecodeConfig(mode="via", drafter="ngram", gamma=4, tau_accept=0.9, tau_slim=0.6, max_new_tokens=24,
                      copy_evidence="statistic")


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(dtype="float32")


def test_the_template_is_what_surrounds_the_users_text(bundle) -> None:
    tokenizer = bundle.verifier.tokenizer
    ids = encode_prompt(tokenizer, PROMPT)
    head, tail = template_positions(tokenizer, ids)
    assert tokenizer.decode(ids[head.stop:tail.start]) == PROMPT
    assert "<|im_start|>" in tokenizer.decode(ids[:head.stop]) and "assistant" in tokenizer.decode(ids[tail.start:])
    plain = encode_prompt(tokenizer, PROMPT, chat_template=False)
    assert template_positions(tokenizer, plain, chat_template=False) == (range(0), range(len(plain), len(plain)))


def test_no_draft_copies_the_template_and_every_draft_is_spelled_in_the_trace(bundle) -> None:
    tokenizer = bundle.verifier.tokenizer
    trace = generate(bundle, PROMPT, LOOKUP)
    ids = encode_prompt(tokenizer, PROMPT)
    head, tail = template_positions(tokenizer, ids)
    template = set(ids[:head.stop] + ids[tail.start:]) - set(ids[head.stop:tail.start]) - set(trace.token_ids)
    drafted = [i for r in trace.rounds for i in r.draft_tokens]
    assert drafted, "the summary should copy from the prompt"
    assert not template & set(drafted), "a draft copied a piece of the chat template"
    assert not trace.rounds[0].draft_tokens, "the answer's first token has nothing before it to match"
    for r in trace.rounds:
        assert len(r.draft_texts) == r.drafted
        assert "".join(r.draft_texts) == tokenizer.decode(r.draft_tokens, skip_special_tokens=False)
    saved = Trace.from_json(trace.to_json())
    assert [r.draft_texts for r in saved.rounds] == [r.draft_texts for r in trace.rounds]
