"""Machine-checkable expectations of a task: words the answer must contain, and words it must not.

A spelling fix must contain the corrected spellings and none of the misspellings; a rename must
contain the new name and not the old one. Terms match whole words, ignoring case, so "entrance"
is found in "Entrance," but "total" is not found in "subtotal". A math prompt names its final
answer: the last number the answer writes must equal it ("391", "0.8"; thousands separators and a
trailing unit or LaTeX box are ignored), so an answer that stops mid-way or ends on a wrong number fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import ConfigError
from core.vocabulary import ExpectationCheck, ExpectationKind


@dataclass(frozen=True)
class Expectations:
    """What a correct answer to one prompt contains and does not contain."""

    must_appear: tuple[str, ...] = ()
    must_not_appear: tuple[str, ...] = ()
    answer: str | None = None  # the final answer, a number: the last number of the text must equal it

    def __post_init__(self) -> None:
        for term in self.must_appear + self.must_not_appear:
            if not isinstance(term, str) or not term.strip():
                raise ConfigError(f"an expectation must be a non-empty word or phrase, got {term!r}")
        clash = set(map(str.lower, self.must_appear)) & set(map(str.lower, self.must_not_appear))
        if clash:
            raise ConfigError(f"a term cannot both have to appear and not appear: {sorted(clash)}")
        if self.answer is not None and _number(self.answer) is None:
            raise ConfigError(f"a final answer must be a number such as 391 or 0.8, got {self.answer!r}")

    def __len__(self) -> int:
        return len(self.must_appear) + len(self.must_not_appear) + (self.answer is not None)

    def check(self, text: str) -> list[ExpectationCheck]:
        """One check per term, in order: must-appear terms first, the final answer last."""
        return ([ExpectationCheck(ExpectationKind.MUST_APPEAR.value, t, contains(text, t)) for t in self.must_appear]
                + [ExpectationCheck(ExpectationKind.MUST_NOT_APPEAR.value, t, not contains(text, t))
                   for t in self.must_not_appear]
                + ([ExpectationCheck(ExpectationKind.FINAL_ANSWER.value, self.answer,
                                     final_answer_is(text, self.answer))] if self.answer is not None else []))

    @classmethod
    def from_dict(cls, data: dict) -> Expectations:
        unknown = set(data) - {"must_appear", "must_not_appear", "answer"}
        if unknown:
            raise ConfigError(f"unknown expectation keys: {sorted(unknown)}")
        answer = data.get("answer")
        return cls(tuple(data.get("must_appear", ())), tuple(data.get("must_not_appear", ())),
                   None if answer is None else str(answer))


def contains(text: str, term: str) -> bool:
    """Whether `term` occurs in `text` as whole words, ignoring case."""
    start = r"\b" if term[:1].isalnum() or term[:1] == "_" else ""
    end = r"\b" if term[-1:].isalnum() or term[-1:] == "_" else ""
    return re.search(start + re.escape(term) + end, text, flags=re.IGNORECASE) is not None


NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def last_number(text: str) -> float | None:
    """The last number written in `text` (commas between digits are thousands separators), or None."""
    found = [n for n in (_number(m.group().rstrip(",")) for m in NUMBER.finditer(text)) if n is not None]
    return found[-1] if found else None


def final_answer_is(text: str, answer: str) -> bool:
    """Whether the last number of `text` equals `answer` (to 1e-9 relative)."""
    value, expected = last_number(text), _number(answer)
    return value is not None and expected is not None and abs(value - expected) <= 1e-9 * max(1.0, abs(expected))
