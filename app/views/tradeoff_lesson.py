"""The Classroom's trade-off lesson: the real pair's recorded sweep, stepped through a few τ_accept values.

Each step is one recorded trace of the opening sweep (tier 2 off, the run's γ; rows from
`app.views.recorded_tradeoff.recorded_rows`, the same rows as the About table): its text coloured by tier,
its modelled speed-up and words differing in the cards' format (`headline_values`), a sentence or two whose
every number is read from that trace, and a small chart of both against τ_accept with the step marked.
Nothing here runs a model; without the sweep the lesson is one line saying so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.grids import RunGrid
from app.views.cards import headline_values
from app.views.chart_style import finish
from app.views.numbers import plural
from app.views.recorded_tradeoff import TAU_ACCEPT_ROWS, recorded_rows, tau_note
from app.views.render import legend_html, tokens_html
from core.trace import Trace
from core.vocabulary import Outcome

LESSON_TAUS = (1.0, 0.9, 0.7, 0.5)
"""The steps: classic SD (tier 1 off), the pair's recommended value, then two lower thresholds."""
TOKENS_ID, LEGEND_ID = "viasd-lesson-tokens", "viasd-lesson-legend"
SPEED_COLOUR, WORDS_COLOUR, MARK_COLOUR = "#0072B2", "#D55E00", "#E69F00"


@dataclass(frozen=True)
class Step:
    """One τ_accept of the lesson: its recorded trace, `summarize` of it, and the cards' shown values."""

    tau: float
    note: str  # "classic SD", "recommended" or ""
    trace: Trace
    metrics: dict

    @property
    def speed(self) -> str:
        return headline_values(self.metrics)[0]

    @property
    def words(self) -> str:
        return headline_values(self.metrics)[2]

    @property
    def label(self) -> str:
        return f"τ_accept {self.tau:.2f}" + (f" ({self.note})" if self.note else "")

    @property
    def unchecked(self) -> int:
        """Tokens of the text kept with no check (tier 1), counted from the trace."""
        return sum(1 for t in self.trace.tokens if t.outcome == Outcome.DIRECT_ACCEPT)

    @property
    def full_passes(self) -> int:
        """Passes of the full model this run made."""
        return int(self.metrics["full_calls"])


def lesson_steps(grid: RunGrid | None, taus: tuple[float, ...] = LESSON_TAUS) -> list[Step]:
    """The lesson's steps the sweep holds, in the order taught (τ_accept falling)."""
    if grid is None:
        return []
    return [Step(tau, tau_note(grid, tau), trace, metrics) for tau, trace, metrics in recorded_rows(grid, taus)]


def missing_line(problem: str = "") -> str:
    """The lesson's one line when the recorded sweep cannot be read."""
    why = f" ({problem})" if problem else ""
    return (f"<p class='viasd-lesson-missing'>⚠ The trade-off lesson needs the recorded sweep of the real pair, "
            f"which is missing{html.escape(why)}; the walkthroughs above still work.</p>")


def step_sentences(steps: list[Step], index: int) -> str:
    """One or two sentences for step `index`, every number read from that step's trace (and the one before)."""
    step = steps[index]
    m, tokens = step.metrics, len(step.trace.tokens)
    if step.unchecked == 0:
        first = (f"With τ_accept at {step.tau:.2f} tier 1 is off: the full model checks all "
                 f"{plural(m['drafted'], 'drafted token')} in {plural(step.full_passes, 'pass', 'passes')} for "
                 f"{plural(tokens, 'token')}, rejecting {m['rejection_rate']:.0%} of them. Modelled speed-up "
                 f"{step.speed}; {step.words} of words differ from the full model's own greedy output")
        dtype = str(step.trace.models.get("dtype", ""))
        first += (f", although nothing is kept unchecked: in {dtype} a pass over several tokens rounds a little "
                  "differently from one token at a time." if m.get("words_differing") and dtype else ".")
        return first
    text = (f"With τ_accept at {step.tau:.2f}, {plural(step.unchecked, 'token')} of {tokens} "
            f"({step.unchecked / tokens:.0%}) were drafter guesses at least {step.tau:.2f} sure, kept with no check; "
            f"the full model ran {plural(step.full_passes, 'pass', 'passes')}.")
    if index > 0:
        before = steps[index - 1]
        words = (f"words differing stays at {step.words}" if step.words == before.words
                 else f"words differing {before.words} → {step.words}")
        text += f" Against τ_accept {before.tau:.2f}: speed-up {before.speed} → {step.speed} (modelled), {words}."
    return text


def step_html(steps: list[Step], index: int) -> str:
    """The step's headline (speed-up, words differing, as the cards show them) and its sentences."""
    step = steps[index]
    return (f"<div class='viasd-lesson-step' data-tau='{step.tau:.2f}'>"
            f"<p class='viasd-lesson-numbers'><b>{html.escape(step.label)}</b> · step {index + 1} of {len(steps)} · "
            f"<span data-metric='modelled_speedup'>{html.escape(step.speed)}</span> modelled speed-up · "
            f"<span data-metric='words_differing'>{html.escape(step.words)}</span> words differing</p>"
            f"<p class='viasd-lesson-says'>{html.escape(step_sentences(steps, index))}</p></div>")


def step_tokens(steps: list[Step], index: int) -> str:
    """The step's text, each token coloured by its tier, over the legend with this step's counts."""
    trace = steps[index].trace
    return tokens_html(trace, elem_id=TOKENS_ID) + legend_html(trace, elem_id=LEGEND_ID)


def lesson_chart(grid: RunGrid | None, current: float | None = None) -> go.Figure:
    """Speed-up (left axis) and words differing (right axis) against τ_accept, falling left to right, over every
    τ_accept the sweep holds at tier 2 off; the current step is starred on both lines and outlined."""
    rows = recorded_rows(grid, TAU_ACCEPT_ROWS) if grid is not None else []
    taus = [tau for tau, _, _ in rows]
    speeds = [m["modelled_speedup"] for _, _, m in rows]
    words = [100 * m.get("words_differing", float("nan")) for _, _, m in rows]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=taus, y=speeds, mode="lines+markers", name="speed-up (modelled)",
                             line={"color": SPEED_COLOUR, "width": 4}, marker={"size": 9, "symbol": "circle"},
                             hovertemplate="τ_accept %{x:.2f}: %{y:.2f}× modelled<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=taus, y=words, mode="lines+markers", name="words differing (%)",
                             line={"color": WORDS_COLOUR, "width": 3, "dash": "dot"},
                             marker={"size": 9, "symbol": "square"},
                             hovertemplate="τ_accept %{x:.2f}: %{y:.0f} % words differing<extra></extra>"),
                  secondary_y=True)
    if current in taus:
        at = taus.index(current)
        star = {"size": 20, "symbol": "star", "color": MARK_COLOUR, "line": {"width": 1.5, "color": "#000000"}}
        fig.add_trace(go.Scatter(x=[current], y=[speeds[at]], mode="markers", name="this step", marker=star,
                                 hoverinfo="skip"), secondary_y=False)
        fig.add_trace(go.Scatter(x=[current], y=[words[at]], mode="markers", showlegend=False, marker=star,
                                 hoverinfo="skip"), secondary_y=True)
        fig.add_vline(x=current, line={"color": MARK_COLOUR, "width": 2})
    fig.add_hline(y=1.0, line={"color": "#7a7a7a", "dash": "dash", "width": 2}, annotation_text="plain 1.0×",
                  annotation_position="bottom right")
    fig.update_xaxes(title="τ_accept (lower: more kept unchecked)", autorange="reversed", dtick=0.1, tickformat=".1f")
    fig.update_yaxes(title="speed-up (modelled)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title="words differing (%)", range=[0, 100], showgrid=False, secondary_y=True)
    subtitle = "recorded sweep, tier 2 off" if rows else "the recorded sweep is missing"
    finish(fig, "Speed-up and words differing", subtitle, height=330)
    fig.update_layout(margin={"l": 55, "r": 55, "t": 60, "b": 40}, legend={"y": -0.35})
    return fig


def choice_label(step: Step) -> str:
    """A step as the picker names it ("0.90 · recommended")."""
    return f"{step.tau:.2f}" + (f" · {step.note}" if step.note else "")
