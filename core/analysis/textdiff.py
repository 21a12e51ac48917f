"""Word-level difference between two texts, as a reader would count it.

Token agreement hides that the few tokens that differ can be the whole task (a typo copied back,
a variable left unrenamed). Here both texts are split into words (runs of non-space characters,
special tokens such as `<|im_end|>` removed first) and aligned with the minimum number of word
insertions, deletions and substitutions (Levenshtein over words, as word error rate does).

`words_differing` = edits / max(words in either text): 0 when the texts read the same, 1 when no
word lines up; dividing by the longer text keeps it within [0, 1] (word error rate divides by the
reference and can exceed 1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.vocabulary import EditKind, WordSpan

SPECIAL_TOKEN = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?s>")


@dataclass(frozen=True)
class WordDiff:
    """The alignment's summary: edit counts and the differing spans, in output order."""

    output_words: int
    reference_words: int
    inserted: int
    deleted: int
    substituted: int
    spans: tuple[WordSpan, ...]

    @property
    def edits(self) -> int:
        return self.inserted + self.deleted + self.substituted

    @property
    def words_differing(self) -> float:
        longest = max(self.output_words, self.reference_words)
        return self.edits / longest if longest else 0.0


def words(text: str, special: Iterable[str] = ()) -> list[str]:
    """The words of `text`: special tokens (ChatML-style, `<s>`, and any in `special`) never count."""
    for token in special:
        if token:
            text = text.replace(token, " ")
    return SPECIAL_TOKEN.sub(" ", text).split()


def _align(out: list[str], ref: list[str]) -> list[tuple[str, int, int]]:
    """Minimum-edit alignment as a list of (op, i, j) with op in '=', 's', 'i', 'd' (i over out, j over ref)."""
    n, m = len(out), len(ref)
    # Trim the common prefix and suffix first: outputs usually share long stretches, so the
    # quadratic table only covers the part that differs.
    head = 0
    while head < n and head < m and out[head] == ref[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and out[n - 1 - tail] == ref[m - 1 - tail]:
        tail += 1
    a, b = out[head:n - tail], ref[head:m - tail]
    # Cost = edits x big + substitutions: among alignments with the fewest edits, prefer the one
    # keeping the most words in place ("one two extra three" vs "one two three four" is one
    # insertion and one deletion, not two substitutions).
    big, rows, cols = len(a) + len(b) + 1, len(a) + 1, len(b) + 1
    cost = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        cost[i][0] = i * big
    for j in range(cols):
        cost[0][j] = j * big

    def diagonal(i: int, j: int) -> int:
        return cost[i - 1][j - 1] + (0 if a[i - 1] == b[j - 1] else big + 1)

    for i in range(1, rows):
        for j in range(1, cols):
            cost[i][j] = min(diagonal(i, j), cost[i - 1][j] + big, cost[i][j - 1] + big)
    ops: list[tuple[str, int, int]] = []
    i, j = len(a), len(b)
    while i or j:
        if i and j and cost[i][j] == diagonal(i, j):
            ops.append(("=" if a[i - 1] == b[j - 1] else "s", head + i - 1, head + j - 1))
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + big:
            ops.append(("i", head + i - 1, head + j))
            i -= 1
        else:
            ops.append(("d", head + i, head + j - 1))
            j -= 1
    ops.reverse()
    return ([("=", k, k) for k in range(head)] + ops
            + [("=", n - tail + k, m - tail + k) for k in range(tail)])


def word_diff(output: str, reference: str, special: Iterable[str] = ()) -> WordDiff:
    """Align the words of `output` against `reference` and group the differences into spans."""
    special = tuple(special)
    out, ref = words(output, special), words(reference, special)
    ops = _align(out, ref)
    counts = {"s": 0, "i": 0, "d": 0}
    spans: list[WordSpan] = []
    run: list[tuple[str, int, int]] = []

    def close_run() -> None:
        if not run:
            return
        kinds = {op for op, _, _ in run}
        out_idx = [i for op, i, _ in run if op in "si"]
        ref_idx = [j for op, _, j in run if op in "sd"]
        kind = (EditKind.INSERTED if kinds == {"i"} else EditKind.DELETED if kinds == {"d"}
                else EditKind.SUBSTITUTED)
        spans.append(WordSpan(kind=kind.value, output_start=out_idx[0] if out_idx else run[0][1],
                              output_words=tuple(out[i] for i in out_idx),
                              reference_start=ref_idx[0] if ref_idx else run[0][2],
                              reference_words=tuple(ref[j] for j in ref_idx)))
        run.clear()

    for op in ops:
        if op[0] == "=":
            close_run()
        else:
            counts[op[0]] += 1
            run.append(op)
    close_run()
    return WordDiff(output_words=len(out), reference_words=len(ref), inserted=counts["i"], deleted=counts["d"],
                    substituted=counts["s"], spans=tuple(spans))
