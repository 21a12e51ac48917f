"""How the Classroom spells tokens and numbers for a class: visible whitespace, named end markers, comparisons.

A projector shows a space or a line break as nothing, so whitespace gets marks (⏎ a line break, · a
space, ⇥ a tab); a control token (`<|im_end|>`) is the end marker, never its raw text; chat-template
pieces (`<|im_start|>assistant`) are left out of sentences. A confidence beside its threshold reads
"0.43 ≥ 0.4" with the sign the numbers have (more digits where rounding would contradict it).
"""

from __future__ import annotations

import re

from app.views.render import SPECIAL_TOKEN

TEMPLATE = re.compile(r"<\|[^|<>]{1,40}\|>(?:system|user|assistant)?\n?|</?s>|<eos>|<end_of_turn>")
"""Chat-template pieces in a draft's text: markers and the role name that follows a turn marker."""
END = "■ end"
"""How a control token (end of turn, end of text) is drawn: the text view's end marker."""
MARKS = {"\n": "⏎", " ": "·", "\t": "⇥"}


def conf(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def versus(value: float | None, threshold: float) -> str:
    """'0.43 ≥ 0.4' or '0.38 < 0.4': a confidence against its threshold ('—' when it was not computed)."""
    if value is None:
        return "—"
    sign, shown = ("≥" if value >= threshold else "<"), f"{value:.2f}"
    if (float(shown) >= threshold) != (value >= threshold):  # 0.699 would read 0.70 < 0.7
        shown = f"{value:.4f}"
    return f"{shown} {sign} {threshold:g}"


def is_end(text: str) -> bool:
    """A control token or a chat-template marker: the end marker, not words."""
    return bool(SPECIAL_TOKEN.match(text) or TEMPLATE.fullmatch(text.strip()))


def marked(text: str) -> str:
    """A token as it reads on a projector: whitespace-only tokens in marks ("⏎", "⏎⏎", "····"); a word with
    its line breaks marked, its one leading space dropped and any other edge spaces marked; "■ end" for a marker."""
    if is_end(text):
        return END
    if not text.strip():
        return "".join(MARKS.get(ch, ch) for ch in text)
    word = text[1:] if text.startswith(" ") and not text.startswith("  ") else text
    body = word.strip(" ")
    lead, trail = len(word) - len(word.lstrip(" ")), len(word) - len(word.rstrip(" "))
    return "·" * lead + body.replace("\n", "⏎").replace("\t", "⇥") + "·" * trail


def shown(text: str) -> str:
    """A token in the text or a table's output cell: spaces stay spaces (the cell keeps them), line breaks and
    whitespace-only tokens get marks, a marker reads "■ end"."""
    if is_end(text):
        return END
    if not text.strip():
        return "".join(MARKS.get(ch, ch) for ch in text)
    return text.replace("\n", "⏎").replace("\t", "⇥")


def quoted(text: str | None) -> str:
    """A token in a sentence: quoted marks ("“⏎”", "“sky”"), "the end marker" for a control token, "a guess" for a
    draft token a trace recorded before drafts were spelled and that is nowhere in its text."""
    if text is None:
        return "a guess"
    if is_end(text):
        return "the end marker"
    return "“" + marked(text) + "”"


def spoken(text: str) -> str:
    """A run of tokens as one phrase: chat-template pieces removed, line breaks marked, spaces collapsed
    ("" when nothing readable is left)."""
    bare = TEMPLATE.sub(" ", text)
    if not bare.strip():
        return ""
    return " ".join(bare.replace("\n", " ⏎ ").split()).replace(" ⏎ ", "⏎ ").replace(" ⏎", "⏎")
