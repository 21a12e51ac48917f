"""Example prompts (chat, code, math, summarisation, grounded) and classroom walkthroughs, written for this project.

Prompts are plain user messages: the engine applies the model's chat template, nothing is baked in.
A prompt is either a string or `{"text": ..., "expectations": {"must_appear": [...],
"must_not_appear": [...]}}`. The `grounded` family holds tasks whose answer reuses the input
(rewrite, fix spelling, notes to bullets, rename a variable, add type hints, quote, summarise),
each with the words its answer must and must not contain (core.analysis.expectations).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.analysis.expectations import Expectations

HERE = Path(__file__).parent
FAMILIES = ("chat", "code", "math", "summarisation", "grounded")


@dataclass(frozen=True)
class ExamplePrompt:
    family: str
    index: int
    text: str
    expectations: Expectations | None = None

    @property
    def label(self) -> str:
        first_line = self.text.splitlines()[0]
        return f"{self.family} {self.index + 1}: {first_line[:60]}"


def _parse(family: str, index: int, entry: str | dict) -> ExamplePrompt:
    if isinstance(entry, str):
        return ExamplePrompt(family, index, entry)
    expectations = Expectations.from_dict(entry["expectations"]) if entry.get("expectations") else None
    return ExamplePrompt(family, index, entry["text"], expectations)


@lru_cache(maxsize=1)
def _all_prompts() -> tuple[ExamplePrompt, ...]:
    data = json.loads((HERE / "prompts.json").read_text())
    return tuple(_parse(f, i, entry) for f in FAMILIES for i, entry in enumerate(data[f]))


def load_prompts(family: str | None = None) -> list[ExamplePrompt]:
    """All example prompts, or those of one family."""
    return [p for p in _all_prompts() if family in (None, p.family)]


def expectations_for(text: str) -> Expectations | None:
    """The expectations of the example prompt whose text is exactly `text` (None if none)."""
    return next((p.expectations for p in _all_prompts() if p.text == text), None)


def walkthrough_files() -> list[Path]:
    """The walkthrough files, in the order the Classroom lists them (by file name)."""
    return sorted((HERE / "walkthroughs").glob("*.json"))


def load_walkthroughs() -> list[dict]:
    """Ready classroom walkthroughs: a prompt, settings and the points to make aloud."""
    return [json.loads(p.read_text()) for p in walkthrough_files()]
