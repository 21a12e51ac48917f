"""Recorded sweeps in the app: served with no model, encoded for the page and fed to it, bad files in one line.

A re-route to a recorded point is drawn from the recorded trace with no model (the session's bundle is never
asked for); the page data holds every point, and what arrives later arrives as a delta against the same tables.
A missing, corrupt or foreign sweep file gives one line and is left out; the app keeps everything else.
"""

from __future__ import annotations

import dataclasses
import gc
import gzip
import json
import shutil
import weakref

import pytest

from app import recorded, streaming
from app.grids import GRIDS, GridStore, RunGrid
from app.session import SESSIONS
from app.settings import Settings
from app.views.page_grid import FEED, PageFeed, page_json, page_of
from core.sweeps.grid import Point


@pytest.fixture(scope="module")
def opening() -> RunGrid:
    grid = recorded.load(recorded.OPENING)
    assert grid is not None, recorded.PROBLEMS
    return grid


def test_every_shipped_sweep_loads_and_is_pinned(opening) -> None:
    grids = recorded.load_all()
    assert {g.id for g in grids} <= {g.id for g in GRIDS.recorded()} and len(grids) >= 6, recorded.PROBLEMS
    assert not recorded.PROBLEMS
    total = sum(p.stat().st_size for p in recorded.SWEEPS.glob("*.sweep.json.gz"))
    assert total <= 5 * 2**20, f"shipped sweeps take {total / 2**20:.1f} MiB (at most 5 MiB)"
    for grid in grids:
        assert len(grid.traces) == grid.total and not grid.missing()


def test_a_recorded_point_is_served_with_no_model(opening, monkeypatch) -> None:
    def no_model(*args, **kwargs):
        raise AssertionError("a recorded point must not need a model")

    monkeypatch.setattr(SESSIONS, "bundle", no_model)
    base = next(iter(opening.traces.values()))
    target = Point(0.5, 1.0, opening.config.gamma)
    settings = Settings.of(target.apply(opening.config), opening.prompt)
    merged = streaming.drain(streaming.run(settings, "test-recorded", replay=True, phase="Re-routed",
                                           previous=base, models=tuple(opening.recorded["load"][k] or ""
                                                                       for k in ("verifier", "drafter"))))
    assert merged["trace"] is opening.traces[target.key]
    assert merged["status"].startswith("**Re-routed") and "recorded" in merged["status"]
    assert {"metrics", "timeline_plot", "breakeven_plot", "files", "why"} <= set(merged)


def test_a_point_the_page_holds_is_not_drawn_again_by_the_server(opening) -> None:
    """The page draws a point of its grid at the notch; the release's answer may land after a later notch, so it
    carries only what the page does not draw (cards, charts, files). A page without the grid gets everything."""
    base = next(iter(opening.traces.values()))
    target = Point(0.5, 1.0, opening.config.gamma)
    settings = Settings.of(target.apply(opening.config), opening.prompt)

    def answer(session: str) -> dict:
        return streaming.drain(streaming.run(settings, session, replay=True, phase="Re-routed", previous=base))

    FEED.page_opened("page-holding-it", opening)
    FEED.full("api-client", opening)  # an API client is sent the grid's data too, but it draws nothing
    held, bare, api = answer("page-holding-it"), answer("page-without-grid"), answer("api-client")
    assert not set(streaming.PAGE_DRAWN) & set(held), sorted(held)
    assert set(streaming.PAGE_DRAWN) <= set(bare) and set(streaming.PAGE_DRAWN) <= set(api)
    assert held["trace"] is bare["trace"] is opening.traces[target.key]
    assert {"metrics", "status", "files"} <= set(held)
    copy = recorded.run_grid(recorded.from_file(recorded.SWEEPS / f"{recorded.OPENING}.sweep.json.gz"))
    assert copy is not opening and FEED.holds("page-holding-it", copy, target.key), "the same grid, read again"
    FEED.full("page-holding-it", None)  # a new run cleared the page's grid: the server draws again
    assert set(streaming.PAGE_DRAWN) <= set(answer("page-holding-it"))


def test_outside_a_recorded_grid_the_app_asks_for_a_live_run(opening, monkeypatch) -> None:
    monkeypatch.setattr(SESSIONS, "bundle", lambda *a, **k: pytest.fail("no model may load for a slider"))
    base = next(iter(opening.traces.values()))
    settings = Settings.of(opening.config.with_(tau_accept=0.1), opening.prompt)
    models = (opening.recorded["load"]["verifier"], opening.recorded["load"]["drafter"])
    merged = streaming.drain(streaming.run(settings, "test-outside", replay=True, previous=base, models=models))
    assert "outside the recorded grid" in merged["status"] and "Run it live" in merged["status"]


def test_the_page_gets_every_point_then_deltas(opening) -> None:
    text, cursor = page_json(opening)
    data = json.loads(text)
    assert data["kind"] == "grid" and len(data["points"]) == opening.total == cursor.points
    assert set(data["axes"]) == {"a", "s", "g"} and data["recorded"] and data["base"] == next(iter(opening.traces))
    assert len(text) < 400_000, f"the opening's page data is {len(text)} bytes"
    grid = RunGrid(opening.prompt, opening.config, opening.grid, ("m", "d", "bf16"))
    keys = list(opening.traces)
    for key in keys[:3]:
        grid.traces[key] = opening.traces[key]
    store, feed = GridStore(), PageFeed()
    store.pin(grid)
    first = json.loads(feed.full("s", grid))
    assert list(first["points"]) == keys[:3]
    assert feed.more("s", store) == (None, True)
    grid.traces[keys[3]] = opening.traces[keys[3]]
    delta, coming = feed.more("s", store)
    delta = json.loads(delta)
    assert delta["kind"] == "more" and list(delta["points"]) == [keys[3]] and coming
    assert delta["texts_from"] == len(first["texts"]) and delta["kinds_from"] == len(first["kinds"])
    assert FEED.more("nobody", store) == (None, False)


def test_a_grid_the_store_drops_takes_its_page_encoding_with_it(opening) -> None:
    """Issue 23's soak: page encodings were kept by grid id for good, each holding its grid's traces, so every run a
    public app ever made stayed in memory. The store keeps `max_runs` live grids; an older one must be freed."""
    store, trace = GridStore(max_runs=2), next(iter(opening.traces.values()))
    grids = [store.for_trace(dataclasses.replace(trace, prompt=f"prompt {n}")) for n in range(3)]
    assert [page_of(g).grid for g in grids] == grids
    dropped = weakref.ref(grids[0])
    del grids[0]
    gc.collect()
    assert dropped() is None, "the dropped grid is still held (by its page encoding)"
    assert store.find("prompt 2", trace.config, grids[-1].models) is grids[-1]


def test_a_bad_sweep_file_gives_one_line_and_nothing_else_changes(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(recorded, "PROBLEMS", {})
    monkeypatch.setattr(recorded, "_loaded", {})
    shutil.copy(recorded.SWEEPS / f"{recorded.OPENING}.sweep.json.gz", tmp_path / "good.sweep.json.gz")
    (tmp_path / "broken.sweep.json.gz").write_bytes(b"\x1f\x8b not really")
    data = json.loads(gzip.decompress((tmp_path / "good.sweep.json.gz").read_bytes()))
    data["meta"]["models"]["verifier"]["sha256"] = "0" * 64
    (tmp_path / "foreign.sweep.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    grids = recorded.load_all(tmp_path)
    assert len(grids) == 1 and recorded.load("missing", tmp_path) is None
    assert set(recorded.PROBLEMS) == {"broken", "foreign", "missing"}
    assert "recorded for other verifier weights" in recorded.PROBLEMS["foreign"]
    line = recorded.problem_line()
    assert line.count("\n") == 0 and "run live instead" in line


def test_run_it_live_loads_the_drafter_setting_a_sweep_was_recorded_with(opening, monkeypatch) -> None:
    """Where this CPU loads the verifier in the recording's precision (bf16 on AMX), a live run of a recorded screen
    must differ from the recording in its wall clock only: the opening was recorded with the 0.5B's own weights
    (before drafter settings existed), while the pair now defaults to int4 there."""
    from types import SimpleNamespace

    from app import live_load
    from app.session import Sessions
    from core.models import precision
    from core.models.catalog import QWEN_CODER_05B_ID, QWEN_CODER_15B_ID

    monkeypatch.setattr(precision, "cpu_class", lambda *_, **__: "amx")
    assert recorded.precision_kept(opening.recorded)
    assert recorded.models_named(opening.recorded) == (QWEN_CODER_15B_ID, QWEN_CODER_05B_ID, "none")
    later = {**opening.recorded, "load_options": {"drafter_quant": "int8"}}
    assert recorded.models_named(later)[2] == "int8"
    smol = recorded.load(recorded.PRESETS["three-tier"])
    assert recorded.models_named(smol.recorded)[1:] == ("", "")
    assert live_load.wanted(QWEN_CODER_15B_ID, QWEN_CODER_05B_ID) == (QWEN_CODER_15B_ID, QWEN_CODER_05B_ID, "int4")

    loads = []

    def loader(verifier: str, drafter: str | None = None, drafter_quant: str | None = None, **_: object) -> object:
        loads.append(drafter_quant)
        return SimpleNamespace(verifier=SimpleNamespace(name=verifier), drafter=None)

    sessions = Sessions(loader)
    monkeypatch.setattr(live_load, "SESSIONS", sessions)
    sessions.choose("v", QWEN_CODER_15B_ID, QWEN_CODER_05B_ID)  # the pair's recommended: int4, by name
    sessions.choose("w", QWEN_CODER_15B_ID, QWEN_CODER_05B_ID, drafter_quant="int4")
    assert loads == ["int4"], "the recommended setting and int4 by name are one copy of the pair"
    wanted = live_load.wanted(*recorded.models_named(opening.recorded))
    assert not live_load.loaded_for("v", wanted), "int4 is loaded, the recording ran the drafter's own weights"
    list(live_load.ensure("v", wanted))
    assert loads == ["int4", "none"] and live_load.loaded_for("v", wanted)


@pytest.mark.parametrize(("cpu", "drafter"), [("avx2", "w8a8"), ("avx512", "w8a8"), ("avx512-bf16", "int4")])
def test_where_the_numerics_change_anyway_the_pair_loads_in_this_cpus_formats(opening, monkeypatch, cpu, drafter):
    """On a CPU whose verifier precision differs from the recording's (an int8 verifier in float32), the recording's
    bf16 drafter setting would mean the 0.5B in float32, slower than its verifier: the drafter takes this CPU's
    recommended format, and the screen's source line says the numerics change."""
    from app import live_load
    from app.views.recording_line import live_change
    from core.models import precision

    monkeypatch.setattr(precision, "cpu_class", lambda *_, **__: cpu)
    assert not recorded.precision_kept(opening.recorded)
    verifier, drafter_name, setting = recorded.models_named(opening.recorded)
    assert setting == "", "the pair's recommended setting here, not the recording's"
    assert live_load.wanted(verifier, drafter_name, setting)[2] == drafter
    assert "float32 int8" in live_change(opening.recorded) and "numerics" in live_change(opening.recorded)


def test_the_screen_says_which_via_sd_a_sweep_shows_from_its_stamped_policy(opening) -> None:
    from app.views.page_grid import kind_of

    assert kind_of(opening).startswith("The paper's VIA-SD: tier 1 keeps drafts unchecked")
    assert not next(iter(opening.traces.values())).policy.audits
    lookup = recorded.load(recorded.PRESETS["lookup"])
    assert next(iter(lookup.traces.values())).policy.audits
    assert kind_of(lookup).startswith("Exact: what tier 1 keeps is audited")
    assert json.loads(page_json(opening)[0])["label"] == kind_of(opening)
