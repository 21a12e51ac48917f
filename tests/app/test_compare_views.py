"""Compare recommends, its tables read as words, and every chart fits and follows the scheme (no model)."""

from __future__ import annotations

import re

import pandas as pd
import plotly.io as pio
import pytest

from app.views import chart_style, charts, reliability_chart, tables
from app.views.breakeven_chart import breakeven_figure, colour_top
from app.views.grid_chart import NOTHING_BEATS_PLAIN, tradeoff_figure
from app.views.recommend import recommendation
from app.views.tradeoff_chart import tradeoff_chart
from core.analysis.breakeven import RunPoint


def _grid(speedups: list[float]) -> pd.DataFrame:
    pairs = [(0.9, 0.5), (0.9, 1.0), (0.5, 0.5)][: len(speedups)]
    return pd.DataFrame({"tau_accept": [a for a, _ in pairs], "tau_slim": [s for _, s in pairs],
                         "modelled_speedup": speedups, "words_differing": [0.0, 0.04, 0.2][: len(speedups)],
                         "rejection_rate": [0.3, 0.2, 0.1][: len(speedups)], "full_agreement": [1.0, 0.97, 0.8][
                             : len(speedups)], "identical_to_full": [True, False, False][: len(speedups)]})


def _points() -> pd.DataFrame:
    return pd.DataFrame({"scheme": ["via-sd", "bild", "bild"], "setting": ["0.9/0.5", "fb 0.5", "fb 0.9"],
                         "modelled_speedup": [1.4, 1.9, 1.1], "words_differing": [0.01, 0.12, 0.0]})


def test_the_sentence_names_the_fastest_setting_within_the_budget() -> None:
    grid, points = _grid([1.2, 1.5, 2.5]), _points()
    assert "VIA-SD at τ_accept 0.9, τ_slim off, 1.50×" in recommendation(grid, points, 5)
    assert "BiLD (fb 0.5), 1.90×" in recommendation(grid, points, 15)
    assert "VIA-SD at τ_accept 0.5, τ_slim 0.5, 2.50×" in recommendation(grid, None, 50)
    assert "No setting here stays within 0%" not in recommendation(grid, points, 0)  # BiLD fb 0.9 differs 0 %
    assert "Run the threshold grid" in recommendation(None, None, 5)
    assert "Type a words-differing budget" in recommendation(grid, points, "lots")
    slow = recommendation(_grid([0.7, 0.8]), None, 10)
    assert "Nothing here beats plain decoding" in slow and "0.80×" in slow
    assert "closest is" in recommendation(_grid([1.2, 1.5]).assign(words_differing=[0.3, 0.4]), None, 5)


def test_the_grid_draws_plain_both_thresholds_and_says_when_nothing_beats_plain() -> None:
    fig = tradeoff_figure(_grid([1.2, 1.5, 2.5]), 0.9, 0.5)
    assert sum(1 for s in fig.layout.shapes if s.y0 == s.y1 == 1.0) == 2  # the 1.0× line on both panels
    names = {t.name for t in fig.data}
    assert {"τ_slim 0.5", "τ_slim off", "the sliders' pair"} <= names
    assert any(t.marker.showscale for t in fig.data)  # τ_accept as the colour scale
    assert NOTHING_BEATS_PLAIN not in fig.layout.title.text
    assert NOTHING_BEATS_PLAIN in tradeoff_figure(_grid([0.6, 0.8]), 0.9, 0.5).layout.title.text
    star = next(t for t in fig.data if t.name == "the sliders' pair")
    assert "τ_accept 0.9, τ_slim 0.5" in star.hovertemplate and "(0." not in star.hovertemplate


def test_the_schemes_chart_draws_via_sd_on_top_and_thickest() -> None:
    fig = tradeoff_chart(_points())
    fronts = [t for t in fig.data if t.mode == "lines+markers"]
    assert fronts[-1].name == "VIA-SD" and fronts[-1].line.width > max(t.line.width for t in fronts[:-1])


def test_tables_use_words_and_rounded_numbers() -> None:
    table = tables.grid_table(_grid([1.2, 1.5, 2.5]))
    assert list(table.columns) == list(tables.GRID_COLUMNS) and table.iloc[0, 0] == "VIA-SD at τ_accept 0.5, τ_slim 0.5"
    cells = [str(v) for v in table.to_numpy().ravel()] + list(table.columns)
    assert not any("_" in c and "τ_" not in c for c in cells), "a code in a table"
    assert not any(re.fullmatch(r"-?\d+\.\d{3,}", c) for c in cells), "an unrounded number"
    assert set(table["same text"]) <= {"yes", "no"}
    assert list(tables.empty_compare_table().columns) == list(tables.COMPARE_COLUMNS)


def _point(speedup_alpha: float) -> RunPoint:
    return RunPoint(alpha=speedup_alpha, cost=0.0, gamma=10.9, configured_gamma=16, verify=0.3, drafted=131,
                    kept=87, refused=2, draft_rounds=9, direct_share=0.2)


def test_the_break_even_colour_scale_contains_the_run() -> None:
    fast = _point(0.98)
    assert fast.speedup > 3
    fig = breakeven_figure(fast, run_speedup=8.65)
    assert fig.data[0].zmax >= fast.speedup == pytest.approx(fast.speedup) and fig.data[0].zmax == colour_top([fast])
    assert breakeven_figure(None).data[0].zmax == 3.0
    star = next(t for t in fig.data if t.name == "this run")
    assert "the whole run (the card): 8.65× plain" in star.hovertemplate


@pytest.mark.parametrize("figure", [
    lambda: charts.confidence_figure(None, 0.8, 0.5), lambda: charts.timeline_figure(None),
    lambda: tradeoff_figure(None, 0.8, 0.5), lambda: tradeoff_chart(None), lambda: breakeven_figure(None),
    lambda: reliability_chart.reliability_figure(None),
    lambda: reliability_chart.confidence_histogram_figure(None, 0.8, 0.5),
    lambda: reliability_chart.tier_shares_figure(None)])
def test_every_chart_uses_the_house_template_and_a_title_that_fits(figure) -> None:
    fig = figure()
    assert fig.layout.template == pio.templates[chart_style.TEMPLATE]
    title, *sub = fig.layout.title.text.split("<br>")
    assert len(title) <= chart_style.TITLE_CHARS, title
    assert all(len(re.sub(r"<[^>]+>", "", s)) <= chart_style.TITLE_CHARS * 1.3 for s in sub)


def test_both_templates_are_registered_and_the_dark_css_repaints_with_the_dark_one() -> None:
    dark = pio.templates["viasd_dark"].layout
    assert dark.paper_bgcolor == chart_style.PALETTE["dark"]["bg"] and "viasd_light" in pio.templates
    css = chart_style.dark_css()
    assert chart_style.PALETTE["dark"]["bg"] in css and chart_style.PALETTE["dark"]["fg"] in css
    assert css.count(".dark .js-plotly-plot") >= 4


def test_the_advice_names_a_row_of_its_own_tables_and_calls_classic_sd_so() -> None:
    grid = pd.DataFrame({"tau_accept": [1.0, 0.9, 0.5], "tau_slim": [1.0, 1.0, 0.5],
                         "modelled_speedup": [7.97, 8.65, 9.0], "words_differing": [0.0, 0.0, 0.3],
                         "rejection_rate": [0.3, 0.2, 0.1], "identical_to_full": [True, True, False]})
    points = pd.DataFrame({"scheme": ["via-sd", "bild", "bild", "cascade-chow"],
                           "setting": ["τa=1 τs=1", "fb=0 rb=0", "fb=0.6 rb=3", "α=-1"],
                           "modelled_speedup": [7.97, 7.97, 10.69, 7.97], "words_differing": [0.0, 0.0, 0.02, 0.0],
                           "identical_share": [1.0, 1.0, 0.0, 1.0]})
    rows = set(tables.grid_table(grid)["setting"]) | set(tables.schemes_table(points)["setting"])
    assert "classic SD (τ_accept off, τ_slim off)" in rows and "VIA-SD at τ_accept 0.9, τ_slim off" in rows
    for budget in (0, 1, 5, 50):
        advice = recommendation(grid, points, budget)
        named = re.search(r"\*\* (.+?), \d+\.\d\d× plain", advice)
        assert named and named.group(1) in rows, (budget, advice)
    assert "VIA-SD at τ_accept 0.9, τ_slim off, 8.65×" in recommendation(grid, None, 1)
    assert "BiLD (fb=0.6 rb=3), 10.69×" in recommendation(grid, points, 5)


def test_settings_on_one_point_of_the_schemes_chart_show_their_count_and_names() -> None:
    points = pd.DataFrame({"scheme": ["via-sd", "bild", "cascade-chow", "bild"],
                           "setting": ["τa=1 τs=1", "fb=0 rb=0", "α=-1", "fb=0.6 rb=3"],
                           "modelled_speedup": [7.97, 7.97, 7.97, 10.69], "words_differing": [0.0, 0.0, 0.0, 0.02]})
    fig = tradeoff_chart(points)
    shared = next(t for t in fig.data if t.name == "settings on one point")
    assert list(shared.text) == ["×3"]
    assert all(name in shared.customdata[0] for name in ("VIA-SD (τa=1 τs=1 = classic SD)",
                                                          "BiLD (fb=0 rb=0 = classic SD)",
                                                          "Cascade · Chow (α=-1 = classic SD)"))
