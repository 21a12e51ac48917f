"""Plain decoding's measured pace on this machine, so a run's measured speed-up can stand beside its modelled one.

A run's wall clock means something only against plain decoding's on the same verifier, precision, device and thread
count (`PaceKey`, read from the trace's stamped model description). Plain's pace is kept per key (`PaceRecord`), fed
by every plain decoding that runs anyway (a plain run, the fidelity reference's plain decode) and, when none ran yet,
by a short timed probe on the run's own prompt (`probe`: the prompt's pass and a few one-token passes), or, in
the app, on a fixed text before a model's first drafting run (`warm_up`).

Definition (one place): the measured speed-up here is plain's seconds per token over the run's, both counted after
their first round (`decode_pace`). The first round holds the prompt's pass, which a probe of four tokens and a run of
ninety-six would weigh very differently; `python -m core --mode all` compares whole runs of one prompt instead
(core.analysis.metrics.measured_speedup), where the prompt's pass is the same on both sides.
A pace exists only where every pass of the run ran here: a prediction replayed from the memo has no wall time.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

import torch

from core.config import DecodeConfig
from core.decoding.engine import generate
from core.models.loading import ModelBundle
from core.trace import Trace

PROBE_TOKENS = 4
"""One-token passes a probe times after the prompt's pass: enough to see the pace, cheap on any CPU."""


@dataclass(frozen=True)
class PaceKey:
    """What plain decoding's pace depends on: the verifier, its precision, the device and torch's thread count."""

    verifier: str
    dtype: str
    quant: str
    device: str
    threads: int | None

    @classmethod
    def of_bundle(cls, bundle: ModelBundle) -> PaceKey:
        """The key a run of `bundle` would stamp now (the same fields as core.decoding.engine.models_info)."""
        verifier = bundle.verifier
        return cls(verifier.name, str(verifier.dtype).replace("torch.", ""), verifier.verifier_quant,
                   str(verifier.device), torch.get_num_threads())

    @classmethod
    def of(cls, models: dict) -> PaceKey:
        """The key of a trace's model description (`Trace.models`, stamped by the engine)."""
        return cls(str(models.get("verifier")), str(models.get("dtype")), str(models.get("verifier_quant", "none")),
                   str(models.get("device")), models.get("threads"))


@dataclass(frozen=True)
class Pace:
    """Plain decoding's measured seconds per token (after its first round), over how many tokens, from where."""

    seconds_per_token: float
    tokens: int
    source: str  # "a plain run", "the plain reference decode", "a 4-token plain probe"


def timing_complete(trace: Trace) -> bool:
    """Every pass ran here (none replayed from the memo): the one test, as core.analysis.metrics counts it."""
    return not any(c.from_memo for r in trace.rounds for c in r.calls)


def decode_pace(trace: Trace) -> tuple[float, int] | None:
    """(seconds per token, tokens) after the run's first round; None where a pass was replayed, nothing was timed,
    or no token came after the first round."""
    if len(trace.rounds) < 2 or not timing_complete(trace):
        return None
    tokens = len(trace.tokens) - trace.rounds[0].emitted
    seconds = trace.wall_s - trace.rounds[0].wall_s
    return (seconds / tokens, tokens) if tokens > 0 and seconds > 0 else None


class PaceRecord:
    """Plain's latest measured pace per `PaceKey`, in this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paces: dict[PaceKey, Pace] = {}

    def note(self, trace: Trace, source: str = "a plain run") -> Pace | None:
        """Keep the pace of a finished plain run whose every pass ran here (anything else: ignored, None)."""
        if trace.config.mode != "plain" or trace.partial:
            return None
        found = decode_pace(trace)
        if found is None:
            return None
        pace = Pace(found[0], found[1], source)
        with self._lock:
            self._paces[PaceKey.of(trace.models)] = pace
        return pace

    def get(self, models: dict) -> Pace | None:
        with self._lock:
            return self._paces.get(PaceKey.of(models))

    def known_for(self, bundle: ModelBundle) -> bool:
        """Whether plain's pace is known for a run of `bundle` at this thread count."""
        with self._lock:
            return PaceKey.of_bundle(bundle) in self._paces

    def put(self, models: dict, pace: Pace) -> None:
        with self._lock:
            self._paces[PaceKey.of(models)] = pace

    def clear(self) -> None:
        with self._lock:
            self._paces.clear()


PLAIN_PACES = PaceRecord()


def probe(bundle: ModelBundle, trace: Trace, tokens: int = PROBE_TOKENS,
          record: PaceRecord = PLAIN_PACES) -> tuple[Pace | None, float]:
    """Time plain decoding on `trace`'s prompt and bundle: its prompt's pass, then `tokens` one-token passes, every
    pass run (no memo). Returns (the pace it noted, or None; its cost in seconds, the prompt's pass included)."""
    config = trace.config.with_(mode="plain", temperature=0.0, max_new_tokens=tokens + 1)
    started = time.perf_counter()
    plain = generate(bundle, trace.prompt, config, replay=False)
    cost = time.perf_counter() - started
    return record.note(plain, f"a {tokens}-token plain probe on this prompt, {cost:.1f} s"), cost


WARM_UP_PROMPT = "Count from one to ten."
"""The text `warm_up` decodes: not the visitor's, whose plain rows in the memo would make the run's first
verification a replay (no wall time, so no measured pace for that run)."""


def warm_up(bundle: ModelBundle, tokens: int = PROBE_TOKENS, record: PaceRecord = PLAIN_PACES) -> Pace | None:
    """A `probe` before a bundle's first drafting run instead of after it: the app runs this when a model is first
    used, so the run's measured speed-up has plain's pace at once and the seconds after Done go to the trade-off
    (app.streaming). The model's first passes (kernel set-up, first touch of its weights) land here too, not in the
    visitor's timed run, as `python -m core` warms up before it times."""
    config = DecodeConfig(mode="plain", temperature=0.0, max_new_tokens=tokens + 1)
    started = time.perf_counter()
    plain = generate(bundle, WARM_UP_PROMPT, config, replay=False)
    return record.note(plain, f"a {tokens}-token plain probe when the model was first used, "
                              f"{time.perf_counter() - started:.1f} s")


@dataclass(frozen=True)
class PassCost:
    """A kind of pass of the run, priced two ways in plain one-token steps: measured here and by the cost model."""

    role: str  # "full", "slim" or "drafter"
    tokens: int  # typical tokens processed per pass (median)
    here: float  # mean wall time / plain's seconds per token
    modelled: float  # mean cost units (the run's profile)


@dataclass(frozen=True)
class Measured:
    """A run's measured speed-up over plain decoding here, and what its passes cost here against the model."""

    speedup: float
    run_s_per_token: float
    pace: Pace
    passes: tuple[PassCost, ...]

    @property
    def contradicts(self) -> bool:
        """The model promised a gain the clock did not show (caller compares with the modelled speed-up)."""
        return self.speedup < 1.0


def measured_speedup_here(trace: Trace, pace: Pace | None) -> Measured | None:
    """Plain's seconds per token over the run's (see the module docstring); None without a pace or where a pass of
    the run was replayed from the memo."""
    mine = decode_pace(trace)
    if pace is None or mine is None:
        return None
    return Measured(pace.seconds_per_token / mine[0], mine[0], pace, pass_costs(trace, pace.seconds_per_token))


def pass_costs(trace: Trace, plain_s: float) -> tuple[PassCost, ...]:
    """Each kind of pass after the prompt's (the full verifier's multi-token verifications, the slim verifier's,
    the drafter's), its measured cost here and its modelled price, in plain one-token steps; the costliest
    excess over the model first."""
    calls = [c for r in trace.rounds for c in r.calls if not c.prefill and not c.from_memo]
    out = []
    for role in ("full", "slim", "drafter"):
        mine = [c for c in calls if c.role == role and (role != "full" or c.tokens_processed > 1)]
        if mine and plain_s > 0:
            out.append(PassCost(role, int(statistics.median(c.tokens_processed for c in mine)),
                                statistics.fmean(c.wall_s for c in mine) / plain_s,
                                statistics.fmean(c.cost_units for c in mine)))
    return tuple(sorted(out, key=lambda p: p.modelled - p.here))


ROLE_WORDS = {"full": "verification", "slim": "slim-verifier pass", "drafter": "drafter pass"}


def slower_because(trace: Trace, measured: Measured) -> str:
    """Why the clock disagrees with the model, from this run's own passes: 'a 6-token verification costs 2.7
    one-token passes here (float32 on AVX2); the model assumes 1.0; a drafter pass 0.35 (assumed 0.27)'."""
    models = trace.models
    where = f"{models.get('dtype', '?')} on {str(models.get('cpu_class') or models.get('device', '?')).upper()}"
    parts = []
    for p in measured.passes:
        size = f"a {p.tokens}-token {ROLE_WORDS[p.role]}" if p.role == "full" else f"a {ROLE_WORDS[p.role]}"
        parts.append(f"{size} costs {p.here:.1f} one-token passes here ({where}), the model assumes {p.modelled:.1f}"
                     if not parts else f"{size} {p.here:.2f} (assumed {p.modelled:.2f})")
    return "; ".join(parts) if parts else "the run's passes cost more here than the model assumes"
