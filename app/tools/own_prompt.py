"""`python -m app.tools.own_prompt`: after a visitor's own prompt runs, how soon words differing, the τ_accept line
and far τ_accept moves answer, as ratios to the run's own wall time T, in real Chromium.

Launches the app in this process and, for each held-out prompt below (code, chat, grounded: written apart from
`examples/`), opens a share link that loads the `--verifier` and runs the prompt (as a visitor's Run does: the
memo allowed, the background grid scheduled after it). In the page it stamps (performance.now(), a MutationObserver):
  * T: the status line first saying "Running" -> first saying "Done" (the run's own wall time, model loaded);
  * words differing: "Done" -> the headline's words-differing number on screen (not "…");
  * the line: "Done" -> the page saying every notch of the τ_accept line at the run's τ_slim and γ is ready;
  * the reliability charts: "Done" -> the confidence histogram drawn (measured in the background after the line);
then times far τ_accept moves (clicks on the track) until the text and headline are final; last, with nothing in the
background, it times each prompt's settings as `python -m core` runs them (every pass for real, on the same loaded
models and the same one thread) against T and against the run's own decoding time (its trace's wall clock: T
without the page's part). It prints one table with each target met or missed, the load average and the CPU.
`--no-kv-reuse` and `--plain-reference` measure the baselines the KV pool and the fast reference replaced. Needs
playwright and /usr/bin/chromium; hold the heavy-work lock (it loads the verifier) and run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time

import torch

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from app import (
    fidelity_cache,  # noqa: E402  (after the analytics default)
    recorded,  # noqa: E402
)
from app.grids import GRIDS, models_of  # noqa: E402
from app.model_thread import on_model_thread  # noqa: E402
from app.prefetch import PREFETCHER  # noqa: E402
from app.session import SESSIONS  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.share import query_of  # noqa: E402
from app.tools.latency import ARGS, CHROMIUM, OBSERVE, click_track, launch  # noqa: E402
from core.analysis.fast_reference import exact_reference  # noqa: E402
from core.decoding.engine import generate  # noqa: E402
from core.models import precision  # noqa: E402
from core.sweeps.grid import Point  # noqa: E402

PROMPTS = {
    "code": "Write a Python function that returns the n-th triangular number, with a one-line docstring.",
    "chat": "Give me three short tips for staying focused while studying at home.",
    "grounded": "Rewrite this sentence in plain words, keeping every fact: The committee postponed the vote on the "
                "new library budget until March because two members were absent.",
}
"""Held-out prompts, one per family (none is in examples/)."""
FAR = (0.4, 0.95, 0.5, 0.35, 0.9, 0.45)
"""τ_accept values clicked in turn: each at least two notches from the one before."""
TARGETS = {"words": 0.3, "line": 2.0}
"""Targets as multiples of T after Done; far moves: median 1 s, max 3 s."""
STAMPS = """() => {
  const s = window.__own = {status: [], words: null, line: null, charts: null, emptied: false};
  // textContent, not innerText: reading innerText lays the page out, on every mutation of a streaming run
  const text = (sel) => ((document.querySelector(sel) || {}).textContent || '').replace(/\\s+/g, ' ').trim();
  const look = () => {
    const now = performance.now(), status = text('#viasd-status');
    if (!s.status.length || s.status[s.status.length - 1].text !== status) s.status.push({t: now, text: status});
    const done = s.status.find((e) => /^Done/.test(e.text));
    if (!done) return;
    const values = Array.from(document.querySelectorAll('#viasd-headline .value')).map((e) => e.textContent);
    if (s.words === null && values.length > 2 && /%/.test(values[2])) s.words = now;
    if (s.line === null && /τ_accept line at [^:]*: all \\d+ notches ready/.test(text('#viasd-notch'))) s.line = now;
    const bars = !!document.querySelector('#viasd-conf-plot .barlayer .point');  // the run's final update empties
    if (!bars) s.emptied = true;  // the chart (its data comes later); an earlier screen's bars do not count
    if (s.charts === null && s.emptied && bars) s.charts = now;
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
  setInterval(look, 100);
}"""


def settings_for(prompt: str, tokens: int) -> Settings:
    """The run a visitor makes on the verifier alone: three tiers with the self-drafter."""
    return Settings(prompt=prompt, mode="via", drafter="self", draft_route="skip-middle-25",
                    slim_route="calibrated-slim", gamma=4, tau_accept=0.8, tau_slim=0.55, max_new_tokens=tokens)


def opening_settings(prompt: str, tokens: int) -> tuple[Settings, tuple[str, str, str]]:
    """The run a visitor makes by typing a prompt on the opening screen and pressing Run (the issue's own case): the
    recorded pair's settings and models (the 0.5B drafter, γ 6, τ_slim off) with this prompt."""
    grid = recorded.load(recorded.PRESETS["opening"])
    return Settings.of(grid.config, prompt).with_(max_new_tokens=tokens), recorded.models_named(grid.recorded)


def measure_prompt(page, url: str, label: str, settings: Settings, models: tuple[str, str, str],
                   timeout_s: float) -> dict:
    """One prompt: open its run link, stamp T / words / line, then time the far moves."""
    page.goto(url + query_of(settings, run=True, models=models[:2], drafter_quant=models[2] or None),
              wait_until="commit")
    page.wait_for_function("() => !!document.querySelector('#viasd-status')", timeout=60_000)
    page.evaluate(STAMPS)
    page.wait_for_function("() => window.__own.line !== null || (window.__own.status.some(e => /^Done/.test(e.text))"
                           " && /all \\d+ points/.test(document.querySelector('#viasd-notch')?.textContent || ''))",
                           timeout=timeout_s * 1000, polling=250)
    own = page.evaluate("() => window.__own")
    start = next(e["t"] for e in own["status"] if "Running" in e["text"])
    done = next(e["t"] for e in own["status"] if e["text"].startswith("Done"))
    row = {"prompt": label, "T": (done - start) / 1000, "words": _after(own["words"], done),
           "line": _after(own["line"], done)}
    page.wait_for_function("() => window.__own.charts !== null", timeout=timeout_s * 1000, polling=250)
    row["charts"] = _after(page.evaluate("() => window.__own.charts"), done)  # the reliability charts
    page.wait_for_timeout(500)
    page.evaluate(OBSERVE)
    moves = []
    for value in FAR:
        moved, _ = click_track(page, value)
        moves.append(moved / 1000 if moved == moved else 0.0)  # NaN: nothing had to change
    row["moves"] = moves
    return row


def cli_wall(bundle: object, prompt: str, settings: Settings) -> tuple[float, float | None]:
    """(seconds the same settings take as `python -m core` runs them, every pass for real after a 2-token warm-up;
    the app's own run's decoding seconds, as its trace recorded them, or None when its grid is gone)."""
    config = settings.config()
    on_model_thread(generate, bundle, prompt, config.with_(mode="plain", max_new_tokens=2), replay=False)
    started = time.perf_counter()
    trace = on_model_thread(generate, bundle, prompt, config, replay=False)  # one thread runs torch, as the CLI's
    seconds = time.perf_counter() - started
    grid = GRIDS.find(prompt, trace.config, models_of(trace))
    own = grid.trace(Point.of(grid.config)) if grid is not None else None
    return seconds, own.wall_s if own is not None else None


def _after(stamp: float | None, done: float) -> float | None:
    return None if stamp is None else (stamp - done) / 1000


def _ratio(row: dict, key: str) -> str:
    value = row[key]
    if value is None:
        return "not seen"
    verdict = "met" if value <= TARGETS[key] * row["T"] else "missed"
    return f"{value:.1f} s = {value / row['T']:.2f} T ({verdict}, target ≤ {TARGETS[key]:g} T)"


def table(rows: list[dict]) -> str:
    lines = ["| prompt | T (s) | T, the run's decoding / `python -m core` | words differing after Done | "
             "τ_accept line after Done | reliability charts after Done | far moves median / max |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = functools.partial(_ratio, r)
        med, top = statistics.median(r["moves"]), max(r["moves"])
        verdict = "met" if med <= 1.0 and top <= 3.0 else "missed"
        cli = (f"{r['T'] / r['cli']:.2f} / {r['decode'] / r['cli']:.2f} ({r['cli']:.1f} s)" if r.get("cli") and
               r.get("decode") else "not run")
        charts = f"{r['charts']:.1f} s = {r['charts'] / r['T']:.2f} T" if r.get("charts") is not None else "not seen"
        lines.append(f"| {r['prompt']} | {r['T']:.1f} | {cli} | {ratio('words')} | {ratio('line')} | {charts} | "
                     f"{med:.2f} / {top:.2f} s ({verdict}, target ≤ 1 / 3 s) |")
    return "\n".join(lines)


def cpu_class() -> str:
    try:
        name = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    extras = " + ".join(x for f, x in (("avx512_bf16", "AVX512-BF16"), ("amx_bf16", "AMX")) if f in flags)
    return (f"{name}, {os.cpu_count()} CPUs, {isa}{' + ' + extras if extras else ''}; class "
            f"{precision.cpu_class(torch.device('cpu'))} (torch dispatch included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verifier", default="embedded:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--dtype", default=None, help="the verifier's precision (default: the loader's, 'auto')")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per run (default 64)")
    parser.add_argument("--only", default="", help="measure only the prompts whose family contains this")
    parser.add_argument("--plain-reference", action="store_true",
                        help="decode words differing's reference plainly, as before the fast reference (a baseline)")
    parser.add_argument("--no-kv-reuse", action="store_true",
                        help="start every run's KV caches empty, as before the KV pool (a baseline)")
    parser.add_argument("--opening", action="store_true",
                        help="the opening screen's recorded pair and settings instead of the verifier alone")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for one prompt's line")
    args = parser.parse_args()
    if args.dtype:
        SESSIONS._loader = functools.partial(SESSIONS._loader, dtype=args.dtype)  # a measuring tool's override
    if args.no_kv_reuse:
        SESSIONS.memo.caches.max_bytes = 0  # nothing is pooled, so nothing is lent
    if args.plain_reference:
        fidelity_cache.exact_reference = functools.partial(exact_reference, use_memo=False)
    from playwright.sync_api import sync_playwright

    def run_of(prompt: str) -> tuple[Settings, tuple[str, str, str]]:
        if args.opening:
            return opening_settings(prompt, args.tokens)
        return settings_for(prompt, args.tokens), (args.verifier, "", "")

    before = os.getloadavg()
    demo, url = launch()
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            for label, prompt in PROMPTS.items():
                if args.only in label:
                    rows.append(measure_prompt(page, url, label, *run_of(prompt), args.timeout))
                    print(table(rows[-1:]), flush=True)
            browser.close()
        PREFETCHER.clear()  # nothing runs beside the comparison
        for row in rows:
            prompt = PROMPTS[row["prompt"]]
            settings, models = run_of(prompt)
            bundle = SESSIONS.choose("own-prompt-cli", models[0], models[1], drafter_quant=models[2] or None)
            row["cli"], row["decode"] = cli_wall(bundle, prompt, settings)
    finally:
        PREFETCHER.stop()
        demo.close()
    after = os.getloadavg()
    print()
    print(table(rows))
    reference = "plain reference (baseline)" if args.plain_reference else "fast reference"
    reference += ", KV caches not reused (baseline)" if args.no_kv_reuse else ", KV caches reused between runs"
    which = "the opening's pair and settings" if args.opening else f"{args.verifier} alone, the self-drafter"
    print(f"\n{which} ({args.dtype or 'auto'}), {args.tokens} new tokens, {reference}; "
          f"CPU: {cpu_class()}; load average "
          f"{before[0]:.2f} at the start, {after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f} at the end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
