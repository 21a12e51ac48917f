"""Prompt files for tuning (core/prompt_sets.py): text and JSONL read alike; every bad file is one typed line, and
the command says it in one `error:` line with exit status 2, never a traceback."""

import json

import pytest

from core.errors import PromptError
from core.limits import MAX_PROMPT_CHARS
from core.prompt_sets import halves, parse_prompt_set, read_prompt_set
from core.tools.tune import load_prompt_set, main


def test_text_and_jsonl_files_give_prompts_with_their_expectations(tmp_path):
    text = tmp_path / "set.txt"
    text.write_text("first prompt\n\n  second prompt  \nthird\n")
    assert [p.text for p in read_prompt_set(text)] == ["first prompt", "second prompt", "third"]
    rows = [{"prompt": "Rename x to total:\n\ndef f(x):\n    return x + 1", "must": ["total"], "must_not": ["x"]},
            {"prompt": "Say hi."}]
    jsonl = tmp_path / "set.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    first, second = read_prompt_set(jsonl)
    assert first.text == rows[0]["prompt"] and "\n" in first.text  # a multi-line prompt survives
    assert first.expectations.must_appear == ("total",) and first.expectations.must_not_appear == ("x",)
    assert second.expectations is None
    # JSONL is recognised by its first line as well as by its suffix
    assert parse_prompt_set(jsonl.read_text(), "upload.txt")[0].text == rows[0]["prompt"]


def test_halves_alternate_and_need_two_prompts():
    prompts = parse_prompt_set("a\nb\nc\nd\ne\n")
    tuning, held = halves(prompts)
    assert [p.text for p in tuning] == ["a", "c", "e"] and [p.text for p in held] == ["b", "d"]
    assert [len(h) for h in halves(prompts, 1)] == [1, 1]
    with pytest.raises(PromptError, match="at least two prompts"):
        halves(parse_prompt_set("only one\n"))


@pytest.mark.parametrize("name, raw, message", [
    ("empty.jsonl", "\n  \n", "is empty"),
    ("bad.jsonl", '{"prompt": "ok"}\n{"prompt": "no closing quote}\n', "line 2 is not JSON"),
    ("list.jsonl", '["a", "b"]\n', "line 1 is not a JSON object"),
    ("keys.jsonl", '{"prompt": "hi", "answer": "42"}\n', "line 1: unknown key 'answer'"),
    ("noprompt.jsonl", '{"must": ["x"]}\n', 'line 1 has no "prompt" string'),
    ("terms.jsonl", '{"prompt": "hi", "must": "x"}\n', "'must' must be a list"),
    ("clash.jsonl", '{"prompt": "hi", "must": ["x"], "must_not": ["X"]}\n', "both have to appear and not"),
    ("blank.jsonl", '{"prompt": "   "}\n', "the prompt is empty"),
    ("long.txt", "x" * (MAX_PROMPT_CHARS + 1) + "\n", f"over the limit of {MAX_PROMPT_CHARS}"),
])
def test_each_bad_file_is_one_line_naming_it(name, raw, message):
    with pytest.raises(PromptError, match=message) as info:
        parse_prompt_set(raw, name)
    assert "\n" not in str(info.value) and name in str(info.value)


def test_bytes_that_are_not_utf8_and_a_missing_file_are_one_line_too(tmp_path):
    with pytest.raises(PromptError, match="not UTF-8"):
        parse_prompt_set(b"\xff\xfe\x00bad", "binary.txt")
    with pytest.raises(PromptError, match="cannot read prompt file"):
        read_prompt_set(tmp_path / "missing.jsonl")


def test_families_keep_their_expectations_in_the_tuning_half():
    tuning, held = load_prompt_set("grounded", None, 2)
    assert len(tuning) == len(held) == 2 and all(p.expectations is not None for p in tuning + held)


@pytest.mark.parametrize("content", ["", "not json at all\n{", '{"prompt": "a", "oops": 1}\n{"prompt": "b"}\n'])
def test_the_command_ends_a_bad_file_with_one_error_line(tmp_path, capsys, content):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(SystemExit) as info:
        main(["--prompts", str(path), "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1 and "Traceback" not in err
