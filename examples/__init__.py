"""Example prompts (chat, code, math, summarisation) and classroom walkthroughs, written for this project.

Prompts are plain user messages: the engine applies the model's chat template, nothing is baked in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
FAMILIES = ("chat", "code", "math", "summarisation")


@dataclass(frozen=True)
class ExamplePrompt:
    family: str
    index: int
    text: str

    @property
    def label(self) -> str:
        first_line = self.text.splitlines()[0]
        return f"{self.family} {self.index + 1}: {first_line[:60]}"


def load_prompts(family: str | None = None) -> list[ExamplePrompt]:
    """All example prompts, or those of one family."""
    data = json.loads((HERE / "prompts.json").read_text())
    return [ExamplePrompt(f, i, text) for f in FAMILIES if family in (None, f) for i, text in enumerate(data[f])]


def load_walkthroughs() -> list[dict]:
    """Ready classroom walkthroughs: a prompt, settings and the points to make aloud."""
    return [json.loads(p.read_text()) for p in sorted((HERE / "walkthroughs").glob("*.json"))]
