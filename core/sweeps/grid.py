"""Which threshold points a sweep holds, the order they are computed in, and how a slider value finds one.

A grid is three axes: τ_accept in slider notches, the τ_slim values that matter (tier 2 off, the calibrated
value, one lower) and γ at two or three values. A point pairs them in order: τ_slim never exceeds τ_accept
unless it is 1.0 (tier 2 off), so where a τ_slim value lies above τ_accept the point takes it down to τ_accept,
the same rule the sliders follow (`in_order`). Points are computed nearest first from the run's own point, so
what a visitor reaches first is ready first. A slider value between grid values snaps to the nearest one; a
value outside an axis has no point (the app then runs the engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import DecodeConfig
from core.limits import MAX_GAMMA
from core.round_policy import OFF, switched_off

STEP = 0.05
"""The threshold sliders' notch."""


def in_order(tau_accept: float, tau_slim: float) -> tuple[float, float]:
    """The pair with τ_slim taken down to τ_accept where it lies above it (tier 2 off, 1.0, goes with any τ_accept)."""
    tau_accept, tau_slim = round(float(tau_accept), 4), round(float(tau_slim), 4)
    return tau_accept, tau_slim if switched_off(tau_slim) else min(tau_slim, tau_accept)


@dataclass(frozen=True, order=True)
class Point:
    """One setting of the three live sliders, in order (`in_order`)."""

    tau_accept: float
    tau_slim: float
    gamma: int

    @property
    def key(self) -> str:
        """The point's name in files and in the page: '0.85|1|6'."""
        return f"{self.tau_accept:g}|{self.tau_slim:g}|{self.gamma:d}"

    @classmethod
    def of(cls, config: DecodeConfig) -> Point:
        return cls(*in_order(config.tau_accept, config.tau_slim), int(config.gamma))

    def apply(self, config: DecodeConfig) -> DecodeConfig:
        return config.with_(tau_accept=self.tau_accept, tau_slim=self.tau_slim, gamma=self.gamma)


def _nearest(values: tuple, value: float) -> float | int | None:
    """The axis value nearest `value` (ties to the larger), or None when `value` lies outside the axis."""
    if not values or value < min(values) - 1e-9 or value > max(values) + 1e-9:
        return None
    return min(values, key=lambda v: (abs(v - value), -v))


@dataclass(frozen=True)
class Grid:
    """The three axes of a sweep (each sorted, no repeats)."""

    tau_accept: tuple[float, ...]
    tau_slim: tuple[float, ...]
    gamma: tuple[int, ...]

    def __post_init__(self) -> None:
        for name, cast in (("tau_accept", float), ("tau_slim", float), ("gamma", int)):
            values = sorted({round(cast(v), 4) if cast is float else int(v) for v in getattr(self, name)})
            object.__setattr__(self, name, tuple(values))

    def points(self) -> list[Point]:
        """Every distinct point, τ_slim taken down to τ_accept where it lies above it."""
        found = {Point(*in_order(a, s), g) for a in self.tau_accept for s in self.tau_slim for g in self.gamma}
        return sorted(found)

    def nearest_first(self, start: Point) -> list[Point]:
        """Every point, nearest `start` first, in grid steps (τ_accept notches, τ_slim values, γ values);
        ties: a τ_accept move first, then γ, then τ_slim."""
        def steps(axis: tuple, a: float, b: float) -> int:
            near_a, near_b = _nearest(axis, a), _nearest(axis, b)
            return abs(axis.index(near_a) - axis.index(near_b)) if None not in (near_a, near_b) else len(axis)

        def distance(p: Point) -> tuple:
            da = round(abs(p.tau_accept - start.tau_accept) / STEP)
            dg, ds = steps(self.gamma, p.gamma, start.gamma), steps(self.tau_slim, p.tau_slim, start.tau_slim)
            return da + dg + ds, ds, dg, p
        return sorted(self.points(), key=distance)

    def line(self, at: Point) -> list[Point]:
        """The τ_accept slider's line at `at`'s τ_slim and γ (each notch's point, as the sliders would snap it),
        nearest `at`'s τ_accept first (ties: the higher notch); empty when τ_slim or γ lies outside its axis."""
        found = {self.snap(a, at.tau_slim, at.gamma) for a in self.tau_accept}
        found.discard(None)
        return sorted(found, key=lambda p: (round(abs(p.tau_accept - at.tau_accept), 6), -p.tau_accept))

    def line_first(self, at: Point) -> list[Point]:
        """Every point: the τ_accept line at `at` first (`line`), then the rest nearest `at` first: what a
        visitor looking at the τ_accept slider reaches first is computed first."""
        line = self.line(at)
        taken = set(line)
        return line + [p for p in self.nearest_first(at) if p not in taken]

    def snap(self, tau_accept: float, tau_slim: float, gamma: float) -> Point | None:
        """The grid point a slider setting shows: each value snapped to its axis, then put in order; None when a
        value lies outside its axis (nothing recorded or computed there). A τ_slim at or above τ_accept (taken
        along by it) is τ_accept's notch: snapped on its own axis, 0.45 / 0.45 would become 0.45 / 0.4 and 0.35 /
        0.35 fall outside, neither of them the point the line computed for that notch."""
        a, g = _nearest(self.tau_accept, tau_accept), _nearest(self.gamma, gamma)
        taken_along = not switched_off(tau_slim) and tau_slim >= tau_accept - 1e-9
        s = a if taken_along else _nearest(self.tau_slim, tau_slim)
        if None in (a, s, g):
            return None
        return Point(*in_order(a, s), int(g))

    def to_dict(self) -> dict:
        return {"tau_accept": list(self.tau_accept), "tau_slim": list(self.tau_slim), "gamma": list(self.gamma)}

    @classmethod
    def from_dict(cls, data: dict) -> Grid:
        return cls(tuple(data["tau_accept"]), tuple(data["tau_slim"]), tuple(data["gamma"]))


def notches(low: float, high: float, step: float = STEP) -> tuple[float, ...]:
    """Slider notches from `low` to `high` inclusive."""
    count = round((high - low) / step)
    return tuple(round(low + i * step, 4) for i in range(count + 1))


def gammas_around(gamma: int) -> tuple[int, ...]:
    """Three draft lengths around `gamma` (about a third apart), kept within 1..MAX_GAMMA."""
    delta = max(1, round(gamma / 3))
    values = (gamma - delta, gamma, gamma + delta) if gamma + delta <= MAX_GAMMA else (
        gamma - 2 * delta, gamma - delta, gamma)
    return tuple(sorted({min(max(v, 1), MAX_GAMMA) for v in values}))


def default_grid(config: DecodeConfig, calibrated_slim: float | None = None) -> Grid:
    """τ_accept 0.30-1.00 in notches; τ_slim off, the calibrated value (the run's own when none is given and the
    run has tier 2 on, else DecodeConfig's default) and the notch at least 0.15 below it; γ around the run's; and
    the run's own values wherever they lie."""
    calibrated = calibrated_slim if calibrated_slim is not None else (
        config.tau_slim if not switched_off(config.tau_slim) else DecodeConfig().tau_slim)
    lower = max(STEP, int(round((calibrated - 0.15) / STEP, 6)) * STEP)
    own = Point.of(config)  # the run's own point is always on its grid
    return Grid((*notches(0.30, 1.0), own.tau_accept), (OFF, calibrated, lower, config.tau_slim),
                gammas_around(config.gamma))
