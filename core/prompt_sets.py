"""A user's prompt set, read from a file: the tuner (core.tools.tune) and the app's Compare tab read it here, once.

Two formats:
* text: one prompt per line (blank lines skipped), as `--prompts` always took;
* JSONL: one JSON object per line, `{"prompt": "...", "must": [...], "must_not": [...]}`. A prompt may hold
  newlines (written `\\n` inside the JSON string), so code and documents can be tuned on; `must` / `must_not` are
  the task's expectations (core.analysis.expectations: words the answer must and must not contain).
A file is JSONL when its name ends in .jsonl or .json, or its first non-blank line starts with `{`.

Every bad file raises one PromptError line naming the file and the line: empty, not UTF-8, a line that is not
JSON or not an object, an unknown key, a prompt that is empty or over `MAX_PROMPT_CHARS` (core.limits), too many
prompts, fewer than two (a set is split into a tuning half and a held-apart half).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.analysis.expectations import Expectations
from core.errors import ConfigError, PromptError, shown
from core.limits import MAX_PROMPT_CHARS

KEYS = ("prompt", "must", "must_not")
MAX_PROMPTS = 200
"""Prompts one file may hold: tuning runs every grid point on every prompt, so a larger set is a day's work here."""


@dataclass(frozen=True)
class SetPrompt:
    """One prompt of a set and its expectations (None: nothing to check)."""

    text: str
    expectations: Expectations | None = None


def _terms(value: object, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PromptError(f"{where}: '{key}' must be a list of words or phrases, e.g. [\"def\", \"return\"]")
    return tuple(value)


def _jsonl_prompt(line: str, where: str) -> SetPrompt:
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PromptError(f"{where} is not JSON ({exc.msg} at column {exc.colno}); write one object per line "
                          'such as {"prompt": "...", "must": ["..."]}') from None
    if not isinstance(entry, dict):
        raise PromptError(f"{where} is not a JSON object: write {{\"prompt\": \"...\"}}")
    unknown = [k for k in entry if k not in KEYS]
    if unknown:
        raise PromptError(f"{where}: unknown key '{shown(unknown[0], 30)}' (allowed: {', '.join(KEYS)})")
    text = entry.get("prompt")
    if not isinstance(text, str):
        raise PromptError(f"{where} has no \"prompt\" string")
    must, must_not = (_terms(entry.get(k, []), k, where) for k in ("must", "must_not"))
    try:
        expectations = Expectations(must, must_not) if must or must_not else None
    except ConfigError as exc:
        raise PromptError(f"{where}: {exc}") from None
    return SetPrompt(text, expectations)


def parse_prompt_set(raw: str | bytes, name: str = "prompt file") -> list[SetPrompt]:
    """Every prompt of a file's contents (`name`: how messages call it, and its suffix picks the format)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PromptError(f"{shown(name)} is not UTF-8 text") from None
    lines = [(n, line.strip()) for n, line in enumerate(raw.lstrip("\ufeff").splitlines(), 1) if line.strip()]
    if not lines:
        raise PromptError(f"{shown(name)} is empty: write one prompt per line, or JSONL lines such as "
                          '{"prompt": "...", "must": ["..."]}')
    if len(lines) > MAX_PROMPTS:
        raise PromptError(f"{shown(name)} holds {len(lines)} prompts; at most {MAX_PROMPTS} per set")
    jsonl = Path(name).suffix.lower() in (".jsonl", ".json") or lines[0][1].startswith("{")
    prompts = []
    for number, line in lines:
        where = f"{shown(name)} line {number}"
        item = _jsonl_prompt(line, where) if jsonl else SetPrompt(line)
        if not item.text.strip():
            raise PromptError(f"{where}: the prompt is empty")
        if len(item.text) > MAX_PROMPT_CHARS:
            raise PromptError(f"{where}: a prompt of {len(item.text)} characters is over the limit of "
                              f"{MAX_PROMPT_CHARS} (VIASD_MAX_PROMPT_CHARS)")
        prompts.append(item)
    return prompts


def read_prompt_set(path: str | Path) -> list[SetPrompt]:
    """`parse_prompt_set` of a file on disk; a missing or unreadable file is one PromptError line too."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PromptError(f"cannot read prompt file '{shown(path)}': {exc.strerror or exc}") from None
    return parse_prompt_set(raw, str(path))


def halves(prompts: list[SetPrompt], count: int | None = None,
           name: str = "a prompt set") -> tuple[list[SetPrompt], list[SetPrompt]]:
    """(tuning, held-apart): odd-numbered prompts tune, even-numbered ones report (1st, 3rd, ... tune), each half
    cut to `count`. The recommendation is chosen on the first half only, so the second half's figures are honest."""
    if len(prompts) < 2:
        raise PromptError(f"{shown(name)} needs at least two prompts: one half tunes, the other is held apart")
    return prompts[0::2][:count], prompts[1::2][:count]
