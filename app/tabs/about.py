"""Tab 4, About: one round drawn for students, then measured versus modelled numbers, metric definitions, limits.

The drawing is inline SVG whose lines and words use `currentColor` (the page's text colour), so it
reads in light and dark mode; the tier boxes are translucent tints of the token colours, each also
named in words (colour is never the only cue).
"""

from __future__ import annotations

import gradio as gr

import core.analysis.metrics as core_metrics
from app import recorded
from app.views import words
from app.views.recorded_tradeoff import about_markdown
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS, MAX_PROMPT_CHARS

SHOWN_METRICS = ("words_differing", "full_agreement", "identical_to_full", "modelled_speedup", "rejection_rate",
                 "accepted", "rounds", "tokens_per_round", "full_calls_per_token", "rolled_back", "full_nll",
                 "tokens_per_s")
"""The numbers the app's cards and tables show, in the order a student meets them."""
METRIC_TABLE = "| number | what it means |\n|---|---|\n" + "\n".join(
    f"| {words.metric_label(key)} | {words.meaning('metric', key)} |" for key in SHOWN_METRICS)
"""One row per number, in the same plain words as the cards' labels and tooltips (app.views.words)."""


def _box(x: int, y: int, w: int, h: int, lines: list[str], tint: str = "none", bold: bool = False) -> str:
    fill = f'fill="{tint}" fill-opacity="0.22"' if tint != "none" else 'fill="none"'
    text = "".join(f'<tspan x="{x + w // 2}" dy="{0 if i == 0 else 19}">{line}</tspan>' for i, line in enumerate(lines))
    top = y + h // 2 - 9 * (len(lines) - 1) + 5
    weight = ' font-weight="700"' if bold else ""
    stroke = tint if tint != "none" else "currentColor"
    return (f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="10" {fill} stroke="{stroke}" stroke-width="2.5"/>'
            f'<text x="{x + w // 2}" y="{top}" text-anchor="middle"{weight}>{text}</text>')


def _arrow(x1: int, y1: int, x2: int, y2: int, label: str = "", dx: int = 6, dy: int = -6) -> str:
    words = (f'<text x="{(x1 + x2) // 2 + dx}" y="{(y1 + y2) // 2 + dy}" font-size="14" font-style="italic">{label}'
             "</text>") if label else ""
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor" stroke-width="2" '
            f'marker-end="url(#viasd-arrow)"/>{words}')


ROUND_DRAWING = (
    '<figure id="viasd-round-drawing" style="margin:0; color: inherit;">'
    '<svg viewBox="0 0 945 330" width="100%" style="max-width: 945px; font-family: ui-sans-serif, system-ui, '
    'sans-serif; font-size: 16px;" fill="currentColor" role="img" '
    'aria-label="One round: the drafter guesses words; each guess goes to tier 1, tier 2 or tier 3; the kept words '
    'join the output">'
    '<defs><marker id="viasd-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
    'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/></marker></defs>'
    + _box(10, 125, 170, 70, ["1. Drafter", "guesses γ words"], bold=True)
    + _arrow(180, 160, 248, 160)
    + _box(250, 115, 170, 90, ["2. Each guess:", "how sure is", "the drafter?"])
    + _arrow(420, 140, 520, 55, "very sure", -66, -4)
    + _arrow(420, 160, 520, 165, "not quite", -20, -8)
    + _arrow(420, 180, 520, 275, "unsure", -58, 20)
    + _box(522, 15, 275, 78, ["Tier 1 · trust it", "kept, nobody checks (free)"], tint="#009E73", bold=True)
    + _box(522, 125, 275, 78, ["Tier 2 · slim verifier", "part of the big model checks"], tint="#56B4E9", bold=True)
    + _box(522, 235, 275, 78, ["Tier 3 · full verifier", "the whole model checks"], tint="#E69F00", bold=True)
    + _arrow(797, 54, 833, 140) + _arrow(797, 164, 831, 164) + _arrow(797, 274, 833, 188)
    + _box(833, 125, 105, 78, ["3. Output", "text"], bold=True)
    + '</svg><figcaption style="font-size: 1rem;">One round. A rejected guess is replaced by the checker\'s own word '
    'and ends the round; the rest of that round\'s guesses are thrown away. If the slim verifier is not sure '
    'either, the guess goes on to the full model. Once the full model has run in a round, it decides the round\'s '
    'remaining guesses too, at no extra cost.</figcaption></figure>'
)

STUDENT_INTRO = """
## How one round works

A big language model writes one word-piece (a *token*) per pass, and every pass reads all of its weights:
that is slow. **Speculative decoding** lets a cheap *drafter* guess a few tokens ahead (γ of them), and the big
model checks all the guesses in one pass. **VIA-SD** adds two shortcuts: when the drafter is very sure, its guess is
kept without any check (tier 1); when it is less sure, a *slim verifier* — the same big model with some of its
layers skipped — checks it (tier 2); only the hard cases go to the full model (tier 3). Two dials decide the split:
**τ_accept** (how sure the drafter must be to skip checking) and **τ_slim** (how sure the slim verifier must be to
decide). Setting a dial to 1.0 switches its tier off.
"""

NUMBERS = f"""
## Measured or modelled? Two kinds of numbers, never mixed

**Modelled (blue, "modelled" in every label): what a GPU would gain.** On a GPU, one pass costs about the same
whether it checks one token or eight, because the time goes into reading the weights. So we *count* the work: each
pass costs the share of the full model's weights it reads (a slim pass that skips a quarter of the layers costs
about 0.75; a full pass 1). Plain decoding costs exactly 1 per token, and *modelled speed-up* = tokens ÷ cost.
This is arithmetic on a model of the hardware, not a stopwatch.

**Measured (orange, "measured"): seconds on this machine.** A real stopwatch, on this server's CPU. A CPU checks
eight tokens for about the price of two single passes, so measured speed-ups here are smaller than modelled ones —
that difference is itself a lesson about hardware. Moving a slider replays predictions the app has already computed
(same tokens, instantly), so those runs have no honest time: press **Run it live** to measure.

**Fidelity (green, measured): did the shortcuts change the answer?** Tiers 1 and 2 can let through a token the full
model would not have chosen. The headline measure is **words differing**, explained below; *token agreement* is a
second, finer measure, always labelled as such.

**Rounds** are numbered from 1 everywhere on screen (Classroom, tooltips, charts). The downloaded CSV and JSON files
keep the engine's `round` index, which starts at 0 (screen round = `round` + 1).

## Words differing: the headline fidelity number
For every run the app also asks the full model for **its own answer** to the same prompt (plain decoding, always
picking its top word). Then it lines the two answers up word by word and counts the words that were **inserted,
deleted or changed**, divided by the number of words in the longer answer.

* 0 % means the run wrote exactly the full model's own answer: the shortcuts cost nothing.
* "The sky is blue" against "The sky looks blue": one word of four changed, so 25 % of words differ.
* A few differing words can still matter (a copied typo is one word), so the fidelity card lists them, and for
  prompts with checkable expectations it says which ones the answer meets.

Why words and not tokens? A reader notices words. *Token agreement* counts, token by token, whether each token is
the full model's own top choice given the text before it; it is finer, and it can look high while the few
differing tokens are the whole task.

## What each number on screen means
{METRIC_TABLE}

Engineers: every number is defined once, in `core/analysis/metrics.py` (its definitions are under "Metric
definitions, as the code states them" below).

## Limits and tips
* Prompts up to {MAX_PROMPT_CHARS:,} characters; up to {MAX_NEW_TOKENS} new tokens; draft length γ up to {MAX_GAMMA}.
* τ_slim stays at or below τ_accept (drag τ_accept below it and it comes along); 1.0 switches a tier off.
* One run at a time uses the model; other requests wait in the queue. **Stop** ends a run after its current round.
* Every chart has a camera icon in its top-right toolbar: click it to save the chart as a PNG.
  The trace itself downloads as CSV (tokens, rounds) and JSON below the charts.
* **Link to these settings** (Generate tab) gives a link that opens the same prompt and settings and runs them:
  `?prompt=…&tau_accept=…&tau_slim=…&gamma=…&mode=…&drafter=…&max_new_tokens=…&run=1`.
"""


class AboutTab:
    """Static: the drawing of one round, how to read the numbers, metric definitions, limits and tips."""

    def __init__(self) -> None:
        gr.Markdown(STUDENT_INTRO, elem_id="viasd-about-intro")
        gr.HTML(ROUND_DRAWING)
        gr.Markdown(NUMBERS, elem_id="viasd-about-numbers")
        gr.Markdown(about_markdown(recorded.load(recorded.OPENING)), elem_id="viasd-about-tradeoff")
        with gr.Accordion("Metric definitions, as the code states them", open=False):
            gr.Markdown(f"```\n{(core_metrics.__doc__ or '').strip()}\n```")
