"""The About tab's pictures, as inline SVG: the tier rule, one round on a timeline, the slim verifier's layers.

Lines and words use `currentColor` (the page's text colour), so every picture reads in light and
dark mode; boxes are translucent tints of the token colours and always named in words too. The
timeline is drawn from a recorded round's calls (their priced costs) and the layer picture from a
`LayerRoute` (core.models.layer_routes), so neither can disagree with what the engine ran.
"""

from __future__ import annotations

import html

from app.views.render import OUTCOMES
from core.models.layer_routes import LayerRoute
from core.trace import Trace
from core.vocabulary import Outcome

FONT = "font-family: ui-sans-serif, system-ui, sans-serif;"
TIER1, TIER2, TIER3 = (OUTCOMES[o][0] for o in (Outcome.DIRECT_ACCEPT, Outcome.SLIM_ACCEPT, Outcome.FULL_ACCEPT))
ROLE_TINT = {"drafter": "#999999", "slim": TIER2, "full": TIER3}
ARROW = ('<defs><marker id="viasd-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
         'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/></marker></defs>')


def _text(x: float, y: float, lines: list[str], size: int = 15, bold: bool = False, anchor: str = "middle") -> str:
    weight = ' font-weight="700"' if bold else ""
    spans = "".join(f'<tspan x="{x}" dy="{0 if i == 0 else size + 3}">{html.escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"{weight}>{spans}</text>'


def _box(x: int, y: int, w: int, h: int, lines: list[str], tint: str = "none", bold_first: bool = True,
         dashed: bool = False) -> str:
    fill = f'fill="{tint}" fill-opacity="0.22"' if tint != "none" else 'fill="none"'
    stroke = tint if tint != "none" else "currentColor"
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    top = y + h / 2 - 9 * (len(lines) - 1) + 5
    head = _text(x + w / 2, top, lines[:1], bold=bold_first)
    rest = _text(x + w / 2, top + 18, lines[1:]) if len(lines) > 1 else ""
    return (f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="10" {fill} stroke="{stroke}" stroke-width="2.5"'
            f'{dash}/>{head}{rest}')


def _diamond(cx: int, cy: int, w: int, h: int, lines: list[str]) -> str:
    points = f"{cx},{cy - h // 2} {cx + w // 2},{cy} {cx},{cy + h // 2} {cx - w // 2},{cy}"
    return (f'<polygon points="{points}" fill="none" stroke="currentColor" stroke-width="2.5"/>'
            + _text(cx, cy - 9 * (len(lines) - 1) + 5, lines, size=15))


def _arrow(x1: int, y1: int, x2: int, y2: int, label: str = "", dx: int = 6, dy: int = -6) -> str:
    words = _text((x1 + x2) / 2 + dx, (y1 + y2) / 2 + dy, [label], size=14, anchor="start") if label else ""
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor" stroke-width="2" '
            f'marker-end="url(#viasd-arrow)"/>{words}')


def _svg(width: int, height: int, label: str, body: str, elem_id: str) -> str:
    return (f'<figure id="{elem_id}" style="margin: 0.5rem 0; color: inherit;">'
            f'<svg viewBox="0 0 {width} {height}" width="100%" style="max-width: {width}px; {FONT}" '
            f'fill="currentColor" role="img" aria-label="{html.escape(label)}">{ARROW}{body}</svg></figure>')


def rule_svg() -> str:
    """The engine's rule for one draft token: two decisions (drafter ≥ τ_accept; else slim ≥ τ_slim; else full),
    and the branch a copy from the prompt takes (copy evidence, the audit)."""
    body = (
        _text(12, 24, ["Each draft word, left to right. τ = 1.0 switches a tier off (classic SD: both off)."],
              size=15, anchor="start")
        + _text(12, 46, ["All drafts kept and the full model ran: its pass also gives the next word (a free extra "
                         "word)."], size=15, anchor="start")
        + _box(10, 88, 170, 84, ["A draft word w", "and how sure the", "drafter is of it: c"])
        + _arrow(180, 130, 238, 130)
        + _diamond(320, 130, 164, 110, ["c ≥ τ_accept ?", "(tier 1 on)"])
        + _arrow(402, 130, 468, 130, "yes", -30, -10)
        + _diamond(545, 130, 150, 96, ["a copy from", "the prompt?"])
        + _arrow(620, 130, 690, 130, "no", -26, -10)
        + _box(692, 90, 258, 80, ["Tier 1 · keep w", "no verifier looks at it", "(never the end of the answer)"],
               tint=TIER1)
        + _arrow(545, 178, 545, 214, "yes", 8, 4)
        + _box(460, 216, 490, 92, ["A copy needs model evidence (the copies setting)",
                                   "always checked: on to the full model (tier 3) ·",
                                   "kept on trust: kept now, audited by the full model's next",
                                   "pass; at a refused copy the text is cut back (cut by the audit)"],
               dashed=True)
        + _arrow(320, 185, 320, 262, "no", 8, 2)
        + _diamond(320, 340, 250, 150, ["The slim verifier's", "top choice, sure s:", "s ≥ τ_slim ?", "(tier 2 on)"])
        + _arrow(445, 340, 488, 340, "yes", -36, -10)
        + _box(490, 318, 460, 84, ["Tier 2 · the slim verifier decides",
                                   "its top choice is w: keep w", "else write its top choice (the round ends)"],
               tint=TIER2)
        + _arrow(320, 415, 320, 448, "no", 8, 2)
        + _box(60, 450, 890, 74, ["Tier 3 · the full model decides",
                                  "its top choice is w: keep w · else write its own (the round ends) · once it has run "
                                  "this round, it decides the rest (free)"], tint=TIER3))
    return _svg(960, 534, "The tier rule: if the drafter's confidence is at least tau_accept, tier 1 keeps the word "
                "(a copy needs model evidence); else if the slim verifier's confidence in its own top choice is at "
                "least tau_slim, tier 2 decides; else the full model decides", body, "viasd-rule-drawing")


def round_timeline_svg(trace: Trace, index: int) -> str:
    """One recorded round on a timeline: every call in the order it ran, its width its priced cost."""
    calls = trace.rounds[index].calls
    total = sum(c.cost_units for c in calls) or 1.0
    left, width, y = 120, 800, 70
    scale = width / max(total, 1e-9)
    body, x = "", float(left)
    for role in ("drafter", "slim", "full"):
        mine = [c for c in calls if c.role == role]
        if not mine:
            continue
        start = x
        for c in mine:
            w = max(c.cost_units * scale, 2.0)
            body += (f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="44" fill="{ROLE_TINT[role]}" '
                     f'fill-opacity="0.35" stroke="currentColor" stroke-width="1.5"/>')
            x += w
        units = sum(c.cost_units for c in mine)
        name = {"drafter": "drafter", "slim": "slim verifier", "full": "full model"}[role]
        label = f"{len(mine)} × {units / len(mine):.2f} = {units:.2f}" if len(mine) > 1 else f"{units:.2f}"
        body += _text((start + x) / 2, y + 68, [name, label], size=14)
    body += _text(10, y + 27, [f"round {index + 1}"], size=15, bold=True, anchor="start")
    body += _arrow(left, y + 116, left + width, y + 116)
    body += _text(left + width, y + 140, [f"{total:.2f} full-model passes in all"], size=14, anchor="end")
    kept, wrote = trace.rounds[index].accepted, trace.rounds[index].emitted
    body += _text(10, 30, [f"Round {index + 1} of the recorded pair's run: {trace.rounds[index].drafted} drafts, "
                           f"{kept} kept, {wrote} written. Width = cost, in passes of the full model over one token."],
                  size=15, anchor="start")
    return _svg(940, 230, "One round on a timeline: drafter passes, then the slim pass, then the full pass, each as "
                "wide as it costs", body, "viasd-round-timeline")


def layer_stack_svg(route: LayerRoute, label: str) -> str:
    """The slim verifier's layers from its route: each layer's attention and MLP block, skipped ones greyed."""
    n = route.num_layers
    cell, gap, left, top = 28, 3, 110, 50
    body = _text(10, 24, [label], size=15, anchor="start")
    for row, (name, off) in enumerate((("attention", route.skip_attention), ("MLP", route.skip_mlp))):
        y = top + row * (cell + gap)
        body += _text(left - 10, y + cell * 0.68, [name], size=14, anchor="end")
        for i in range(n):
            runs = i in route.layers and i not in off
            x = left + i * (cell + gap)
            style = (f'fill="{TIER2}" fill-opacity="0.45" stroke="currentColor"' if runs else
                     'fill="none" stroke="currentColor" stroke-opacity="0.45" stroke-dasharray="3 3"')
            body += f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" rx="4" {style} stroke-width="1.5"/>'
            if not runs:
                body += _text(x + cell / 2, y + cell * 0.7, ["×"], size=15)
    for i in range(0, n, 1 if n <= 32 else 2):
        body += _text(left + i * (cell + gap) + cell / 2, top + 2 * (cell + gap) + 16, [str(i)], size=12)
    body += _text(left, top + 2 * (cell + gap) + 44, ["filled: runs · dashed with ×: skipped · layer number below"],
                  size=14, anchor="start")
    width = left + n * (cell + gap) + 10
    return _svg(width, top + 2 * (cell + gap) + 56, f"The slim verifier's layers: {route.describe()}", body,
                "viasd-layer-stack")
