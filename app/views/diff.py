"""A run's text against the full model's own output, with every kind of difference marked.

Insertions and substitutions are highlighted (yellow, bold, underlined); words the full model
wrote but this run dropped appear struck through in red, so a missing "and oxygen" is visible.
Control tokens (<|im_end|>) are not words: they are left out of the comparison and the counts.
"""

from __future__ import annotations

import difflib
import html

from app.views.render import is_special
from core.trace import TokenRecord, Trace


def _visible(trace: Trace) -> list[TokenRecord]:
    return [t for t in trace.tokens if not is_special(t)]


def _text(tokens: list[TokenRecord]) -> str:
    return html.escape("".join(t.text for t in tokens))


def diff_html(trace: Trace, reference: Trace, elem_id: str) -> str:
    """Output text with insertions, substitutions and deletions against `reference` marked."""
    ours, ref = _visible(trace), _visible(reference)
    matcher = difflib.SequenceMatcher(a=[t.token_id for t in ref], b=[t.token_id for t in ours], autojunk=False)
    parts, added, replaced, dropped = [], 0, 0, 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        mine, theirs = ours[j1:j2], ref[i1:i2]
        if tag == "equal":
            parts.append(_text(mine))
            continue
        if theirs:
            what = "replaced here by the marked text" if mine else "missing here"
            parts.append(f'<del class="diff" title="the full model wrote this; {what}">{_text(theirs)}</del>')
        if mine:
            what = "instead of the struck-through text" if theirs else "not in the full model's output"
            parts.append(f'<mark class="diff" title="{what}">{_text(mine)}</mark>')
        if tag == "replace":
            replaced += len(mine)
            dropped += max(0, len(theirs) - len(mine))
        elif tag == "insert":
            added += len(mine)
        else:
            dropped += len(theirs)
    differs = added + replaced + dropped
    if differs == 0:
        summary = "identical to the full model's output"
    else:
        counts = [f"{n} {word}" for n, word in ((replaced, "replaced"), (added, "added"), (dropped, "dropped")) if n]
        summary = f"{', '.join(counts)} of {len(ref)} tokens vs the full model (marked: highlighted / struck through)"
    end = ' <span class="tok special" title="end of the answer">■ end</span>' if len(ours) < len(trace.tokens) else ""
    return (f'<div id="{elem_id}" class="viasd-tokens" data-differs="{differs}" data-added="{added}" '
            f'data-replaced="{replaced}" data-dropped="{dropped}">{"".join(parts)}{end}</div>'
            f'<div class="viasd-note">{html.escape(summary)}</div>')
