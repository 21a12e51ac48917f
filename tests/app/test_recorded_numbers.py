"""docs/app.md's and the About tab's trade-off numbers are the opening's recorded sweep, read from the file."""

from __future__ import annotations

from pathlib import Path

from app import recorded
from app.views.recorded_tradeoff import about_markdown, provenance, tradeoff_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "app.md"


def test_the_docs_hold_the_recorded_trade_off_table_and_where_it_comes_from() -> None:
    grid = recorded.load(recorded.OPENING)
    assert grid is not None, recorded.PROBLEMS
    text = DOC.read_text()
    assert tradeoff_table(grid) in text, "docs/app.md's trade-off table differs from the recorded sweep: paste " \
                                         "app.views.recorded_tradeoff.tradeoff_table(grid) again"
    assert grid.recorded["recorded"] in text and grid.recorded["command"] in text
    assert tradeoff_table(grid) in about_markdown(grid) and provenance(grid) in about_markdown(grid)


def test_the_table_shows_speed_rising_as_fidelity_falls() -> None:
    grid = recorded.load(recorded.OPENING)
    rows = [line.split("|")[1:-1] for line in tradeoff_table(grid).splitlines()[2:]]
    speed = {row[0].split()[0]: float(row[1].strip().rstrip("×")) for row in rows}
    words = {row[0].split()[0]: int(row[2].strip().rstrip("%")) for row in rows}
    assert speed["0.50"] - speed["0.90"] >= 0.3 and words["0.50"] - words["0.90"] >= 5
