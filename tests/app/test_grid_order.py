"""A live run's grid after the run: the τ_accept line in view first, shared prefixes computed once, runs first.

Tiny random models (tests/tiny.py); no timings asserted."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from tiny import tiny_bundle

from app.grids import RunGrid, models_of
from app.prefetch import Prefetcher
from core import DecodeConfig, generate
from core.models.loading import ModelBundle
from core.sweeps.grid import Grid, Point

PROMPT = "the cat sat on the mat. the cat sat on the"
CONFIG = DecodeConfig(max_new_tokens=16, gamma=3, chat_template=False, draft_route="skip-middle-50",
                      slim_route="skip-middle-25", tau_accept=0.6, tau_slim=0.4)
GRID = Grid((0.3, 0.4, 0.5, 0.6, 0.7, 0.8), (0.4, 0.2, 1.0), (2, 3))


@pytest.fixture(scope="module")
def bundle() -> ModelBundle:
    return tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)


def fresh(bundle: ModelBundle) -> ModelBundle:
    return ModelBundle(verifier=bundle.verifier, drafter=bundle.drafter)


def run_grid(bundle: ModelBundle, config: DecodeConfig = CONFIG) -> RunGrid:
    trace = generate(bundle, PROMPT, config)
    grid = RunGrid(PROMPT, config, GRID, models_of(trace))
    grid.add(Point.of(config), trace)
    return grid


def test_the_line_in_view_comes_first_nearest_notch_first() -> None:
    order = GRID.line_first(Point(0.6, 0.4, 3))
    line = [p for p in order[:6]]
    assert line == [Point(0.6, 0.4, 3), Point(0.7, 0.4, 3), Point(0.5, 0.4, 3), Point(0.8, 0.4, 3),
                    Point(0.4, 0.4, 3), Point(0.3, 0.3, 3)], "τ_slim follows τ_accept down at 0.3, as the slider does"
    assert sorted(order) == GRID.points() and len(set(order)) == len(order)
    assert Point(0.6, 0.4, 2) not in line, "γ's neighbour waits for the whole line"
    assert GRID.line(Point(0.6, 0.4, 9)) == [], "a γ outside its axis has no line"


def test_a_re_route_moves_the_line_computed_next(bundle: ModelBundle) -> None:
    grid = run_grid(fresh(bundle))
    assert grid.missing()[0] == Point(0.7, 0.4, 3)
    assert grid.line_ready() == (1, 6)
    grid.look_at(Point(0.6, 1.0, 2))
    assert [p.tau_slim for p in grid.missing()[:6]] == [1.0] * 6 and {p.gamma for p in grid.missing()[:6]} == {2}
    assert grid.line_ready() == (0, 6)


def test_the_line_in_view_is_computed_together_before_the_rest(bundle: ModelBundle) -> None:
    grid = run_grid(fresh(bundle))
    line = GRID.line(Point(0.6, 0.4, 3))
    assert grid.next_points(16) == line[1:], "every notch not computed yet, nearest first, in one batch"
    assert grid.next_points(2) == line[1:3]
    for point in line:
        grid.add(point, grid.trace(Point.of(CONFIG)))
    rest = grid.next_points(16)
    assert len(rest) == 16 and not set(rest) & set(line) and rest == grid.missing()[:16]


def test_the_prefetch_computes_the_line_in_view_first(bundle: ModelBundle) -> None:
    models = fresh(bundle)  # held here, as the sessions hold a loaded bundle (the queue keeps a weak reference)
    grid = run_grid(models)
    prefetch = Prefetcher()
    assert prefetch.schedule(models, grid)
    started = time.monotonic()
    while grid.line_ready()[0] < 6 and time.monotonic() - started < 120:
        time.sleep(0.05)
    prefetch.stop()
    computed = [key for key, _ in grid.computed()]
    assert set(computed[:6]) == {p.key for p in GRID.line(Point(0.6, 0.4, 3))}, "the whole line before the rest"
    assert grid.line_ready() == (6, 6)
    assert len(computed) < GRID.points().__len__(), "stopped before the whole grid"


def test_the_points_are_computed_on_the_model_thread(bundle: ModelBundle, monkeypatch) -> None:
    """One OpenMP team for all model work: a second thread running torch slows both (app.model_thread)."""
    from app.model_thread import NAME
    from core.sweeps import together

    threads = set()

    def traced(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return generate(*args, **kwargs)

    monkeypatch.setattr(together, "generate", traced)
    models = fresh(bundle)
    grid = run_grid(models)
    prefetch = Prefetcher()
    assert prefetch.schedule(models, grid)
    started = time.monotonic()
    while len(grid.traces) < 3 and time.monotonic() - started < 120:
        time.sleep(0.02)
    prefetch.stop()
    assert len(grid.traces) >= 3 and threads and all(name.startswith(NAME) for name in threads), threads


def signature(round_: object) -> tuple:
    return (round_.draft_tokens, round_.accepted, round_.emitted, round_.rolled_back,
            [c.role for c in round_.calls])


def test_points_share_their_prefix_up_to_their_first_differing_decision(bundle: ModelBundle) -> None:
    shared, config = fresh(bundle), CONFIG.with_(max_new_tokens=32)
    first = generate(shared, PROMPT, config)
    other = config.with_(tau_accept=0.4)
    alone = generate(fresh(bundle), PROMPT, other)  # the same point with nothing computed before it
    after = generate(shared, PROMPT, other)
    assert after.token_ids == alone.token_ids, "sharing never changes an answer"
    same = 0
    while same < min(len(first.rounds), len(after.rounds)) and signature(first.rounds[same]) == signature(
            after.rounds[same]):
        same += 1
    assert 0 < same < len(after.rounds), "the test needs a shared prefix and a differing decision"
    assert all(c.from_memo for r in after.rounds[:same] for c in r.calls), "a shared round is computed once"
    ran = lambda trace: sum(not c.from_memo for r in trace.rounds for c in r.calls)  # noqa: E731
    assert ran(after) < ran(alone)


def test_a_run_pre_empts_background_work(bundle: ModelBundle) -> None:
    models = fresh(bundle)
    grid = run_grid(models, CONFIG.with_(max_new_tokens=48))
    prefetch = Prefetcher()
    assert prefetch.schedule(models, grid)
    started = time.monotonic()
    while len(grid.traces) < 2 and time.monotonic() - started < 120:
        time.sleep(0.02)
    with prefetch.foreground():  # what every model event enters first
        assert not prefetch.running(), "the background job has exited before the run starts"
        held = len(grid.traces)
        time.sleep(0.3)
        assert len(grid.traces) == held, "nothing is computed in the background while the run holds the model"
    assert grid.missing(), "the job stopped before the end of its grid"
    assert not any(t.name == "viasd-prefetch" and t.is_alive() for t in threading.enumerate())


def test_a_grid_whose_models_were_unloaded_is_dropped_from_the_queue(bundle: ModelBundle) -> None:
    models = fresh(bundle)
    grid = run_grid(models)
    prefetch = Prefetcher()
    assert prefetch.schedule(models, grid)
    prefetch.stop()
    assert prefetch.pending() == [grid]
    del models
    gc.collect()
    assert prefetch.pending() == [grid] and prefetch._next() is None and prefetch.pending() == []


class Logged(RunGrid):
    """A grid that logs each point as it lands, across grids, in one list."""

    log: list = []

    def add(self, point: Point, trace: object) -> None:
        Logged.log.append((self.prompt, point.key))
        super().add(point, trace)


def logged_grid(bundle: ModelBundle, prompt: str, grid: Grid) -> Logged:
    trace = generate(bundle, prompt, CONFIG)
    found = Logged(prompt, CONFIG, grid, models_of(trace))
    found.add(Point.of(CONFIG), trace)
    return found


def test_a_newer_run_goes_first_and_an_earlier_runs_grid_resumes_after(bundle: ModelBundle) -> None:
    models = fresh(bundle)
    first = logged_grid(models, PROMPT, GRID)
    second = logged_grid(models, "a dog sat on a log.", Grid((0.5, 0.6, 0.7), (0.4,), (3,)))
    Logged.log.clear()
    prefetch = Prefetcher()
    assert prefetch.schedule(models, first)
    started = time.monotonic()
    while len(first.traces) < 3 and time.monotonic() - started < 120:
        time.sleep(0.02)
    with prefetch.foreground():  # the second visitor's run
        held = len(first.traces)
        assert held < first.total
    assert prefetch.schedule(models, second)
    assert prefetch.pending() == [second, first]
    assert (second.ahead, first.ahead) == (0, 1), "the earlier run's page says one grid is ahead of it"
    while first.missing() and time.monotonic() - started < 300:
        time.sleep(0.05)
    prefetch.stop()
    order = [prompt for prompt, _ in Logged.log[held - 1:]]
    assert order == [second.prompt] * 2 + [first.prompt] * (first.total - held), "the newer grid first, then the rest"
    assert not first.missing() and not second.missing() and prefetch.pending() == []
    assert first.ahead == 0


def test_a_release_is_told_the_runs_measured_pace() -> None:
    from core.trace import Trace

    def ran(seconds: float) -> Trace:
        trace = Trace(prompt=PROMPT, prompt_token_count=1, config=CONFIG.to_dict(), models={})
        trace.wall_s = seconds
        return trace

    grid = RunGrid(PROMPT, CONFIG, GRID, ("v", "d", "float32"))
    assert grid.pace_s() == 0.0
    grid.add(Point.of(CONFIG), ran(30.0))
    assert grid.pace_s() == 30.0, "before any other point: the run's own wall time"
    for point, seconds in zip(GRID.line(Point.of(CONFIG))[1:4], (2.0, 9.0, 4.0), strict=True):
        grid.add(point, ran(seconds))
    assert grid.pace_s() == 4.0, "then the median of the points computed after it"
    grid.recorded = {"recorded": "a sweep"}
    assert grid.pace_s() == 0.0, "a recorded grid has every point"


def test_clear_drops_the_queue_and_stops_the_job():
    """What the test suite calls between modules: nothing queued, nothing running after it."""
    prefetcher = Prefetcher()
    started = threading.Event()
    release = threading.Event()

    def slow_run(cancel):
        started.set()
        while not cancel.is_set():
            release.wait(0.01)

    prefetcher._run = slow_run  # a job that runs until it is cancelled
    prefetcher._pending = [(lambda: None, object())]
    prefetcher._thread = threading.Thread(target=prefetcher._run, args=(prefetcher._cancel,), daemon=True)
    prefetcher._thread.start()
    assert started.wait(5)
    prefetcher.clear()
    assert prefetcher.pending() == [] and not prefetcher.running()


def test_a_pages_reliability_is_measured_after_the_line_and_before_the_rest(bundle: ModelBundle, monkeypatch) -> None:
    """A browser page's run leaves its three teacher-forced passes to the background: after the τ_accept line in
    view, before the rest of the grid, once (app.streaming._reliability, app.late_reliability)."""
    from app import prefetch as module
    from app.grids import GridStore
    from app.late_reliability import LateReliability

    measured, real = [], module.measure_reliability

    def measure(bundle_, trace, config):
        measured.append(len(grid.traces))
        return real(bundle_, trace, config)

    monkeypatch.setattr(module, "measure_reliability", measure)
    models = fresh(bundle)
    grid = run_grid(models)
    store = GridStore()
    store._live[grid.key] = grid
    late = LateReliability(store)
    late.wait_for("page", grid)
    grid.reliability_later = True
    assert not grid.reliability_due() and late.arrived("page") is None, "the line comes first"
    prefetch = Prefetcher()
    assert prefetch.schedule(models, grid)
    started = time.monotonic()
    while grid.reliability is None and time.monotonic() - started < 120:
        time.sleep(0.02)
    while len(grid.traces) < 8 and time.monotonic() - started < 120:
        time.sleep(0.02)
    prefetch.stop()
    assert measured == [6], "measured once, right after the 6 notches of the line"
    assert grid.reliability is not None and len(grid.reliability) == len(grid.trace(Point.of(CONFIG)).tokens)
    assert late.arrived("page") is grid and late.arrived("page") is None, "the page receives it once"
    assert not late.waiting("page")
