"""The trade-off on the real pair, in numbers read from the opening's recorded sweep (README and About tab).

One row per τ_accept (tier 2 off, the pair's γ): modelled speed-up, words differing from the full model's own
greedy output, drafts rejected and the share of tokens tier 1 kept unchecked, each in the cards' own format,
then where and how the sweep was recorded. `tests/app/test_recorded_numbers.py` checks that the README holds
exactly this table.
"""

from __future__ import annotations

from app.grids import RunGrid
from app.views.cards import headline_values
from core.analysis.metrics import summarize
from core.round_policy import OFF, switched_off
from core.sweeps.grid import Point
from core.trace import Trace

TAU_ACCEPT_ROWS = (1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)
"""The τ_accept values the table shows (1.0: tier 1 off, i.e. classic SD; 0.9: the pair's recommended value)."""


def recorded_rows(grid: RunGrid, taus: tuple[float, ...] = TAU_ACCEPT_ROWS) -> list[tuple[float, Trace, dict]]:
    """(τ_accept, its recorded trace, `summarize` of it) at tier 2 off and the run's own γ, for each of `taus` the
    sweep holds (the About table and the Classroom's trade-off lesson read the same rows)."""
    rows = []
    for tau in taus:
        trace = grid.trace(Point(tau, OFF, grid.config.gamma))
        if trace is not None:
            rows.append((tau, trace, summarize(trace)))
    return rows


def tau_note(grid: RunGrid, tau: float) -> str:
    """What a τ_accept value is on this sweep: "classic SD" (tier 1 off), "recommended" (the run's own), or ""."""
    return "classic SD" if switched_off(tau) else "recommended" if tau == grid.config.tau_accept else ""


def tradeoff_table(grid: RunGrid) -> str:
    """The markdown table of the recorded trade-off at tier 2 off and the run's own γ."""
    rows = ["| τ_accept | modelled speed-up | words differing | drafts rejected | tokens kept unchecked (tier 1) |",
            "|---|---|---|---|---|"]
    for tau, _, metrics in recorded_rows(grid):
        speed, rejected, words, _ = headline_values(metrics)
        note = tau_note(grid, tau)
        label = f"{tau:.2f}" + (f" ({note})" if note else "")
        rows.append(f"| {label} | {speed} | {words} | {rejected} | {metrics['share_direct-accepted']:.0%} |")
    return "\n".join(rows)


def provenance(grid: RunGrid) -> str:
    """Where the sweep comes from, in one sentence (models, dtype, machine, date, the command)."""
    meta = grid.recorded or {}
    machine = meta.get("machine") or {}
    names = " and ".join(m["name"] for m in (meta.get("models") or {}).values() if m)
    return (f"Recorded {meta.get('recorded', '?')} with {names} in {meta.get('dtype')} on {machine.get('processor')} "
            f"({machine.get('cores')} cores, {machine.get('threads')} threads; torch {machine.get('torch')}), prompt "
            f"{meta.get('example')}, γ {grid.config.gamma}, tier 2 off, {grid.config.max_new_tokens} new tokens at "
            f"most, by `{meta.get('command')}`.")


def about_markdown(grid: RunGrid | None) -> str:
    """The About tab's section: what the opening screen shows, in the recorded numbers."""
    if grid is None:
        return ""
    return ("## The trade-off on the real pair (the opening screen)\n"
            "Drag τ_accept down and the 0.5B drafter's confident guesses are kept with no check: fewer passes of "
            "the 1.5B model (speed-up, modelled for an accelerator), more words that differ from what the 1.5B "
            "would have written alone. Every row is a real re-route of one live run; no model runs when you drag.\n\n"
            + tradeoff_table(grid) + "\n\n" + provenance(grid) + " In bf16 even classic SD differs a little from "
            "plain greedy decoding (several tokens per pass round differently), so its words differing is not 0.")
