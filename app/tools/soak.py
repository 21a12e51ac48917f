"""`python -m app.tools.soak`: a public demo's day, compressed: visitors mixing everything, for minutes on end.

    python -m app.tools.soak --minutes 3 --visitors 4                # the suite's form (tests/app/test_soak.py)
    python -m app.tools.soak --minutes 60 --visitors 10 --pair       # the README's run, with the Qwen pair
    python -m app.tools.soak --url http://127.0.0.1:7860/ --pid 1234 # an app already running

It launches `python app.py` on a free loopback port (its log in the output folder) unless given --url,
and drives it through its real HTTP API as `app.tools.load_test` does: every visitor is one browser session
mixing live runs, re-routes (one notch, far jumps), Stop mid-run, Re-run for real timing, shared links
with run=1, Compare, the threshold grid, the schemes, Classroom replays and hostile input (the fuzz
classes); with --pair, one visitor loads the Qwen2.5-Coder pair after a minute while the others run,
and three visitors then move to it and back (app/tools/soak_actions.py). The app process is sampled
from /proc every few seconds (resident memory, threads, open handles), and the app logs the size of each of its
bounded stores once a minute (app/held_log.py: prediction memos, grids, the app's and Gradio's sessions, glibc's
heap in use and freed-but-kept, the threads Python did not start). The soak rests twice, after the warm-up and
after the last minute (`REST_S`): threads and handles are judged at rest, where only what is never given back
remains. A tab the soak opens holds Gradio's heartbeat
and closes as a browser tab does, so the app forgets it as it would a visitor's. After the soak every answer
is checked against a fresh engine run of the same request (app/tools/soak_check.py).

Writes `soak.csv` (per minute), `soak.html` (the chart; `soak.png` too where Chromium is found) and
prints the per-minute table, the per-action table and each target met or missed (app/tools/soak_report.py).
Exit status 1 when there were errors or wrong answers.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from pathlib import Path

from app import held_log
from app.tools import soak_actions as actions
from app.tools.load_test import launch_app
from app.tools.soak_actions import Answer, Visitor
from app.tools.soak_check import Checker
from app.tools.soak_report import Sample, SoakReport, write_png

SAMPLE_S = 5.0
SMOL_MIX = {"run": 22, "re-route": 18, "far jump": 4, "stop": 5, "real timing": 4, "link": 7, "compare": 4,
            "grid": 3, "schemes": 1, "classroom": 6, "hostile": 12}
"""How often a SmolLM2 visitor does each thing (hostile input 12 % of the time)."""
PAIR_MIX = {"run": 30, "re-route": 22, "far jump": 4, "stop": 5, "real timing": 4, "link": 8, "hostile": 12,
            "switch": 3}
"""A visitor on the pair (the slow sweeps stay on SmolLM2: a pair grid would hold the queue for minutes)."""
PAIR_VISITORS = 3
PAIR_AFTER_S = 60.0
BACK_ON_SMOL_S = (60.0, 180.0)
"""How long a pair visitor who went back to SmolLM2 stays there before picking the pair again."""
THINK_S = (0.5, 3.0)
REST_S = 20.0
"""A rest: no visitor starts an action until every action in flight has ended and this long has passed. Then the
app holds only what it keeps for good: Gradio's idle workers leave after 10 s, idle keep-alive sockets after 5 s.
The soak rests at the end of the warm-up and after the last minute; threads or handles that grow between the two
rests were never given back, whatever the load in between."""


def process_sample(pid: int, at_s: float) -> Sample | None:
    """The app's resident MB (and its mapped-file share), threads and open handles (and how many are sockets)
    from /proc (None once the process is gone)."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":" in line)
        mb = {key: int(status[key].split()[0]) / 1024 for key in ("VmRSS", "RssFile")}
    except (OSError, ValueError, KeyError):  # gone, or a zombie (its status has no memory lines)
        return None
    handles = held_log.handle_census(pid)
    return Sample(at_s, mb["VmRSS"], int(status["Threads"]), sum(handles.values()), mb["RssFile"],
                  handles.get("socket", 0))


class Soak:
    """Visitors, the sampler and the pair's schedule; `answers` and `samples` grow while it runs."""

    def __init__(self, url: str, pid: int | None, minutes: float, visitors: int, pair: bool, seed: int,
                 downloads: Path, warmup_min: float = 0.0) -> None:
        self.url, self.pid, self.visitors, self.pair, self.seed = url, pid, visitors, pair, seed
        self.warmup_s = warmup_min * 60
        self.rests = bool(warmup_min) and pid is not None  # rests need a warm-up to end and a process to sample
        self.downloads = str(downloads)  # the clients' copies of the trace files, in the output folder
        self.started = time.monotonic()
        self.deadline = self.started + minutes * 60
        self.answers: list[Answer] = []
        self.samples: list[Sample] = []
        self.pair_loaded = threading.Event()
        self._pair_again: dict[int, float] = {}  # visitor -> when it may pick the pair again
        self._lock = threading.Lock()
        self.at_rest: list[Sample] = []  # the app at the end of each rest: after the warm-up, after the last minute
        self._busy = 0  # actions in flight
        self._awake = threading.Event()  # cleared during a rest: visitors start nothing
        self._awake.set()

    def _rest(self) -> None:
        """Let every action in flight end, wait `REST_S`, then note the app's threads and handles."""
        self._awake.clear()
        while self._busy:
            time.sleep(0.2)
        time.sleep(REST_S)
        sample = process_sample(self.pid, time.monotonic() - self.started)
        if sample is not None:
            self.at_rest.append(sample)
        self._awake.set()

    def _rest_after_warmup(self) -> None:
        time.sleep(max(0.0, self.started + self.warmup_s - time.monotonic()))
        if time.monotonic() < self.deadline:
            self._rest()

    def _sample(self) -> None:
        while time.monotonic() < self.deadline and self.pid is not None:
            sample = process_sample(self.pid, time.monotonic() - self.started)
            if sample is not None:
                self.samples.append(sample)
            time.sleep(SAMPLE_S)

    def _next(self, visitor: Visitor) -> str:
        on_pair, now = visitor.models is not None, time.monotonic()
        wants_pair = (self.pair and visitor.index < PAIR_VISITORS and not on_pair
                      and now >= self._pair_again.get(visitor.index, 0.0))
        if wants_pair and (self.pair_loaded.is_set() or (visitor.index == 0 and now - self.started > PAIR_AFTER_S)):
            return "switch"  # the first to ask loads the pair while the others keep running
        mix = PAIR_MIX if on_pair else SMOL_MIX
        return visitor.rng.choices(list(mix), weights=list(mix.values()))[0]

    def _visit(self, index: int) -> None:
        visitor = None
        while time.monotonic() < self.deadline:
            if visitor is None:
                try:
                    visitor = Visitor(index, self.url, self.seed * 1000 + index, self.started, self.downloads)
                except Exception as exc:  # noqa: BLE001
                    self._record(Answer("connect", index, time.monotonic() - self.started, error=str(exc)[:200]))
                    time.sleep(5)
                    continue
            self._awake.wait()
            action = self._next(visitor)
            with self._lock:
                self._busy += 1
            try:
                answer = actions.ACTIONS[action](visitor)
            except Exception as exc:  # noqa: BLE001  (every failure is counted; none stops the visitor)
                answer = Answer(action, index, time.monotonic() - self.started,
                                error=f"{type(exc).__name__}: {str(exc).strip()[:200]}")
            finally:
                with self._lock:
                    self._busy -= 1
            if action == "switch" and visitor.models is not None:
                self.pair_loaded.set()
            elif action == "switch":
                self._pair_again[index] = time.monotonic() + visitor.rng.uniform(*BACK_ON_SMOL_S)
            self._record(answer)
            time.sleep(visitor.rng.uniform(*THINK_S))

    def _record(self, answer: Answer) -> None:
        with self._lock:
            self.answers.append(answer)

    def run(self) -> None:
        threads = [threading.Thread(target=self._sample, daemon=True)]
        if self.rests:
            threads.append(threading.Thread(target=self._rest_after_warmup, daemon=True))
        for index in range(self.visitors):
            threads.append(threading.Thread(target=self._visit, args=(index,), daemon=True))
        for thread in threads:
            thread.start()
            time.sleep(0.3)  # visitors arrive a moment apart, like people
        for thread in threads:
            thread.join(timeout=max(0.0, self.deadline - time.monotonic()) + 900)
        if self.rests:
            self._rest()  # the visitors have left: what the app holds now, beside what it held after the warm-up


def check_all(answers: list[Answer], checker: Checker | None = None) -> None:
    """Fill each answer's `wrong` from a fresh engine run (printing progress every 50)."""
    checker = checker or Checker()
    for n, answer in enumerate(answers, start=1):
        answer.wrong = checker.check(answer)
        if n % 50 == 0:
            print(f"  checked {n}/{len(answers)}", flush=True)
    for tie in checker.ties:
        print(f"  right at a bf16 near-tie: {tie}", flush=True)


REFUSED_INPUT = re.compile(r'^gradio\.exceptions\.(?:Error: ["\']Value: .*is not in the list of choices'
                           r'|Error: ["\']Value \S+ is (?:less|greater) than (?:minimum|maximum) value'
                           r'|ComponentProcessingError: Could not preprocess input component)', re.MULTILINE)
"""Gradio's own refusal of an input before any handler runs: a choice a component does not offer (a hostile value
for a radio or dropdown), a slider value out of its range (temperature -1), or a value a slider or number box
cannot take. It logs a traceback, but the visitor gets
one line and nothing in the app ran, so it is not counted."""


def tracebacks(log: Path) -> int:
    """Tracebacks in the app's log whose exception is not Gradio's refusal of an input (a chained traceback, an
    exception raised while handling another, is one with it)."""
    if not log.exists():
        return 0
    text = log.read_text(errors="replace")
    chains = _joined(re.split(r"\n(?=Traceback \(most recent call last\):)", "\n" + text))
    return sum(1 for chain in chains if chain.startswith("Traceback") and not REFUSED_INPUT.search(chain))


def _joined(parts: list[str]) -> list[str]:
    """Join the traceback that a "During handling of the above exception" line continues to the one before."""
    out: list[str] = []
    for part in parts:
        if out and out[-1].rstrip().endswith(("During handling of the above exception, another exception occurred:",
                                              "The above exception was the direct cause of the following exception:")):
            out[-1] += "\n" + part
        else:
            out.append(part)
    return out


def write_outputs(report: SoakReport, folder: Path) -> None:
    report.write_csv(folder / "soak.csv")
    report.write_samples(folder / "samples.csv")  # every /proc sample, so a rule can be read again later
    figure = report.figure()
    figure.write_html(folder / "soak.html", include_plotlyjs=True)
    try:
        write_png(folder / "soak.html", folder / "soak.png")
    except Exception as exc:  # noqa: BLE001  (the PNG is a convenience; the CSV and HTML are the record)
        print(f"(no PNG: {exc})")


def run_soak(minutes: float, visitors: int, out: Path, pair: bool = False, warmup: float | None = None,
             url: str | None = None, pid: int | None = None, seed: int = 23) -> SoakReport:
    """Launch the app (unless `url`), soak it, check every answer, write the CSV and the chart; the report."""
    out.mkdir(parents=True, exist_ok=True)
    process = None
    if url is None:
        process, url = launch_app(log=out / "app.log", env={"VIASD_HELD_LOG": "1"})  # its stores, once a minute
        pid = process.pid
    began, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()
    warmup_min = warmup if warmup is not None else min(10.0, minutes / 3)
    try:
        soak = Soak(url, pid, minutes, visitors, pair, seed, out / "downloads", warmup_min)
        wall_started = time.time() - (time.monotonic() - soak.started)
        soak.run()
        try:
            after = actions.run(Visitor(-1, url, 0, soak.started, soak.downloads))
        except Exception as exc:  # noqa: BLE001
            after = Answer("run", -1, minutes * 60, error=f"the app stopped answering: {exc}")
        after.action = "answers afterwards"
        soak.answers.append(after)
        load_after = os.getloadavg()
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=60)
    print(f"Soak {began}, {minutes:g} min, {visitors} visitors{', the pair loaded' if pair else ''}; load average "
          f"{load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end; checking {len(soak.answers)} "
          "answers…", flush=True)
    log = out / "app.log"
    held = [{**h, "at_s": h["at"] - wall_started} for h in held_log.parse(log.read_text(errors="replace"))] \
        if log.exists() else []

    app_tracebacks = tracebacks(log)

    def report() -> SoakReport:
        return SoakReport(soak.answers, soak.samples, minutes, warmup_min, app_tracebacks, held, soak.at_rest)

    write_outputs(report(), out)  # the hour's figures are on disk before the check, which can take as long again
    print(f"per-minute figures (answers not yet checked): {out / 'soak.csv'}", flush=True)
    check_all(soak.answers)
    checked = report()
    write_outputs(checked, out)
    return checked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--visitors", type=int, default=6)
    parser.add_argument("--pair", action="store_true", help="load the offline Qwen2.5-Coder pair a minute in")
    parser.add_argument("--warmup", type=float, default=None, help="minutes before memory must be flat "
                        "(default 10, or a third of a shorter soak)")
    parser.add_argument("--url", help="an app already running (default: launch app.py on loopback)")
    parser.add_argument("--pid", type=int, help="its process id, for memory, threads and handles")
    parser.add_argument("--out", type=Path, default=Path("soak-out"), help="folder for soak.csv, soak.html, app.log")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    report = run_soak(args.minutes, args.visitors, args.out, args.pair, args.warmup, args.url, args.pid, args.seed)
    print(report.minute_table() + "\n")
    print(report.table())
    print(f"\nper minute: {args.out / 'soak.csv'} · chart: {args.out / 'soak.html'}")
    return 1 if report.errors or report.wrong or report.app_tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
