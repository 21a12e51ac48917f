"""`python -m app.tools.latency`: what a visitor waits for after moving a threshold slider, in real Chromium.

Launches the app in this process (no model loaded) and, for every preset: the opening screen (the recorded
Qwen2.5-Coder pair sweep), the prompt-lookup and three-tier screens one click away (recorded SmolLM2 sweeps),
and the pair run live when it can load here, opens it in headless Debian Chromium at 1366x900 and times, in
the page (performance.now(); MutationObservers on the text and the headline):
  * page usable: navigation start -> the opening's grid is in the page and its text is drawn (no model);
  * one notch: a key press on the focused τ_accept slider (ArrowLeft / ArrowRight, back and forth, N times)
    -> the text AND the headline in their final state (their last change);
  * far jump: a click on the τ_accept track from 0.90 to 0.50 -> text and headline final (the engine's own
    re-route of that point was computed ahead: the recorded or prefetched grid);
and prints, per preset, the speed-up and words differing before and after the far jump (what the jump
changes), p50 / p95 / max per move, each target met or missed by how much, and the load average.
Needs playwright (Python) and /usr/bin/chromium; the numbers are only meaningful on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from dataclasses import dataclass, field

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from app.prefetch import PREFETCHER  # noqa: E402  (after the analytics default)
from app.ui import build_demo, launch_kwargs  # noqa: E402
from core.models.pairs import available_presets  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TARGETS = {"one notch": ("done p95", 50.0), "far jump": ("done max", 100.0), "page usable": ("max", 3000.0)}
OBSERVE = """() => {
  const lat = window.__viasdLatency = {start: null, events: []};
  const mark = () => { lat.start = performance.now(); lat.events = []; };
  document.addEventListener('keydown', mark, true);
  document.addEventListener('pointerdown', mark, true);
  for (const sel of ['#viasd-tokens-box', '#viasd-headline-box']) {
    let last = document.querySelector(sel).innerHTML;
    new MutationObserver(() => {
      const now = document.querySelector(sel).innerHTML;
      if (now !== last) { last = now; lat.events.push({sel, t: performance.now()}); }
    }).observe(document.querySelector(sel), {subtree: true, childList: true, characterData: true, attributes: true});
  }
}"""
USABLE = """() => window.viasd && window.viasd.grid && document.querySelectorAll('#viasd-tokens .tok').length > 0
  && !!document.querySelector('#viasd-tau-accept input[type=range]')"""
HEADLINE = """() => Array.from(document.querySelectorAll('#viasd-headline .value')).map(e => e.innerText)"""


@dataclass
class Move:
    label: str
    done_ms: float
    value: float


@dataclass
class Results:
    moves: list[Move] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, only: str = "") -> str:
        rows = ["| move | n | done p50 | done p95 | max |", "|---|---|---|---|---|"]
        for label in dict.fromkeys(m.label for m in self.moves if m.label.startswith(only)):
            done = [m.done_ms for m in self.moves if m.label == label]
            rows.append(f"| {label} | {len(done)} | {_pct(done, 50):.1f} | {_pct(done, 95):.1f} | {max(done):.1f} |")
        return "\n".join(rows) + "\n(ms, in the page: key press / click -> text and headline final)"

    def verdict(self) -> str:
        lines = []
        for label in dict.fromkeys(m.label for m in self.moves):
            done = [m.done_ms for m in self.moves if m.label == label]
            kind = next((k for k in TARGETS if k in label), None)
            if kind is None:
                continue
            name, target = TARGETS[kind]
            value = _pct(done, 95) if name == "done p95" else max(done)
            verdict = "met" if value < target else f"MISSED by {value - target:.0f} ms"
            lines.append(f"{label} · {name} {value:.1f} ms (target < {target:.0f}): {verdict}")
        return "\n".join(lines + self.notes)


def _pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch() -> tuple[object, str]:
    """Build and launch the app here; no model is loaded (the opening screen needs none)."""
    demo = build_demo()
    demo.queue(default_concurrency_limit=4)
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    return demo, f"http://127.0.0.1:{port}/"


def _value(page) -> float:
    return float(page.input_value("#viasd-tau-accept input[type=range]"))


SETTLE = """() => ({now: performance.now(), start: window.__viasdLatency.start,
  last: Math.max(0, ...window.__viasdLatency.events.map(e => e.t)),
  ghost: !!document.querySelector('#viasd-headline-box .ghost')})"""


def _settle(page, quiet_ms: float = 250.0, timeout_s: float = 300.0) -> tuple[float, bool]:
    """Wait until neither the text nor the headline changed for `quiet_ms` and the headline is this point's own
    (not the ghost numbers of a point the page has not computed: those wait for the server's answer). Returns the
    last change after the stamp in ms (NaN: nothing changed) and whether the move waited on the server."""
    started, served = time.perf_counter(), False
    while time.perf_counter() - started < timeout_s:
        page.wait_for_timeout(quiet_ms / 2)
        lat = page.evaluate(SETTLE)
        if lat["ghost"]:
            served = True
            continue
        if lat["last"] and lat["now"] - lat["last"] >= quiet_ms:
            return lat["last"] - lat["start"], served
        if not lat["last"] and lat["now"] - lat["start"] >= 2 * quiet_ms:
            return float("nan"), served  # nothing needed to change
    raise TimeoutError("the text kept changing, or the server never answered a point the page lacked")


def notch(page, key: str) -> tuple[float, bool]:
    page.focus("#viasd-tau-accept input[type=range]")
    page.keyboard.press(key)
    return _settle(page)


def click_track(page, target: float, thumb_px: float = 16.0) -> tuple[float, bool]:
    """Click the τ_accept track at `target` (the thumb jumps there: one input event, then the release)."""
    box = page.locator("#viasd-tau-accept input[type=range]").bounding_box()
    x = box["x"] + thumb_px / 2 + target * (box["width"] - thumb_px)
    page.mouse.click(x, box["y"] + box["height"] / 2)
    return _settle(page)


def measure_screen(page, label: str, notches: int, results: Results) -> None:
    """N one-notch moves of τ_accept and one far jump (0.90 -> 0.50), on the screen the page shows now."""
    page.evaluate(OBSERVE)
    unchanged = served = 0
    for i in range(notches):
        done, waited = notch(page, "ArrowLeft" if i % 2 == 0 else "ArrowRight")
        served += waited
        if done == done:  # not NaN
            results.moves.append(Move(f"{label}: one notch τ_accept", done, _value(page)))
        else:
            unchanged += 1
    if unchanged:
        results.notes.append(f"{label}: {unchanged} of {notches} notches changed nothing on screen (those points "
                             "decide every token alike): final at once, not timed")
    if served:
        results.notes.append(f"{label}: {served} of {notches} notches went to a point the page had not computed: "
                             "timed to the server's answer")
    click_track(page, 0.9)
    before = page.evaluate(HEADLINE)
    done, waited = click_track(page, 0.5)
    after = page.evaluate(HEADLINE)
    results.moves.append(Move(f"{label}: far jump τ_accept 0.90 → 0.50", done, _value(page)))
    results.notes.append(f"{label}: headline {' / '.join(before)} at 0.90 → {' / '.join(after)} at 0.50"
                         + (" (a point the page had not computed: timed to the server's answer)" if waited else ""))


def run(notches: int, headed: bool = False, live_pair: bool = True, only: str = "") -> Results:
    from playwright.sync_api import sync_playwright

    demo, url = launch()
    results = Results()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=not headed)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            for attempt in range(3):  # the first load also warms Chromium's cache: time every one
                started = time.perf_counter()
                page.goto(url, wait_until="commit")
                page.wait_for_function(USABLE, timeout=60_000)
                results.moves.append(Move("opening: page usable (no model loaded)",
                                          (time.perf_counter() - started) * 1000, attempt))
            screens = {"opening": None, "prompt lookup": "#viasd-show-lookup", "three tiers": "#viasd-show-three-tier"}
            for label, button in screens.items():
                if only and only not in label:
                    continue
                if button:
                    page.click(button)
                    page.wait_for_timeout(1500)
                measure_screen(page, label, notches, results)
                print(results.table(label), flush=True)
            pair = next((found for preset, found in available_presets() if "qwen2.5-coder" in preset.verifier), None)
            if live_pair and pair is not None and pair.available and (not only or "pair" in only):
                page.click("#viasd-show-opening")
                page.wait_for_timeout(1500)
                page.click("#viasd-real")
                page.wait_for_function("() => /^Done/.test(document.querySelector('#viasd-status')?.innerText||'')"
                                       " && !/measuring/.test(document.querySelector('#viasd-status').innerText)",
                                       timeout=900_000)  # its fidelity measured too: nothing else runs now
                page.wait_for_timeout(1000)
                measure_screen(page, "Qwen2.5-Coder pair, run live", notches, results)
                print(results.table("Qwen"), flush=True)
            browser.close()
    finally:
        PREFETCHER.stop()
        demo.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notches", type=int, default=20, help="one-notch moves to time per screen (default 20)")
    parser.add_argument("--only", default="", help="measure only the screens whose name contains this")
    parser.add_argument("--no-live-pair", action="store_true", help="skip running the pair live")
    parser.add_argument("--headed", action="store_true", help="show the browser window")
    args = parser.parse_args()
    started = time.perf_counter()
    before = os.getloadavg()
    results = run(args.notches, args.headed, not args.no_live_pair, args.only)
    print()
    print(results.table())
    print(results.verdict())
    after = os.getloadavg()
    print(f"\n(total {time.perf_counter() - started:.0f} s; load average {before[0]:.2f} at the start, "
          f"{after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f} (1/5/15 min) at the end; {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")


if __name__ == "__main__":
    main()
