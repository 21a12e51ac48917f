"""Recorded sweeps: every point is a real re-route, a file reads back as written, and bad files say so in one line.

On tiny random models (fp32) a recorded point equals a fresh re-route at its thresholds: a fresh bundle runs
the live point, then goes straight to that point (every decision equal, confidences within 1e-5). The shipped
sweeps are checked the same way on the embedded SmolLM2 always (with their words differing measured afresh;
confidences within 1e-4, since another CPU's fp32 kernels differ in the fifth decimal),
and on the Qwen2.5-Coder pair under VIASD_REAL_PAIR=1 (in bf16, to the last bit, replaying the recorded order,
since a half-precision memo row depends on the batch that first computed it).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from core import DecodeConfig, attach_fidelity, generate, load_bundle
from core.analysis.fidelity import reference_continuation
from core.analysis.metrics import summarize
from core.sweeps.codec import decisions, same_run
from core.sweeps.grid import Grid, Point, default_grid, in_order
from core.sweeps.record import SweepFileError, from_file, models_problem, record, to_file
from examples import expectations_for
from tests.tiny import tiny_bundle

CONFIG = DecodeConfig(max_new_tokens=24, gamma=4, chat_template=False, draft_route="skip-middle-50",
                      slim_route="skip-middle-25", tau_accept=0.8, tau_slim=0.5)
GRID = Grid((0.3, 0.5, 0.8, 0.95), (0.5, 0.2, 1.0), (3, 4))
PROMPT = "the cat sat on the mat. the cat sat"
SWEEPS = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
FP32 = 1e-5
"""fp32 confidences of a memo row computed in another batch shape differ in their last bits (about 1e-6)."""
OTHER_MACHINE = 1e-4
"""A shipped sweep was recorded on another CPU, whose fp32 kernels differ: the sweeps made on an AMD EPYC, re-routed
on an AVX-512 Intel Xeon limited to AVX2 (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2), took every decision
alike with SmolLM2's confidences up to 1.3e-5 apart (CI failed on 1e-5). Decisions stay exact."""


def _bundle():
    return tiny_bundle("llama", layers=6, middle_scale=0.1, avoid_eos=True)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    sweep = record(_bundle(), PROMPT, CONFIG, GRID)
    path = to_file(sweep, tmp_path_factory.mktemp("sweeps") / "tiny.sweep.json.gz")
    return sweep, path


def test_a_sweep_holds_every_grid_point_computed_nearest_first(recorded) -> None:
    sweep, _ = recorded
    assert sweep.order[0] == Point.of(CONFIG).key and set(sweep.order) == {p.key for p in GRID.points()}
    assert sweep.order == [p.key for p in GRID.nearest_first(Point.of(CONFIG))]
    for key, trace in sweep.traces.items():
        point = Point(*(float(v) for v in key.split("|")[:2]), int(key.split("|")[2]))
        assert (trace.config.tau_accept, trace.config.tau_slim, trace.config.gamma) == (
            point.tau_accept, point.tau_slim, point.gamma)
        assert trace.fidelity is not None and len(trace.tokens) == CONFIG.max_new_tokens
    live = sweep.traces[sweep.order[0]]
    assert summarize(live)["timing_complete"], "the live point ran every pass for real"
    assert sweep.meta["plain"]["tokens"] == CONFIG.max_new_tokens and sweep.meta["plain"]["wall_s"] > 0
    speeds = {round(summarize(t)["modelled_speedup"], 4) for t in sweep.traces.values()}
    assert len(speeds) > 2, "the grid's points differ (else this test proves nothing)"


def test_a_file_reads_back_as_written(recorded) -> None:
    sweep, path = recorded
    back = from_file(path)
    assert back.order == sweep.order and back.grid == GRID and back.config == CONFIG
    for key, trace in sweep.traces.items():
        assert decisions(back.traces[key]) == decisions(trace), key
        assert back.traces[key].text == trace.text and back.traces[key].fidelity == trace.fidelity
    assert back.reliability is not None and len(back.reliability) == len(sweep.reliability)
    stored = json.loads(gzip.decompress(path.read_bytes()))
    assert len(stored["traces"]) < len(stored["points"]), "identical runs are stored once"


@pytest.mark.parametrize("which", [1, -1])
def test_a_recorded_point_equals_a_fresh_re_route(recorded, which: int) -> None:
    sweep, path = recorded
    key = from_file(path).order[which]
    bundle = _bundle()
    generate(bundle, PROMPT, CONFIG, replay=False)  # the live run, then straight to the point
    a, s, g = key.split("|")
    fresh = generate(bundle, PROMPT, Point(float(a), float(s), int(g)).apply(CONFIG))
    assert same_run(fresh, from_file(path).traces[key], tolerance=FP32)


def test_bad_files_say_what_is_wrong_in_one_line(recorded, tmp_path) -> None:
    _, path = recorded
    (tmp_path / "junk.sweep.json.gz").write_bytes(b"not gzip")
    (tmp_path / "other.sweep.json.gz").write_bytes(gzip.compress(json.dumps({"format": "x"}).encode()))
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["points"][next(iter(data["points"]))] = 999
    (tmp_path / "cut.sweep.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    for name, words in (("missing", "no sweep file"), ("junk", "not readable"), ("other", "not a viasd-sweep"),
                        ("cut", "corrupt")):
        with pytest.raises(SweepFileError) as caught:
            from_file(tmp_path / f"{name}.sweep.json.gz")
        assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_sweep_of_other_weights_is_named() -> None:
    class Known:
        gguf_sha256 = "b" * 64

    sweep = type("S", (), {"meta": {"models": {"verifier": {"name": "m", "sha256": "a" * 64}, "drafter": None}}})
    assert models_problem(sweep, {"m": Known}).startswith("recorded for other verifier weights")
    Known.gguf_sha256 = "a" * 64
    assert models_problem(sweep, {"m": Known}) is None


def test_points_are_in_order_and_snap_to_the_nearest_grid_value() -> None:
    grid = default_grid(DecodeConfig(gamma=6, tau_accept=0.9, tau_slim=1.0), calibrated_slim=0.575)
    assert grid.tau_slim == (0.4, 0.575, 1.0) and grid.gamma == (4, 6, 8) and grid.tau_accept[0] == 0.3
    assert all(p.tau_slim <= p.tau_accept or p.tau_slim == 1.0 for p in grid.points())
    assert in_order(0.5, 0.575) == (0.5, 0.5) and in_order(0.5, 1.0) == (0.5, 1.0)
    assert grid.snap(0.5, 0.55, 5) == Point(0.5, 0.5, 6)  # τ_slim 0.575 taken down to τ_accept; γ tie: larger
    assert grid.snap(0.9, 0.6, 8) == Point(0.9, 0.575, 8)
    assert grid.snap(0.25, 1.0, 6) is None and grid.snap(0.9, 0.2, 6) is None and grid.snap(0.9, 1.0, 12) is None
    # τ_slim taken along by τ_accept (equal to it) is that notch, even below or between τ_slim's own values
    assert grid.snap(0.35, 0.35, 6) == Point(0.35, 0.35, 6) and grid.snap(0.45, 0.45, 6) == Point(0.45, 0.45, 6)
    for at in (Point(0.9, 0.575, 6), Point(0.6, 0.4, 4), Point(0.8, 1.0, 8)):  # what the line computes is what
        assert all(grid.snap(p.tau_accept, p.tau_slim, p.gamma) == p for p in grid.line(at))  # its notch shows
    first = grid.nearest_first(Point(0.9, 1.0, 6))
    assert first[0] == Point(0.9, 1.0, 6) and {p.tau_accept for p in first[1:3]} == {0.85, 0.95}
    assert len(first) == len(set(first)) == len(grid.points())


def _shipped(prefix: str) -> list[Path]:
    return sorted(SWEEPS.glob(f"{prefix}*.sweep.json.gz"))


@pytest.mark.embedded  # the real SmolLM2, run live
@pytest.mark.parametrize("path", _shipped("smollm2"), ids=lambda p: p.name)
def test_a_shipped_smollm2_point_equals_a_fresh_re_route(path: Path) -> None:
    sweep = from_file(path)
    bundle = load_bundle()
    live = generate(bundle, sweep.prompt, sweep.config, replay=False)
    reference = reference_continuation(bundle, live, use_memo=False)  # one prompt, one plain run for every point
    for key in (sweep.order[1], sweep.order[len(sweep.order) // 2], sweep.order[-1]):
        a, s, g = key.split("|")
        fresh = generate(bundle, sweep.prompt, Point(float(a), float(s), int(g)).apply(sweep.config))
        assert same_run(fresh, sweep.traces[key], tolerance=OTHER_MACHINE), key
        recorded = sweep.traces[key].fidelity  # the card's words differing, measured afresh
        measured = attach_fidelity(bundle, fresh, reference, use_memo=False,
                                   expectations=expectations_for(sweep.prompt))
        assert (measured.words_differing, measured.identical, measured.common_prefix) == (
            recorded.words_differing, recorded.identical, recorded.common_prefix), key
        assert summarize(fresh)["modelled_speedup"] == pytest.approx(summarize(sweep.traces[key])["modelled_speedup"])


@pytest.mark.real_pair
@pytest.mark.skipif(os.environ.get("VIASD_REAL_PAIR") != "1", reason="opt-in: set VIASD_REAL_PAIR=1")
@pytest.mark.parametrize("path", _shipped("qwen2.5-coder"), ids=lambda p: p.name)
def test_a_shipped_pair_point_equals_a_fresh_re_route(path: Path) -> None:
    sweep = from_file(path)
    load = sweep.meta["load"]
    bundle = load_bundle(load["verifier"], load["drafter"], dtype=load["dtype"], **sweep.load_options)
    generate(bundle, sweep.prompt, sweep.config, replay=False)
    for key in sweep.order[1:4]:  # bf16: the recorded order, so every memo row comes from the same pass
        a, s, g = key.split("|")
        fresh = generate(bundle, sweep.prompt, Point(float(a), float(s), int(g)).apply(sweep.config))
        assert same_run(fresh, sweep.traces[key]), key  # to the last bit: the same passes in the same order


def test_the_shipped_specs_name_what_each_file_was_recorded_with() -> None:
    """`record_sweep --all` regenerates the shipped files: each spec's settings and drafter setting are the file's."""
    from core.sweeps.record import recorded_load_options
    from core.tools.record_sweep import SHIPPED

    for spec in SHIPPED:
        sweep = from_file(spec.path)
        assert sweep.config == spec.config, spec.name
        options = recorded_load_options({"load": spec.models, "load_options": spec.load_options})
        assert sweep.load_options == options, spec.name
