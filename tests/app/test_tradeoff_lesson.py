"""The Classroom's trade-off lesson reads its numbers from the recorded sweep's traces, and lives without it."""

from __future__ import annotations

import re

import gradio as gr
import pytest
from app_fixtures import app_url_fixture, browser_fixture  # noqa: F401  (fixtures)

from app import recorded
from app.tabs import tradeoff_lesson as section
from app.views import tradeoff_lesson as lesson
from app.views.cards import headline_values
from core.analysis.metrics import summarize
from core.round_policy import OFF
from core.sweeps.grid import Point
from core.vocabulary import Outcome


@pytest.fixture(scope="module")
def grid():
    grid = recorded.load(recorded.OPENING)
    assert grid is not None, recorded.PROBLEMS
    return grid


def test_every_step_shows_the_numbers_of_its_own_recorded_trace(grid) -> None:
    steps = lesson.lesson_steps(grid)
    assert [s.tau for s in steps] == list(lesson.LESSON_TAUS)
    for index, step in enumerate(steps):
        trace = grid.trace(Point(step.tau, OFF, grid.config.gamma))
        metrics = summarize(trace)
        speed, _, words, metric = headline_values(metrics)
        assert metric == "words_differing" and (step.speed, step.words) == (speed, words)
        shown = lesson.step_html(steps, index)
        assert f"data-metric='modelled_speedup'>{speed}<" in shown
        assert f"data-metric='words_differing'>{words}<" in shown
        unchecked = sum(t.outcome == Outcome.DIRECT_ACCEPT for t in trace.tokens)
        assert unchecked == round(metrics["share_direct-accepted"] * metrics["tokens"])
        says = lesson.step_sentences(steps, index)
        assert f"{metrics['full_calls']} pass" in says
        if unchecked:
            assert f"{unchecked} tokens of {len(trace.tokens)} ({unchecked / len(trace.tokens):.0%})" in says
        else:
            assert "tier 1 is off" in says and f"all {metrics['drafted']} drafted tokens" in says
        if index:
            assert f"{steps[index - 1].speed} → {speed}" in says
        # every number the sentence says is one of this step's (or the step before's) shown numbers
        numbers = set(re.findall(r"\d+(?:\.\d+)?", says))
        allowed = {f"{s.tau:.2f}" for s in steps} | {str(metrics[k]) for k in ("drafted", "full_calls", "tokens")}
        allowed |= {str(unchecked), str(len(trace.tokens)), f"{unchecked / len(trace.tokens):.0%}".rstrip("%")}
        allowed |= {v.rstrip("×%") for s in steps[max(0, index - 1): index + 1] for v in (s.speed, s.words)}
        allowed |= {f"{metrics['rejection_rate']:.0%}".rstrip("%"), "1", "16"}  # "tier 1", "bfloat16"
        assert numbers <= allowed, numbers - allowed
        tokens = lesson.step_tokens(steps, index)
        assert f'id="{lesson.TOKENS_ID}"' in tokens and f'data-tokens="{len(trace.tokens)}"' in tokens


def test_speed_rises_as_tau_accept_falls_and_climbs_above_plain(grid) -> None:
    speeds = [s.metrics["modelled_speedup"] for s in lesson.lesson_steps(grid)]
    assert speeds == sorted(speeds) and len(set(speeds)) == len(speeds)
    assert max(speeds) > 1.0
    words = [s.metrics["words_differing"] for s in lesson.lesson_steps(grid)]
    assert words[-1] > words[0]  # fidelity falls from classic SD to the lowest threshold


def test_the_chart_marks_the_current_step_on_the_recorded_curve(grid) -> None:
    steps = lesson.lesson_steps(grid)
    for step in steps:
        fig = lesson.lesson_chart(grid, step.tau)
        speed, words, star = fig.data[0], fig.data[1], fig.data[2]
        assert list(speed.x) == [tau for tau, _, _ in lesson.recorded_rows(grid)]
        assert list(speed.y) == [m["modelled_speedup"] for _, _, m in lesson.recorded_rows(grid)]
        assert list(words.y) == [100 * m["words_differing"] for _, _, m in lesson.recorded_rows(grid)]
        assert (star.x[0], star.y[0]) == (step.tau, step.metrics["modelled_speedup"])
    assert len(lesson.lesson_chart(grid, None).data) == 2  # no step: no star


def test_the_section_steps_and_degrades_to_one_line_without_the_sweep(grid, monkeypatch) -> None:
    with gr.Blocks():
        built = section.TradeoffLesson()
        built.wire()
    labels = built.radio.choices
    assert [label for label, _ in labels] == [lesson.choice_label(s) for s in lesson.lesson_steps(grid)]
    assert "classic SD" in labels[0][0] and "recommended" in labels[1][0]
    step, tokens, chart = built.show(labels[2][0])
    assert "data-tau='0.70'" in step and "step 3 of 4" in step and chart.data[2].x[0] == 0.7

    assert recorded.load("no-such-sweep", recorded.SWEEPS) is None
    problem = recorded.PROBLEMS["no-such-sweep"]
    monkeypatch.setattr(recorded, "load", lambda name, folder=recorded.SWEEPS: None)
    monkeypatch.setitem(recorded.PROBLEMS, recorded.OPENING, problem)
    with gr.Blocks() as blocks:
        missing = section.TradeoffLesson()
        missing.wire()
    assert missing.radio is None and missing.steps == []
    lines = [b.value for b in blocks.blocks.values() if isinstance(b, gr.HTML)]
    assert len(lines) == 1 and "missing" in lines[0] and lines[0].count("<p") == 1
    assert lesson.lesson_steps(None) == [] and len(lesson.lesson_chart(None).data) == 2


@pytest.mark.embedded
@pytest.mark.browser
def test_every_step_fits_a_projector_and_shows_its_numbers(grid, browser, app_url: str) -> None:
    page = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#viasd-run", timeout=60_000)
    page.get_by_role("tab", name=re.compile("Classroom")).click()
    page.locator("#viasd-lesson").get_by_text("The trade-off on the real pair").first.click()
    for step in lesson.lesson_steps(grid):
        page.locator("#viasd-lesson-pick").get_by_text(lesson.choice_label(step), exact=True).click()
        page.wait_for_selector(f".viasd-lesson-step[data-tau='{step.tau:.2f}']", timeout=30_000)
        page.evaluate("document.getElementById('viasd-lesson').scrollIntoView({block: 'start'})")
        said = page.inner_text(".viasd-lesson-numbers")
        assert step.speed in said and step.words in said
        boxes = [page.locator(sel).bounding_box() for sel in
                 ("#viasd-lesson-pick", ".viasd-lesson-step", f"#{lesson.TOKENS_ID}", f"#{lesson.LEGEND_ID}",
                  "#viasd-lesson-chart")]
        assert all(box is not None for box in boxes)
        assert max(box["y"] + box["height"] for box in boxes) - min(box["y"] for box in boxes) <= 768, boxes
        assert max(box["x"] + box["width"] for box in boxes) <= 1024, boxes
    page.close()
