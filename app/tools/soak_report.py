"""A soak's figures: per minute, per action, the targets met or missed; a CSV and a plotly chart.

Per minute: the app's resident memory (the median of the minute's samples, taken from /proc every few
seconds; its highest too), threads and open file handles (the minute's last sample), the longest queue
a request met, requests, errors, wrong answers and p50 / p95 latency per action. The targets (issue 23),
after a warm-up of `warmup_min`: 0 errors and 0 wrong answers; each later minute's resident memory
within ±5 % of the warm-up's last minute; no more threads and handles at rest after the last minute
than at rest after the warm-up (without rests: the fewest in the last `warmup_min` minutes no more than
late in the warm-up: what is never given back lifts the fewest; a pool that follows demand moves only the
most); p95 of a re-route and of a live SmolLM2 run no worse in the last
`warmup_min` minutes than in the first.
"""

from __future__ import annotations

import csv
import dataclasses
import shutil
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.tools.soak_actions import Answer

WATCHED = ("re-route", "run")
"""The actions whose p95 must not get worse (a re-route and a live SmolLM2 run)."""
RSS_BAND = 0.05


@dataclass(frozen=True)
class Sample:
    """The app process at one moment: seconds since the soak began, MB resident, threads, open handles; `file_mb`
    is the part of `rss_mb` that is pages of mapped files (the weights: core.models.resident), not the heap."""

    at_s: float
    rss_mb: float
    threads: int
    handles: int
    file_mb: float = 0.0
    sockets: int = 0


def _minutes(value: float) -> str:
    return f"{value:g}" if value == round(value) else f"{value:.1f}"


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(sorted(values), n=100, method="inclusive")[round(q * 100) - 1]


HELD_COLUMNS = ("memo_mb", "live_points", "sessions", "gradio_sessions", "malloc_in_use_mb", "malloc_free_mb",
                "python_blocks_k", "native_threads")
"""The app's held-log figures in each minute row: its stores, Gradio's sessions, glibc's own account of the heap
(in use, and freed but kept), Python's live blocks and the threads Python did not start."""


def _blank(value: object) -> object:
    return "" if value is None else value


@dataclass
class SoakReport:
    answers: list[Answer]
    samples: list[Sample]
    minutes: float
    warmup_min: float
    app_tracebacks: int = 0
    held: list[dict] = dataclasses.field(default_factory=list)  # the app's store sizes (app/held_log.py), `at_s`
    at_rest: list[Sample] = dataclasses.field(default_factory=list)  # after the warm-up's rest, after the last

    @property
    def errors(self) -> list[Answer]:
        return [a for a in self.answers if a.error]

    @property
    def wrong(self) -> list[Answer]:
        return [a for a in self.answers if a.wrong]

    def actions(self) -> list[str]:
        return sorted({a.action for a in self.answers})

    def rows(self) -> list[dict]:
        """One row per minute (the CSV's rows)."""
        rows = []
        for minute in range(int(self.minutes + 0.999)):
            inside = [a for a in self.answers if minute * 60 <= a.at_s < (minute + 1) * 60]
            seen = [s for s in self.samples if s.at_s < (minute + 1) * 60]
            last, level, sampled = (seen[-1] if seen else None), self.rss_level(minute + 1), self._minute(minute + 1)
            row = {"minute": minute + 1, "rss_mb": round(level, 1) if level else "",
                   "rss_max_mb": round(max(s.rss_mb for s in sampled), 1) if level else "",
                   "file_mb": round(statistics.median(s.file_mb for s in sampled), 1) if level else "",
                   "threads": last.threads if last else "", "handles": last.handles if last else "",
                   "queue": max((a.queue for a in inside), default=0), "requests": len(inside),
                   "errors": sum(bool(a.error) for a in inside), "wrong": sum(bool(a.wrong) for a in inside),
                   "sockets": last.sockets if last else "",
                   **self._held_row(minute + 1)}
            for action in self.actions():
                times = [a.latency_s for a in inside if a.action == action and not a.error]
                row[f"p50 {action}"] = round(quantile(times, 0.5), 2) if times else ""
                row[f"p95 {action}"] = round(quantile(times, 0.95), 2) if times else ""
            rows.append(row)
        return rows

    def _held_row(self, minute: int) -> dict:
        """The app's stores at the last held line of the minute (none logged: no columns)."""
        if not self.held:
            return {}
        seen = [h for h in self.held if h["at_s"] < minute * 60]
        if not seen:
            return dict.fromkeys(HELD_COLUMNS, "")
        last = seen[-1]
        malloc = last.get("malloc_mb") or {}
        return {"memo_mb": round(sum(last["memo_mb"].values()), 1), "live_points": last["live_points"],
                "sessions": last["sessions"], "gradio_sessions": _blank(last.get("gradio_sessions")),
                "malloc_in_use_mb": _blank(malloc.get("in_use")), "malloc_free_mb": _blank(malloc.get("free_kept")),
                "python_blocks_k": _blank(last.get("python_blocks_k")),
                "native_threads": _blank(last.get("native_threads"))}

    def write_csv(self, path: Path) -> None:
        rows = self.rows()
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["minute"])
            writer.writeheader()
            writer.writerows(rows)

    def write_samples(self, path: Path) -> None:
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[f.name for f in dataclasses.fields(Sample)])
            writer.writeheader()
            writer.writerows(dataclasses.asdict(s) for s in self.samples)

    # -- the targets ------------------------------------------------------------------------
    def _minute(self, minute: float, length: float = 1.0) -> list[Sample]:
        """The samples of the `length` minutes that end at `minute` (minutes since the soak began)."""
        return [s for s in self.samples if (minute - length) * 60 < s.at_s <= minute * 60]

    def rss_level(self, minute: float, length: float = 1.0) -> float | None:
        """Resident memory in the minute that ends at `minute`: the median of its samples. A sample taken during
        a grid or a Compare holds that job's working set for a moment (up to +10 % on SmolLM2 at 5 s sampling);
        memory that is never given back raises every sample, so it moves the median and a leak still shows."""
        inside = [s.rss_mb for s in self._minute(minute, length)]
        return statistics.median(inside) if inside else None

    def warm_level(self) -> float | None:
        """The level the band is measured from: the warm-up's last minute (its last half, for a warm-up of
        under two minutes, whose first seconds are the app's start)."""
        return self.rss_level(self.warmup_min, min(1.0, self.warmup_min / 2))

    def rss_band(self) -> tuple[float, float] | None:
        """(lowest, highest) of each later minute's resident memory, relative to the last warm-up minute's."""
        level = self.warm_level()
        after = [self.rss_level(m) for m in range(int(self.warmup_min) + 1, int(self.minutes + 0.999) + 1)]
        after = [mb for mb in after if mb]
        if not level or not after:
            return None
        return min(after) / level - 1, max(after) / level - 1

    def growth(self, field: str) -> tuple[int, int]:
        """(most during the warm-up, most after it) of threads, handles or sockets."""
        warm = [getattr(s, field) for s in self.samples if s.at_s <= self.warmup_min * 60]
        late = [getattr(s, field) for s in self.samples if s.at_s > self.warmup_min * 60]
        return max(warm, default=0), max(late, default=0)

    def floors(self, field: str) -> tuple[int, int]:
        """(fewest late in the warm-up, fewest in the last `warmup_min` minutes) of threads, handles or sockets. A
        thread or handle never given back lifts every later sample, so it lifts the fewest; Gradio's worker pool
        (up to its cap; an idle worker leaves after 10 s), the prefetch thread and visitors' sockets come and go
        with demand and move the most."""
        def fewest(begin_s: float, end_s: float) -> int:
            return min((getattr(s, field) for s in self.samples if begin_s < s.at_s <= end_s), default=0)
        warm_s, last_s = self.warmup_min * 60, max(self.warmup_min, self.minutes - self.warmup_min) * 60
        return fewest(warm_s / 2, warm_s), fewest(last_s, float("inf"))  # the warm-up's second half: started

    def growth_verdict(self, field: str) -> tuple[str, bool, str]:
        """Judged at rest where the soak rested twice (soak.REST_S: nothing in flight, idle workers and sockets
        gone), else by the floors under load; the floors and peaks under load are reported either way."""
        (low_warm, low_late), (high_warm, high_late) = self.floors(field), self.growth(field)
        under_load = (f"at least {low_warm} late in the warm-up, {low_late} in the last {_minutes(self.warmup_min)} "
                      f"min (at most {high_warm} during the warm-up, {high_late} after)")
        if len(self.at_rest) == 2:
            after_warmup, at_end = (getattr(s, field) for s in self.at_rest)
            return (f"no growth in {field}", at_end <= after_warmup,
                    f"at rest {after_warmup} after the warm-up, {at_end} after the last minute; under load "
                    + under_load)
        return f"no growth in {field}", low_late <= low_warm, under_load

    def p95_first_last(self, action: str) -> tuple[float, float]:
        window = self.warmup_min * 60
        first = [a.latency_s for a in self.answers if a.action == action and not a.error and a.at_s < window]
        last = [a.latency_s for a in self.answers if a.action == action and not a.error
                and a.at_s >= self.minutes * 60 - window]
        return quantile(first, 0.95), quantile(last, 0.95)

    def verdicts(self) -> list[tuple[str, bool, str]]:
        """(target, met, the numbers) for every target of the issue."""
        checked = sum(a.check is not None and not a.error for a in self.answers)
        out = [("0 errors", not self.errors and not self.app_tracebacks,
                f"{len(self.errors)} errors in {len(self.answers)} requests, {self.app_tracebacks} tracebacks in the "
                "app's log"),
               ("0 wrong answers", not self.wrong, f"{len(self.wrong)} wrong of {checked} checked")]
        band = self.rss_band()
        level = self.warm_level()
        out.append((f"resident memory within ±{RSS_BAND:.0%} after minute {_minutes(self.warmup_min)}",
                    band is not None and -RSS_BAND <= band[0] and band[1] <= RSS_BAND,
                    "no samples after the warm-up" if band is None else
                    f"{level:.0f} MB at minute {_minutes(self.warmup_min)}, then {band[0]:+.1%} to {band[1]:+.1%}"))
        out.append(self.growth_verdict("threads"))
        name, met, numbers = self.growth_verdict("handles")
        (low_warm, low_late), (high_warm, high_late) = self.floors("sockets"), self.growth("sockets")
        out.append((name, met, f"{numbers}; of them sockets, the visitors' connections: at least {low_warm}, then "
                               f"{low_late}; at most {high_warm}, then {high_late}"))
        for action in WATCHED:
            first, last = self.p95_first_last(action)
            met = first == first and last == last and last <= first  # NaN (no request) is not met
            out.append((f"p95 {action}: last {_minutes(self.warmup_min)} min no worse than first", met,
                        f"{first:.2f} s → {last:.2f} s"))
        return out

    def minute_table(self) -> str:
        """The per-minute figures in Markdown (every action's p50 / p95 are in the CSV)."""
        held = ["memo_mb", "gradio_sessions", "malloc_in_use_mb", "malloc_free_mb", "native_threads"]
        keys = ["minute", "rss_mb", "file_mb", *(held if self.held else []), "threads", "handles", "sockets",
                "queue", "requests", "errors", "wrong"]
        keys += [f"p{q} {a}" for a in WATCHED for q in (50, 95)]
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(str(row.get(k, "")) for k in keys) + " |" for row in self.rows()]
        return "\n".join(lines)

    def table(self) -> str:
        lines = ["| target | met | numbers |", "|---|---|---|"]
        lines += [f"| {name} | {'yes' if met else 'NO'} | {numbers} |" for name, met, numbers in self.verdicts()]
        lines += ["", "| action | requests | errors | wrong | p50 | p95 |", "|---|---|---|---|---|---|"]
        for action in self.actions():
            mine = [a for a in self.answers if a.action == action]
            times = [a.latency_s for a in mine if not a.error]
            lines.append(f"| {action} | {len(mine)} | {sum(bool(a.error) for a in mine)} | "
                         f"{sum(bool(a.wrong) for a in mine)} | {quantile(times, 0.5):.2f} s | "
                         f"{quantile(times, 0.95):.2f} s |")
        lines += [f"- error: {a.action} (visitor {a.visitor}, {a.at_s:.0f} s): {a.error}" for a in self.errors[:20]]
        lines += [f"- wrong: {a.action} (visitor {a.visitor}, {a.at_s:.0f} s): {a.wrong}" for a in self.wrong[:20]]
        return "\n".join(lines)

    def figure(self) -> go.Figure:
        """Resident memory over time above, p95 latency per minute per action below."""
        figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                               subplot_titles=("App process: resident memory (MB)", "p95 latency per minute (s)"))
        figure.add_trace(go.Scatter(x=[s.at_s / 60 for s in self.samples], y=[s.rss_mb for s in self.samples],
                                    name="resident MB", mode="lines"), row=1, col=1)
        figure.add_trace(go.Scatter(x=[s.at_s / 60 for s in self.samples], y=[s.file_mb for s in self.samples],
                                    name="of it, mapped files MB", mode="lines"), row=1, col=1)
        if self.held:  # the prediction memos' share of it: a bounded store filling up, not a leak
            figure.add_trace(go.Scatter(x=[h["at_s"] / 60 for h in self.held],
                                        y=[sum(h["memo_mb"].values()) for h in self.held], name="memos MB",
                                        mode="lines+markers"), row=1, col=1)
            heap = [(h["at_s"] / 60, h["malloc_mb"]["in_use"]) for h in self.held if h.get("malloc_mb")]
            if heap:  # what the program holds of the native heap (glibc's count): flat while resident climbs = kept
                figure.add_trace(go.Scatter(x=[x for x, _ in heap], y=[y for _, y in heap],
                                            name="native heap in use MB", mode="lines+markers"), row=1, col=1)
        level = self.warm_level()
        if level:
            for bound in (1 - RSS_BAND, 1 + RSS_BAND):
                figure.add_hline(y=level * bound, line_dash="dot", line_color="grey", row=1, col=1)
        by_minute: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for row in self.rows():
            for action in self.actions():
                if row.get(f"p95 {action}") != "":
                    by_minute[action].append((row["minute"], row[f"p95 {action}"]))
        for action, points in by_minute.items():
            figure.add_trace(go.Scatter(x=[m - 0.5 for m, _ in points], y=[p for _, p in points], name=action,
                                        mode="lines+markers"), row=2, col=1)
        figure.update_xaxes(title_text="minutes since the soak began", row=2, col=1)
        figure.update_layout(height=700, width=1100, template="plotly_white", title="Soak: memory and latency")
        return figure


def write_png(html_path: Path, png_path: Path) -> None:
    """Screenshot the chart's HTML in headless Chromium (Debian's; never Playwright's own download)."""
    from playwright.sync_api import sync_playwright  # optional here: the CSV and the HTML are the record

    chromium = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    if not chromium:
        raise RuntimeError("no Chromium executable")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1120, "height": 720})
        page.goto(html_path.resolve().as_uri())
        page.wait_for_selector(".main-svg", timeout=30_000)
        page.screenshot(path=str(png_path), full_page=True)
        browser.close()
