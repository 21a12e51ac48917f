"""`python -m app.latency`: what a visitor waits for after releasing a threshold slider, in real Chromium.

Launches the app in this process and, for every preset (the opening screen, the three-tier
self-drafter chat run, the real Qwen2.5-Coder pair when it can load here), opens the preset's
`run=1` link in headless Debian Chromium (100 tokens by default), waits for the run and the
background prefetch of neighbouring pairs, then drags τ_accept one notch with the mouse, back and
forth, N times, and jumps τ_slim far away once. In the page, a pointerup listener stamps the
release and MutationObservers stamp every change of the text, the headline metrics and the status
line, so the times are browser-side:
  * done  = release -> the text AND the headline metrics show their final state (their last change;
            the status line's change when neither needed to change);
  * first = release -> first change of the text or metrics (content only, not Gradio's progress timer);
  * server = the app's own "Re-routed in X s" (the rest is transport, rendering and the queue).
Prints a table per preset (p50 / p95 / max, ms), each target met or missed by how much, and the
load average. Needs playwright (Python) and /usr/bin/chromium; the numbers
are only meaningful on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import time
from dataclasses import dataclass, field

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from app.prefetch import PREFETCHER, STEP  # noqa: E402  (after the analytics default)
from app.session import SESSIONS  # noqa: E402
from app.settings import THREE_TIER, Settings  # noqa: E402
from app.share import query_of  # noqa: E402
from app.ui import build_demo, launch_kwargs  # noqa: E402
from core.config import LOOKUP_PRESET  # noqa: E402
from core.models.pairs import available_presets  # noqa: E402
from examples import FAMILIES, load_prompts  # noqa: E402

try:  # the pair's recommended settings (helper pair-bench); before that lands, the lookup preset
    from core.config import PRESETS  # noqa: E402
except ImportError:  # pragma: no cover
    PRESETS = {}

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
WATCHED = {"tokens": ["#viasd-tokens-box", "#viasd-tokens"], "metrics": ["#viasd-headline-box", "#viasd-headline"],
           "status": ["#viasd-status", "#viasd-status .prose"]}
"""key -> [element observed, element whose content counts]: Gradio's progress timer inside a box is not a change."""
OBSERVE = """(watched) => {
  const lat = window.__viasdLatency = {release: null, events: [], last: {}};
  const content = (key) => {
    const [box, inner] = watched[key];
    const el = document.querySelector(inner) || document.querySelector(box);
    return key === 'status' ? (el?.innerText || '') : (el?.outerHTML || '');
  };
  for (const key of Object.keys(watched)) lat.last[key] = content(key);
  document.addEventListener('pointerup', () => { lat.release = performance.now(); lat.events = []; }, true);
  for (const [key, [box]] of Object.entries(watched)) {
    new MutationObserver(() => {
      const now = content(key);
      if (now !== lat.last[key]) { lat.last[key] = now; lat.events.push({key, t: performance.now()}); }
    }).observe(document.querySelector(box), {subtree: true, childList: true, characterData: true, attributes: true});
  }
}"""
FINISHED = r"^(Re-routed in|Done)|⚠"


@dataclass
class Move:
    label: str
    value_from: float
    value_to: float
    done_ms: float
    first_ms: float
    server_ms: float | None


@dataclass
class Results:
    moves: list[Move] = field(default_factory=list)

    def table(self, only: str = "") -> str:
        rows = ["| move | n | done p50 | done p95 | first p50 | first p95 | server p50 | max done |",
                "|---|---|---|---|---|---|---|---|"]
        for label in dict.fromkeys(m.label for m in self.moves if m.label.startswith(only)):
            ms = [m for m in self.moves if m.label == label]
            done, first = [m.done_ms for m in ms], [m.first_ms for m in ms]
            server = [m.server_ms for m in ms if m.server_ms is not None]
            rows.append(f"| {label} | {len(ms)} | {_pct(done, 50):.0f} | {_pct(done, 95):.0f} | "
                        f"{_pct(first, 50):.0f} | {_pct(first, 95):.0f} | {_pct(server, 50):.0f} | {max(done):.0f} |")
        return "\n".join(rows) + "\n(ms, mouse release -> browser; 'server' = the app's own re-route time)"

    def verdict(self) -> str:
        """Each target (one notch: done p50 < 250 ms, p95 < 500 ms; far jump: first change < 500 ms), met or
        missed and by how much."""
        lines = []
        for label in dict.fromkeys(m.label for m in self.moves):
            ms = [m for m in self.moves if m.label == label]
            if "one notch" in label:
                checks = [("done p50", _pct([m.done_ms for m in ms], 50), 250),
                          ("done p95", _pct([m.done_ms for m in ms], 95), 500)]
            else:
                checks = [("first change", max(m.first_ms for m in ms), 500)]
            for name, value, target in checks:
                verdict = "met" if value < target else f"MISSED by {value - target:.0f} ms"
                lines.append(f"{label} · {name} {value:.0f} ms (target < {target}): {verdict}")
        return "\n".join(lines)


def _pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch() -> tuple[object, str]:
    """Build and launch the app here (embedded model loaded first, so no run times a model load)."""
    SESSIONS.default_bundle()
    demo = build_demo()
    demo.queue(default_concurrency_limit=4)
    port = _free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs())
    return demo, f"http://127.0.0.1:{port}/"


def _wait_status(page, pattern: str, timeout_ms: float) -> str:
    page.wait_for_function("([pat]) => new RegExp(pat).test(document.querySelector('#viasd-status')?.innerText||'')",
                           arg=[pattern], timeout=timeout_ms)
    return page.inner_text("#viasd-status")


def _slider_value(page, elem_id: str) -> float:
    return float(page.input_value(f"#{elem_id} input[type=range]"))


def drag(page, elem_id: str, target: float, lo: float = 0.0, hi: float = 1.0, thumb_px: float = 16.0) -> None:
    """Press the range input's thumb, drag it to `target` and release (a Gradio `release`)."""
    track = page.locator(f"#{elem_id} input[type=range]").bounding_box()
    usable = track["width"] - thumb_px

    def x_of(value: float) -> float:
        return track["x"] + thumb_px / 2 + (value - lo) / (hi - lo) * usable

    y = track["y"] + track["height"] / 2
    page.mouse.move(x_of(_slider_value(page, elem_id)), y)
    page.mouse.down()
    page.mouse.move(x_of(target), y, steps=4)
    page.mouse.up()


def measure_move(page, elem_id: str, target: float, label: str, timeout_ms: float) -> Move:
    before = _slider_value(page, elem_id)
    drag(page, elem_id, target)
    page.wait_for_function("() => (window.__viasdLatency.events || []).some(e => e.key === 'status')",
                           timeout=timeout_ms)
    status = _wait_status(page, FINISHED, timeout_ms)
    page.wait_for_timeout(400)  # let the last streamed update land
    lat = page.evaluate("() => window.__viasdLatency")
    release = lat["release"]
    shown = [e["t"] for e in lat["events"] if e["key"] in ("tokens", "metrics")]
    status_times = [e["t"] for e in lat["events"] if e["key"] == "status"]
    done = (max(shown) if shown else min(status_times)) - release  # nothing re-drawn: the status says it is current
    first = (min(shown) if shown else min(status_times)) - release
    server = re.search(r"Re-routed in ([\d.]+) s", status)
    return Move(label, before, _slider_value(page, elem_id), done, first,
                float(server.group(1)) * 1000 if server else None)


def presets(tokens: int) -> dict[str, tuple[Settings, tuple[str, str] | None]]:
    """The settings each measured screen runs (and the models it needs): the opening screen, the three-tier
    self-drafter chat run one click away from it, and the real Qwen2.5-Coder pair when it can load here."""
    found = {"opening": (Settings(max_new_tokens=tokens), None),
             "three-tier self-drafter": (THREE_TIER.with_(max_new_tokens=tokens), None)}
    pair = pair_settings(tokens)
    if pair is not None:
        found["Qwen2.5-Coder pair"] = pair
    return found


def pair_settings(tokens: int) -> tuple[Settings, tuple[str, str]] | None:
    """The pair's recommended settings on a code prompt, or None when the pair cannot load on this machine."""
    for preset, found in available_presets():
        if "qwen2.5-coder" in preset.verifier.lower() and found.available:
            config = PRESETS["qwen2.5-coder"] if "qwen2.5-coder" in PRESETS else LOOKUP_PRESET
            prompt = load_prompts("code")[0].text if "code" in FAMILIES else Settings.prompt
            return Settings.of(config.with_(max_new_tokens=tokens), prompt), (preset.verifier, preset.drafter)
    return None


def measure_preset(browser, url: str, label: str, settings: Settings, models: tuple[str, str] | None,
                   notches: int, timeout_s: float) -> list[Move]:
    """Open the preset by its link (run=1), wait for the run and its prefetch, then time the moves."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    jobs = PREFETCHER.scheduled
    page.goto(url + query_of(settings, run=True, models=models), wait_until="domcontentloaded")
    page.wait_for_selector("#viasd-run", timeout=120_000)
    _wait_status(page, r"^Done", timeout_s * 1000)
    started = time.perf_counter()  # "Done" shows before the figures; the prefetch is scheduled after them
    while PREFETCHER.scheduled == jobs and time.perf_counter() - started < 60:
        time.sleep(0.05)
    PREFETCHER.wait(timeout=timeout_s)  # the live experience: neighbours are warm
    page.evaluate(OBSERVE, WATCHED)
    moves, start = [], _slider_value(page, "viasd-tau-accept")
    for i in range(notches):
        target = round(start - STEP if i % 2 == 0 else start, 4)
        moves.append(measure_move(page, "viasd-tau-accept", target, f"{label}: one notch τ_accept", timeout_s * 1000))
        PREFETCHER.wait(timeout=timeout_s)
    far = 0.1 if settings.tau_slim > 0.2 else 0.6
    moves.append(measure_move(page, "viasd-tau-slim", far, f"{label}: far jump τ_slim → {far}", timeout_s * 1000))
    page.close()
    return moves


def run(notches: int, tokens: int, headed: bool = False, timeout_s: float = 600.0, only: str = "") -> Results:
    from playwright.sync_api import sync_playwright

    demo, url = launch()
    results = Results()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=not headed)
            for label, (settings, models) in presets(tokens).items():
                if only and only not in label:
                    continue
                results.moves += measure_preset(browser, url, label, settings, models, notches, timeout_s)
                print(results.table(label), flush=True)
            browser.close()
    finally:
        PREFETCHER.stop()
        demo.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notches", type=int, default=20, help="one-notch moves to time per preset (default 20)")
    parser.add_argument("--tokens", type=int, default=100, help="max new tokens of each run (default 100)")
    parser.add_argument("--only", default="", help="measure only the presets whose name contains this")
    parser.add_argument("--headed", action="store_true", help="show the browser window")
    args = parser.parse_args()
    started = time.perf_counter()
    before = os.getloadavg()
    results = run(args.notches, args.tokens, args.headed, only=args.only)
    print()
    print(results.table())
    print(results.verdict())
    after = os.getloadavg()
    print(f"\n(total {time.perf_counter() - started:.0f} s; load average {before[0]:.2f} at the start, "
          f"{after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f} (1/5/15 min) at the end; "
          f"{os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
