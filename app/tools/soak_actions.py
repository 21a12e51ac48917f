"""What a soak visitor does, one action at a time, through the app's real HTTP API.

A visitor is one browser session (one `gradio_client.Client`); a shared link or the Classroom opens a
new tab (`app.tools.page_client.Page`), as a browser would. Every action returns an `Answer`: when it
began, how long it took, the longest queue it met, its error, and `check`: what the answer claims, to
be verified after the soak against a fresh engine run (app/tools/soak_check.py). Settings come from
small pools (soak_pools.py), so the same request recurs and the checker computes each reference once.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from app.share import query_of
from app.tools import soak_pools as pools
from app.tools.hostile import HOSTILE, SAFE, error_problem, kind_of, problem
from app.tools.load_test import call_kwargs, find_trace
from app.tools.page_client import EventError, Page

PAIR = (pools.QWEN_CODER_PAIR.verifier, pools.QWEN_CODER_PAIR.drafter)
PUTS_A_RUN_ON_SCREEN = frozenset({"/generate", "/rerun_real", "/reroute", "/load_models"})
"""The endpoints whose answer replaces the run on screen (the one a slider re-routes)."""


@dataclass
class Answer:
    """One action and what came back."""

    action: str
    visitor: int
    at_s: float
    latency_s: float = 0.0
    queue: int = 0
    error: str = ""
    check: dict[str, Any] | None = field(default=None, repr=False)
    wrong: str = ""


class Visitor:
    """One browser session of the soak: its client, its models and the run it has on screen."""

    def __init__(self, index: int, url: str, seed: int, started: float, downloads: str,
                 timeout_s: float = 600.0) -> None:
        from gradio_client import Client

        self.index, self.url, self.started, self.timeout_s = index, url, started, timeout_s
        self.rng = random.Random(seed)
        # a busy app answers its config slowly too: the client waits as a browser would, not gradio_client's 5 s
        self.client = Client(url, verbose=False, httpx_kwargs={"timeout": 120.0}, download_files=downloads,
                             analytics_enabled=False)
        self.api = self.client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        self.models: tuple[str, str] | None = None  # the pair once this visitor loaded it
        self.shown: pools.Settings | None = None  # the run on screen: what a re-route moves from

    def submit(self, endpoint: str, values: dict[str, Any], answer: Answer, stop_after_first: bool = False) -> Any:
        """Call an endpoint, noting the longest queue it met; with `stop_after_first`, press Stop once the run
        has streamed its first update (a Stop while still queued would stop nothing)."""
        job = self.client.submit(api_name=endpoint, **call_kwargs(self.api[endpoint]["parameters"], values))
        began, stopped = time.perf_counter(), False
        while not job.done():
            answer.queue = max(answer.queue, job.status().queue_size or 0)
            if stop_after_first and not stopped and job.outputs():
                self.client.predict(api_name="/stop")
                stopped = True
            if time.perf_counter() - began > self.timeout_s:
                raise TimeoutError(f"{endpoint} gave no answer within {self.timeout_s:.0f} s")
            time.sleep(0.05)
        answer.latency_s = time.perf_counter() - began
        return job.result()

    def answer(self, action: str) -> Answer:
        return Answer(action, self.index, time.monotonic() - self.started)

    def settings(self, via: bool = False) -> pools.Settings:
        return pools.pair_settings(self.rng) if self.models else pools.smol_settings(self.rng, via)


def _trace_of(result: Any) -> dict:
    """The trace an answer carries; an answer whose status line is the app's warning, or that carries no trace,
    is an error (named with its status line, so a refusal can be told from a lost file)."""
    status = result[1] if isinstance(result, (list, tuple)) and len(result) > 1 else ""
    if isinstance(status, str) and status.startswith("⚠"):
        raise EventError(status[:200])
    trace = find_trace(result)
    if trace is None:
        raise EventError(f"no trace in the answer (status: {str(status)[:160]!r})")
    return trace


def _tokens_check(trace: dict, asked: pools.Settings, models: tuple[str, str] | None, replay: bool,
                  stopped: bool = False) -> dict:
    return {"kind": "tokens", "asked": asked, "models": models, "replay": replay, "stopped": stopped,
            "trace": {key: trace[key] for key in ("prompt", "config", "models", "stop_reason")},
            "token_ids": [t["token_id"] for t in trace["tokens"]], "audit": [t.get("audit") for t in trace["tokens"]]}


def run(v: Visitor, real: bool = False, via: bool = False) -> Answer:
    """Run (or Re-run for real timing) with settings from the pool."""
    answer, settings = v.answer("real timing" if real else ("pair run" if v.models else "run")), v.settings(via)
    result = v.submit("/rerun_real" if real else "/generate", pools.values(settings), answer)
    answer.check = _tokens_check(_trace_of(result), settings, v.models, replay=not real)
    v.shown = settings
    return answer


def reroute(v: Visitor, far: bool = False) -> Answer:
    """Release a threshold slider one notch away (or jump far) from the run on screen."""
    if v.shown is None or v.shown.mode != "via":
        return run(v, via=True)  # nothing to re-route on screen: a visitor runs VIA-SD first, then drags
    moved = pools.moved(v.shown, v.rng, far)
    answer = v.answer(("far jump" if far else "re-route") + (" (pair)" if v.models else ""))
    result = v.submit("/reroute", pools.values(moved), answer)
    answer.check = {**_tokens_check(_trace_of(result), moved, v.models, replay=True), "snaps": True}
    v.shown = moved
    return answer


def stop(v: Visitor) -> Answer:
    """Start a long run and press Stop once it streams: a partial answer, checked as a prefix."""
    answer, settings = v.answer("stop"), v.settings().with_(max_new_tokens=pools.LONG_TOKENS)
    result = v.submit("/generate", pools.values(settings), answer, stop_after_first=True)
    answer.check = _tokens_check(_trace_of(result), settings, v.models, replay=True, stopped=True)
    v.shown = settings
    return answer


def link(v: Visitor) -> Answer:
    """Open a shared link with run=1 in a new tab: its settings are applied on load, then it runs."""
    answer, settings = v.answer("link"), v.settings()
    began = time.perf_counter()
    with Page(v.url, query_of(settings, run=True, models=v.models), v.timeout_s) as page:
        outputs = page.load()[-1][1]  # the run chained after the settings were applied
        status = outputs[1] if len(outputs) > 1 else ""
        if isinstance(status, str) and status.startswith("⚠"):
            raise EventError(status[:200])
        files = [f for out in outputs if isinstance(out, list) for f in out if isinstance(f, dict) and "url" in f]
        trace_file = next((f for f in files if str(f.get("orig_name") or f.get("path")).endswith(".json")), None)
        trace = pools.json_or_none(page.file_text(trace_file)) if trace_file else None
    if trace is None:
        raise EventError(f"no trace file in the link's answer (status: {str(status)[:160]!r})")
    answer.latency_s = time.perf_counter() - began
    answer.check = _tokens_check(trace, settings, v.models, replay=True)
    return answer


def compare(v: Visitor) -> Answer:
    """Compare plain / classic SD / VIA-SD on the visitor's settings (memo on)."""
    answer, settings = v.answer("compare"), v.settings()
    result = v.submit("/compare", {**pools.values(settings), "real_timing": False}, answer)
    texts = dict(zip(("plain", "sd", "via"), result[:3], strict=True))
    answer.check = {"kind": "compare", "asked": settings, "models": v.models, "html": texts, "status": result[4]}
    return answer


def grid(v: Visitor) -> Answer:
    """The Compare tab's threshold grid on the visitor's settings."""
    answer, settings = v.answer("grid"), v.settings().with_(mode="via")
    result = v.submit("/grid", {**pools.values(settings), "values_text": pools.GRID_VALUES}, answer)
    answer.check = {"kind": "grid", "asked": settings, "models": v.models, "table": result[1], "status": result[2]}
    return answer


def schemes(v: Visitor) -> Answer:
    """VIA-SD beside BiLD and the cascades on the visitor's settings."""
    answer, settings = v.answer("schemes"), v.settings().with_(mode="via", max_new_tokens=pools.SCHEME_TOKENS)
    result = v.submit("/schemes", pools.values(settings), answer)
    answer.check = {"kind": "schemes", "asked": settings, "models": v.models, "plot": result[0], "status": result[1]}
    return answer


def classroom(v: Visitor) -> Answer:
    """Open the Classroom in a new tab, load a walkthrough and step through its rounds with the slider."""
    answer, title = v.answer("classroom"), v.rng.choice(pools.walkthrough_titles())
    began = time.perf_counter()
    with Page(v.url, "", v.timeout_s) as page:
        picker, slider = page.element("viasd-walk-pick"), page.element("viasd-round-slider")
        load = next(i for i, d in page.dependencies.items() if d.get("api_name") == "walkthrough")
        change = next(i for i, d in page.dependencies.items() if [slider, "change"] in d["targets"])
        page.values[picker] = title
        heading, rounds = page.call(load)[:2]
        last = rounds.get("maximum", 1) if isinstance(rounds, dict) else 1
        steps = []
        for number in sorted({2, last // 2, last} - {0, 1}):
            page.values[slider] = number
            steps.append((number, page.call(change)))
    answer.latency_s = time.perf_counter() - began
    answer.check = {"kind": "classroom", "title": title, "models": None, "heading": heading, "rounds": last,
                    "steps": steps}
    return answer


def hostile(v: Visitor) -> Answer:
    """One hostile value in one parameter of one endpoint (the fuzz classes); the answer must stay one line."""
    # a hostile model load could move a visitor on the pair back to SmolLM2 behind the soak's back
    endpoint = v.rng.choice(sorted(e for e in v.api if not (v.models and e == "/load_models")))
    parameters = v.api[endpoint]["parameters"]
    answer = v.answer("hostile")
    if endpoint in PUTS_A_RUN_ON_SCREEN:
        # a hostile value the app takes (an odd prompt, a clamped number) puts that run on screen: a re-route sent
        # after it from the run the visitor remembers would be refused ("the settings changed since the run shown")
        v.shown = None
    if not parameters:
        v.submit(endpoint, {}, answer)
        return answer
    target = v.rng.choice(parameters)
    kind, value = kind_of(target), v.rng.choice(HOSTILE[kind_of(target)])
    safe = {p["parameter_name"]: SAFE[p["parameter_name"]] for p in parameters if p["parameter_name"] in SAFE}
    where = f"{endpoint} {target['parameter_name']}={str(value)[:20]!r}"
    try:
        result = v.submit(endpoint, {**safe, target["parameter_name"]: value}, answer)
    except Exception as exc:  # noqa: BLE001  (an error is the expected answer; its form is what is checked)
        found = error_problem(str(exc).strip(), kind, value)
        answer.error = f"{where}: {found}" if found else ""
        return answer
    texts = [t for t in (result if isinstance(result, (list, tuple)) else [result]) if isinstance(t, str)]
    found = next((problem(t) for t in texts if problem(t)), "")
    answer.error = f"{where}: {found}" if found else ""
    return answer


def switch(v: Visitor) -> Answer:
    """Load the offline pair for this session (one copy for everyone), or go back to the embedded model."""
    to_pair = v.models is None
    answer = v.answer("load pair" if to_pair else "back to SmolLM2")
    verifier, drafter = PAIR if to_pair else ("", "")
    result = v.submit("/load_models", {"verifier": verifier, "drafter": drafter, "prompt": SAFE["prompt"]}, answer)
    status = result[0] if isinstance(result, (list, tuple)) else str(result)
    if "Models ready" not in str(status):
        answer.error = f"the models did not load: {str(status)[:200]}"
        return answer
    v.models, v.shown = (PAIR if to_pair else None), None
    return answer


ACTIONS = {"run": run, "real timing": lambda v: run(v, real=True), "re-route": reroute,
           "far jump": lambda v: reroute(v, far=True), "stop": stop, "link": link, "compare": compare, "grid": grid,
           "schemes": schemes, "classroom": classroom, "hostile": hostile, "switch": switch}
