"""Machine-checkable expectations of a task: words the answer must contain, and words it must not.

A spelling fix must contain the corrected spellings and none of the misspellings; a rename must
contain the new name and not the old one. Terms match whole words, ignoring case, so "entrance"
is found in "Entrance," but "total" is not found in "subtotal".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from core.errors import ConfigError


class ExpectationKind(str, Enum):
    MUST_APPEAR = "must appear"
    MUST_NOT_APPEAR = "must not appear"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Expectations:
    """What a correct answer to one prompt contains and does not contain."""

    must_appear: tuple[str, ...] = ()
    must_not_appear: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for term in self.must_appear + self.must_not_appear:
            if not isinstance(term, str) or not term.strip():
                raise ConfigError(f"an expectation must be a non-empty word or phrase, got {term!r}")
        clash = set(map(str.lower, self.must_appear)) & set(map(str.lower, self.must_not_appear))
        if clash:
            raise ConfigError(f"a term cannot both have to appear and not appear: {sorted(clash)}")

    def __len__(self) -> int:
        return len(self.must_appear) + len(self.must_not_appear)

    def check(self, text: str) -> list[ExpectationCheck]:
        """One check per term, in order: must-appear terms first."""
        return ([ExpectationCheck(ExpectationKind.MUST_APPEAR.value, t, contains(text, t)) for t in self.must_appear]
                + [ExpectationCheck(ExpectationKind.MUST_NOT_APPEAR.value, t, not contains(text, t))
                   for t in self.must_not_appear])

    @classmethod
    def from_dict(cls, data: dict) -> Expectations:
        unknown = set(data) - {"must_appear", "must_not_appear"}
        if unknown:
            raise ConfigError(f"unknown expectation keys: {sorted(unknown)}")
        return cls(tuple(data.get("must_appear", ())), tuple(data.get("must_not_appear", ())))


@dataclass
class ExpectationCheck:
    """One expectation checked against one text (`full_met`: the same check on the full model's own output)."""

    kind: str  # an ExpectationKind value
    term: str
    met: bool
    full_met: bool | None = field(default=None)


def contains(text: str, term: str) -> bool:
    """Whether `term` occurs in `text` as whole words, ignoring case."""
    start = r"\b" if term[:1].isalnum() or term[:1] == "_" else ""
    end = r"\b" if term[-1:].isalnum() or term[-1:] == "_" else ""
    return re.search(start + re.escape(term) + end, text, flags=re.IGNORECASE) is not None
