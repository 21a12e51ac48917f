"""After a run on a browser page, the seconds after Done go to the τ_accept line: the reliability passes wait for it
(app.streaming, app.late_reliability) and plain's pace was timed before the run, on another text
(core.analysis.plain_pace.warm_up). Tiny random models; nothing timed."""

from __future__ import annotations

import dataclasses

import pytest
from app_fixtures import TEST_SETTINGS
from tiny import tiny_bundle

from app import streaming
from app.grids import GRIDS
from app.late_reliability import LATE
from app.prefetch import PREFETCHER
from app.views.page_grid import FEED
from core import generate
from core.analysis.plain_pace import PLAIN_PACES, PaceKey, decode_pace, warm_up
from core.sweeps.grid import Point


@pytest.fixture()
def tiny(monkeypatch):
    bundle = tiny_bundle(layers=6, middle_scale=0.1, avoid_eos=True)
    monkeypatch.setattr(streaming.SESSIONS, "bundle", lambda session="": bundle)
    PLAIN_PACES.clear()
    yield bundle
    PREFETCHER.clear()
    PLAIN_PACES.clear()


def test_a_pages_run_leaves_reliability_to_the_background_and_an_api_callers_measures_it(tiny) -> None:
    settings = TEST_SETTINGS.with_(prompt="the cat sat on the mat. the dog sat on the log. the cat")
    api = streaming.drain(streaming.run(settings, "late-api", replay=True))
    assert api["reliability"] is not None, "an API caller reads the last update alone: it is measured there"
    PREFETCHER.clear()
    FEED.page_opened("late-page", None)
    seen = []
    page = streaming.drain(streaming.run(settings.with_(max_new_tokens=14), "late-page", replay=True), seen.append)
    assert page["reliability"] is None and "follow the τ_accept line" in page["status"]
    assert not any("measuring reliability" in u.get("status", "") for u in seen)
    assert page["grid_timer"] and LATE.waiting("late-page")
    grid = GRIDS.for_trace(page["trace"])
    PREFETCHER.wait(timeout=120) if grid.reliability is None else None
    assert grid.reliability is not None, "the background measured it once the line was computed"
    shown = streaming.reliability_update("late-page", page["trace"])
    assert shown["reliability"] is grid.reliability and len(shown["reliability"]) == len(page["trace"].tokens)
    assert shown["conf_plot"].data, "the charts are drawn from it"
    assert streaming.reliability_update("late-page", page["trace"]) is None, "once"
    FEED.forget("late-page")


def test_the_warm_up_times_plain_on_its_own_text_so_the_run_still_measures_its_own_pace(tiny) -> None:
    assert not PLAIN_PACES.known_for(tiny)
    pace = warm_up(tiny)
    assert pace is not None and "when the model was first used" in pace.source and PLAIN_PACES.known_for(tiny)
    run = generate(tiny, TEST_SETTINGS.prompt, TEST_SETTINGS.config(), replay=True)
    assert decode_pace(run) is not None, "no pass of the visitor's run was answered by the warm-up's memo rows"
    assert PaceKey.of_bundle(tiny) == PaceKey.of(run.models) and PLAIN_PACES.get(run.models) == pace


def test_in_reduced_precision_a_pages_plain_reference_follows_the_line(tiny, monkeypatch) -> None:
    """A pass per token, the plain reference took longer than the whole line: a page's run shows its words differing
    against its classic-SD twin at once, the line's points are measured the same way, and after the line the
    background decodes the plain answer, measures the run and every point against it, and the page is sent the
    grid again, where it stands (kind "refresh")."""
    from app import fidelity_cache

    monkeypatch.setattr(fidelity_cache, "exact_arithmetic", lambda bundle: False)  # as bf16 is: twin != plain
    FEED.page_opened("late-ref", None)
    settings = TEST_SETTINGS.with_(prompt="a dog sat on a log. the cat sat on the mat. a dog", max_new_tokens=14)
    seen = []
    page = streaming.drain(streaming.run(settings, "late-ref", replay=True), seen.append)
    assert not any("decoding the full model's plain answer" in u.get("status", "") for u in seen)
    assert "plain answer (numerics apart) follow the τ_accept line" in page["status"]
    run = page["trace"]
    assert run.fidelity.against == "classic SD"
    grid = GRIDS.for_trace(run)
    assert grid.fidelity_later and not grid.fidelity_due(), "the line comes first"
    while grid.reliability is None:
        PREFETCHER.wait(timeout=120)
    if grid.fidelity_later:  # the charts come as soon as they exist, before the plain answer
        charts = streaming.reliability_update("late-ref", run)
        assert charts is not None and charts["conf_plot"].data and "grid_data" not in charts
    for _ in range(3):
        if grid.fidelity_later or grid.reliability is None:
            PREFETCHER.wait(timeout=120)
    assert not grid.fidelity_later and grid.line_ready()[0] == grid.line_ready()[1]
    assert all(t.fidelity is not None and t.fidelity.against != "classic SD" for _, t in grid.computed()), \
        "every point computed so far measured again against the plain answer"
    shown = streaming.reliability_update("late-ref", run)
    assert shown is not None and '"kind":"refresh"' in shown["grid_data"] and shown["conf_plot"].data
    assert streaming.reliability_update("late-ref", run) is None, "each once"
    FEED.forget("late-ref")


def test_a_pages_points_land_with_words_differing_and_their_token_agreement_follows_the_line(tiny, monkeypatch):
    """Each point's teacher-forced pass (40 % of a line's work on two cores) waits for after the line: a point lands
    with its words differing (what the page draws) and a card that says the agreement comes later; after the line
    every computed point has it, and the page is sent the grid again. A model event stops that step between two
    points; it goes on after."""
    from app.grids import RunGrid
    from app.views.cards import AGREEMENT_LATER, metrics_html
    from core.analysis.metrics import summarize

    bundle = tiny_bundle(layers=6, avoid_eos=True)  # a self-drafter far enough from its verifier: the notches'
    monkeypatch.setattr(streaming.SESSIONS, "bundle", lambda session="": bundle)  # texts differ (6 on this line)
    landed = []
    add = RunGrid.add
    monkeypatch.setattr(RunGrid, "add", lambda grid, point, trace: (landed.append(trace.fidelity),
                                                                    add(grid, point, trace))[1])
    FEED.page_opened("late-agree", None)
    settings = TEST_SETTINGS.with_(prompt="the cat sat on the mat. a dog sat on a log. the cat", max_new_tokens=14)
    page = streaming.drain(streaming.run(settings, "late-agree", replay=True))
    run = page["trace"]
    assert run.fidelity.full_agreement is not None, "the run's own fidelity is whole at Done"
    grid = GRIDS.for_trace(run)
    assert grid.fidelity_later
    while grid.reliability is None or grid.fidelity_later:
        PREFETCHER.wait(timeout=120)
    points = [f for f in landed if f is not None]  # (the run's own lands before its fidelity is measured)
    line = len(grid.grid.line(Point.of(grid.config))) - 1
    assert any(f.full_agreement is None for f in points[:line]), \
        "the line's points landed with words differing only (those whose text was measured whole before: cached)"
    assert all(t.fidelity.full_agreement is not None for _, t in grid.computed()), "then every point got its pass"
    shown = streaming.reliability_update("late-agree", run)
    assert shown is not None and '"kind":"refresh"' in shown["grid_data"]
    FEED.forget("late-agree")

    point = next(t for _, t in grid.computed()[1:])
    part = dataclasses.replace(point.fidelity, full_agreement=None, full_nll=None)
    point.fidelity, whole = part, point.fidelity
    metrics = summarize(point)
    assert "full_agreement" not in metrics and metrics["words_differing"] == whole.words_differing
    assert AGREEMENT_LATER in metrics_html(metrics, point)
    grid.fidelity_later = True
    PREFETCHER._rest_of_fidelity(bundle, grid, lambda: True)
    assert grid.fidelity_later and point.fidelity.full_agreement is None, "stopped before the first point"
    PREFETCHER._rest_of_fidelity(bundle, grid, lambda: False)
    assert not grid.fidelity_later and point.fidelity.full_agreement == whole.full_agreement
