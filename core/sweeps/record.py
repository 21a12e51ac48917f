"""A recorded sweep: compute it, write it, read it back and say whether it still fits the models.

`record` runs the prompt live once at the run's own point (real timing), measures the full model's plain
greedy output once (the fidelity reference, timed: plain decoding's tokens/s on this machine), then
re-routes the run to every other grid point through the memo, nearest first. Fidelity is measured with
the memo bypassed, so the memo holds nothing but decoding passes and a fresh re-route in the same order
reproduces every point to the last bit (`tests/tools/test_record_sweep.py`). A file holds the traces
(identical ones once), the point -> trace map, the order, the reliability data of the live text, and
what it was recorded with: models (with the hash of their source weights), dtype, cost profile, machine,
date and command. Files are gzip-compressed JSON (`*.sweep.json.gz`).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.analysis.expectations import Expectations
from core.analysis.fidelity import attach_fidelity, greedy_reference
from core.analysis.reliability import ModelSignals, ReliabilityData, measure
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.errors import ViaSdError, shown
from core.models.catalog import WHEEL_MODELS
from core.models.loading import LoadedModel, ModelBundle
from core.models.prompting import encode_prompt
from core.sweeps.codec import VOCABULARIES, Reader, Writer, decisions
from core.sweeps.grid import Grid, Point
from core.trace import Trace
from core.vocabulary import DraftKind

FORMAT = "viasd-sweep/1"
SUFFIX = ".sweep.json.gz"


class SweepFileError(ViaSdError):
    """A sweep file that is missing, unreadable, of another format or recorded for other models."""


@dataclass
class Sweep:
    """One prompt's grid of runs: the traces by point, the order they were computed in, and how."""

    prompt: str
    config: DecodeConfig  # the live run's settings; a point changes τ_accept, τ_slim and γ only
    grid: Grid
    traces: dict[str, Trace]  # point key -> its run
    order: list[str]  # point keys in the order they were computed (the first is the live run)
    meta: dict[str, Any] = field(default_factory=dict)  # models, dtype, profile, machine, date, command, timings
    reliability: ReliabilityData | None = None  # teacher-forced signals of the live run's text

    @property
    def base(self) -> Point:
        return Point.of(self.config)

    def trace(self, point: Point) -> Trace | None:
        return self.traces.get(point.key)

    @property
    def load_options(self) -> dict[str, Any]:
        return recorded_load_options(self.meta)


def recorded_load_options(meta: dict[str, Any]) -> dict[str, Any]:
    """The load_bundle options a sweep was recorded with, the drafter's setting always named: a file written
    before drafter settings existed ran the drafter's own weights ("none"), whatever a pair's default is now."""
    options = dict(meta.get("load_options") or {})
    if (meta.get("load") or {}).get("drafter"):
        options.setdefault("drafter_quant", "none")
    return options


def model_identity(loaded: LoadedModel | None) -> dict[str, Any] | None:
    """Name, the sha256 of its source weights (the catalog's GGUF hash for an offline model), dtype and size."""
    if loaded is None:
        return None
    source = WHEEL_MODELS.get(loaded.name)
    params = sum(p.numel() for p in loaded.model.parameters())
    return {"name": loaded.name, "sha256": source.gguf_sha256 if source else None,
            "dtype": str(loaded.dtype).replace("torch.", ""), "params": int(params)}


def machine() -> dict[str, Any]:
    """The machine a sweep was recorded on (the wall clock is its; nothing else depends on it)."""
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    if torch.cuda.is_available():
        cpu = torch.cuda.get_device_name(0)
    return {"processor": cpu, "cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}


def record(bundle: ModelBundle, prompt: str, config: DecodeConfig, grid: Grid,
           expectations: Expectations | None = None,
           on_point: Callable[[Point, Trace, float], None] | None = None) -> Sweep:
    """Run `prompt` live at `config`'s point, then re-route it to every other grid point (module docstring)."""
    base = Point.of(config)
    if base not in grid.points():
        raise ViaSdError(f"the run's own point {base.key} is not on the grid")
    started = time.perf_counter()
    live = generate(bundle, prompt, base.apply(config), replay=False)
    clock = time.perf_counter()
    prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt, config.chat_template)
    reference = greedy_reference(bundle, prompt_ids, config.max_new_tokens, use_memo=False)
    plain_s = time.perf_counter() - clock
    measured: dict[tuple, Any] = {}

    def measure_fidelity(trace: Trace) -> None:
        key = tuple(trace.token_ids)
        if key not in measured:
            measured[key] = attach_fidelity(bundle, trace, reference, use_memo=False, expectations=expectations)
        trace.fidelity = measured[key]

    measure_fidelity(live)
    traces, order = {base.key: live}, [base.key]
    if on_point is not None:
        on_point(base, live, time.perf_counter() - started)
    for point in grid.nearest_first(base):
        if point.key in traces:
            continue
        clock = time.perf_counter()
        trace = generate(bundle, prompt, point.apply(config))
        measure_fidelity(trace)
        traces[point.key] = trace
        order.append(point.key)
        if on_point is not None:
            on_point(point, trace, time.perf_counter() - clock)
    meta = {"models": {"verifier": model_identity(bundle.verifier), "drafter": model_identity(bundle.drafter)},
            "dtype": live.models.get("dtype"), "device": live.models.get("device"),
            "cost_profile": live.cost_profile, "cost_label": live.cost_label, "machine": machine(),
            "live": {"tokens": len(live.tokens), "wall_s": round(live.wall_s, 4)},
            "plain": {"tokens": len(reference), "wall_s": round(plain_s, 4)},
            "memo_bytes": getattr(bundle.memo, "max_bytes", None), "seconds": round(time.perf_counter() - started, 1)}
    return Sweep(prompt, config, grid, traces, order, meta, measure(bundle, prompt, config, live.token_ids))


def to_file(sweep: Sweep, path: Path | str) -> Path:
    """Write `sweep` to `path` (gzip JSON); identical runs are stored once."""
    writer, stored, index, points = Writer(), [], {}, {}
    for key in sweep.order:
        trace = sweep.traces[key]
        same = json.dumps(decisions(trace), sort_keys=True)
        if same not in index:
            index[same] = len(stored)
            stored.append(writer.trace(trace))
        points[key] = index[same]
    first = sweep.traces[sweep.order[0]]
    data = {"format": FORMAT, "prompt": sweep.prompt, "config": sweep.config.to_dict(), "grid": sweep.grid.to_dict(),
            "meta": sweep.meta, "trace_models": first.models, "vocabularies": VOCABULARIES, "texts": writer.texts,
            "order": sweep.order, "points": points, "traces": stored,
            "reliability": _reliability_to_dict(sweep.reliability)}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0))
    return path


def from_file(path: Path | str) -> Sweep:
    """Read a sweep file; a missing, corrupt or foreign file raises SweepFileError with one line."""
    path = Path(path)
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except FileNotFoundError:
        raise SweepFileError(f"no sweep file at {path}") from None
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
        raise SweepFileError(f"sweep file {path.name} is not readable ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SweepFileError(f"sweep file {path.name} is not a {FORMAT} file")
    try:
        config = DecodeConfig.from_dict(data["config"]).validate()
        reader = Reader(data["texts"], data["vocabularies"])
        stored = data["traces"]
        traces = {}
        for key, index in data["points"].items():
            a, s, g = key.split("|")
            point_config = Point(float(a), float(s), int(g)).apply(config)
            traces[key] = reader.trace(stored[index], data["prompt"], point_config, data["trace_models"])
        sweep = Sweep(data["prompt"], config, Grid.from_dict(data["grid"]), traces, list(data["order"]),
                      data["meta"], _reliability_from_dict(data.get("reliability"), config))
    except (KeyError, IndexError, TypeError, ValueError, ViaSdError) as exc:
        raise SweepFileError(f"sweep file {path.name} is corrupt: {shown(str(exc), 120)}") from None
    if sweep.order[0] not in traces or set(sweep.order) != set(traces):
        raise SweepFileError(f"sweep file {path.name} is corrupt: its order does not list its points")
    return sweep


def models_problem(sweep: Sweep, catalog: dict = WHEEL_MODELS) -> str | None:
    """Why the sweep no longer describes the models this code loads (one line), or None when it does: an offline
    model's source weights must carry the hash the catalog gives them now."""
    for role, model in (sweep.meta.get("models") or {}).items():
        if not model:
            continue
        known = catalog.get(model.get("name"))
        if known is not None and known.gguf_sha256 != model.get("sha256"):
            return (f"recorded for other {role} weights ({model['name']} sha256 {str(model.get('sha256'))[:12]}…, "
                    f"the catalog has {known.gguf_sha256[:12]}…)")
    return None


def _signals_to_dict(s: ModelSignals) -> dict:
    return {"choice": s.choice.tolist(), "agree": s.agree.tolist(), "drafted": s.drafted.tolist(),
            "copy": s.copy.tolist(),
            "confidence": {k: np.round(v.astype(float), 6).tolist() for k, v in s.confidence.items()}}


def _signals_from_dict(d: dict, copies: bool = False) -> ModelSignals:
    """`copies`: for a file written before signals recorded which positions were copies, whether they all were
    (a prompt-lookup drafter's)."""
    drafted = np.array(d["drafted"], dtype=bool)
    copy = np.array(d["copy"], dtype=bool) if "copy" in d else drafted & copies
    return ModelSignals(choice=np.array(d["choice"], dtype=np.int64), agree=np.array(d["agree"], dtype=bool),
                        drafted=drafted, copy=copy,
                        confidence={k: np.array(v, dtype=np.float64) for k, v in d["confidence"].items()})


def _reliability_to_dict(data: ReliabilityData | None) -> dict | None:
    if data is None:
        return None
    return {"drafter": _signals_to_dict(data.drafter), "slim": _signals_to_dict(data.slim),
            "full_choice": data.full_choice.tolist(), "stop": data.stop.tolist(), "drafter_name": data.drafter_name,
            "slim_route": data.slim_route, "costs": data.costs,
            "slim_agreement": None if data.slim_agreement is None else np.round(data.slim_agreement, 6).tolist()}


def _reliability_from_dict(d: dict | None, config: DecodeConfig) -> ReliabilityData | None:
    if not d:
        return None
    agreement = d.get("slim_agreement")
    return ReliabilityData(
        drafter=_signals_from_dict(d["drafter"], config.policy.drafts is DraftKind.COPY),
        slim=_signals_from_dict(d["slim"]),
        full_choice=np.array(d["full_choice"], dtype=np.int64), stop=np.array(d["stop"], dtype=bool),
        drafter_name=d["drafter_name"], slim_route=d["slim_route"], costs=dict(d["costs"]),
        slim_agreement=None if agreement is None else np.array(agreement, dtype=np.float64), config=config)
