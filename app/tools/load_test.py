"""Load test: N visitors at once on loopback, each with its own prompt, each checking its own answer.

    python -m app.tools.load_test --clients 20            # launches `python app.py` on a free 127.0.0.1 port
    python -m app.tools.load_test --clients 5 --url http://127.0.0.1:7860/

Every visitor is a separate `gradio_client.Client` calling /generate with its own prompt (modes
plain, classic SD and VIA-SD in turn, a few tokens each). Its answer is checked twice: the trace it
downloads names its own prompt and mode, and its tokens equal what the engine produces for that
prompt and that trace's settings in a fresh run (memo off) in this process. Parameters are filled
from the app's own API description (`view_api`), so the test follows the app when its widgets change.
Bounded: at most 100 clients, each with a time limit; prints p50/p95 latency, errors and whether the
app still answers afterwards. Exit status 1 when any client failed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.settings import Settings

TOPICS = ["photosynthesis", "a rainbow", "gravity", "a volcano", "the moon", "a bicycle", "bread", "a comet",
          "the ocean", "a library", "thunder", "a glacier", "honey", "a compass", "electricity", "a forest",
          "a telescope", "chess", "a river", "snow", "a lighthouse", "coffee", "a spider web", "the wind"]
MODES = ("plain", "sd", "via")
MAX_CLIENTS = 100


def prompt_for(index: int) -> str:
    """A prompt of one's own: a different topic per client (numbered beyond the list)."""
    topic = TOPICS[index % len(TOPICS)]
    suffix = f" (question {index + 1})" if index >= len(TOPICS) else ""
    return f"In one sentence, what is {topic}?{suffix}"


def endpoint_parameters(client: object, api_name: str) -> list[dict]:
    """The declared parameters of one endpoint, from the app's API description."""
    api = client.view_api(return_format="dict", print_info=False)
    return api["named_endpoints"][api_name]["parameters"]


def call_kwargs(parameters: list[dict], values: dict[str, object]) -> dict[str, object]:
    """Keyword arguments for an endpoint: `values` where a parameter of that name exists, else the API's default
    for a setting (`app.settings.Settings`: the embedded model's prompt-lookup preset; the page's own widgets
    open on the recorded pair, whose drafter model a default session does not have), else the endpoint's."""
    kwargs, defaults = {}, asdict(Settings())
    for p in parameters:
        name = p["parameter_name"]
        if name in values:
            kwargs[name] = values[name]
        elif name in defaults:
            kwargs[name] = defaults[name]
        elif p.get("parameter_has_default"):
            kwargs[name] = p.get("parameter_default")
        else:
            kwargs[name] = p.get("example_input")
    return kwargs


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def find_trace(result: object) -> dict | None:
    """The trace JSON among an endpoint's outputs (gradio_client downloads files and returns their paths)."""
    for text in _strings(result):
        if text.endswith(".json") and len(text) < 4096 and os.path.isfile(text):
            data = json.loads(Path(text).read_text())
            if isinstance(data, dict) and "prompt" in data and "tokens" in data:
                return data
    return None


@dataclass
class Visit:
    """One client's request and what came back."""

    index: int
    prompt: str
    mode: str
    latency_s: float = 0.0
    error: str = ""
    trace: dict | None = field(default=None, repr=False)


def _visit(url: str, visit: Visit, tokens: int, timeout_s: float, start: threading.Barrier) -> None:
    from gradio_client import Client

    try:
        client = Client(url, verbose=False)
        kwargs = call_kwargs(endpoint_parameters(client, "/generate"),
                             {"prompt": visit.prompt, "mode": visit.mode, "max_new_tokens": tokens})
        start.wait(timeout=timeout_s)
        began = time.perf_counter()
        result = client.submit(api_name="/generate", **kwargs).result(timeout=timeout_s)
        visit.latency_s = time.perf_counter() - began
        visit.trace = find_trace(result)
        if visit.trace is None:
            visit.error = f"no trace in the answer: {str(result)[:200]}"
    except Exception as exc:  # noqa: BLE001  (every failure is counted, none stops the others)
        visit.error = f"{type(exc).__name__}: {str(exc).strip()[:200]}"


def check_answers(visits: list[Visit], tokens: int) -> None:
    """Each answer must carry its own prompt and mode and equal a fresh engine run with its settings."""
    from core import DecodeConfig, generate, load_bundle

    bundle = None
    for visit in visits:
        if visit.error or visit.trace is None:
            continue
        trace = visit.trace
        if trace["prompt"] != visit.prompt or trace["config"]["mode"] != visit.mode:
            visit.error = f"got someone else's answer: {trace['prompt'][:60]!r} ({trace['config']['mode']})"
            continue
        bundle = bundle or load_bundle(trace["models"]["verifier"])
        config = DecodeConfig.from_dict(trace["config"])
        expected = generate(bundle, visit.prompt, config, replay=False).token_ids
        got = [t["token_id"] for t in trace["tokens"]]
        if got != expected or len(got) > tokens:
            visit.error = f"answer differs from a fresh engine run ({len(got)} vs {len(expected)} tokens)"


@dataclass
class LoadReport:
    clients: int
    tokens: int
    visits: list[Visit]
    wall_s: float
    answers_after: bool

    @property
    def errors(self) -> list[Visit]:
        return [v for v in self.visits if v.error]

    def latency(self, q: float) -> float:
        values = sorted(v.latency_s for v in self.visits if not v.error)
        if not values:
            return float("nan")
        return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]

    def table(self) -> str:
        ok = len(self.visits) - len(self.errors)
        lines = ["| clients | new tokens | answered correctly | errors | p50 latency | p95 latency | max | wall | "
                 "answers afterwards |", "|---|---|---|---|---|---|---|---|---|",
                 f"| {self.clients} | {self.tokens} | {ok} | {len(self.errors)} | {self.latency(50):.1f} s | "
                 f"{self.latency(95):.1f} s | {max((v.latency_s for v in self.visits), default=0):.1f} s | "
                 f"{self.wall_s:.1f} s | {'yes' if self.answers_after else 'NO'} |"]
        lines += [f"- client {v.index} ({v.mode}): {v.error}" for v in self.errors]
        return "\n".join(lines)


def run_load(url: str, clients: int, tokens: int = 12, timeout_s: float = 600.0, check: bool = True) -> LoadReport:
    """Send `clients` concurrent /generate requests (released together), then one more; check each answer."""
    if not 1 <= clients <= MAX_CLIENTS:
        raise ValueError(f"clients must be from 1 to {MAX_CLIENTS}")
    visits = [Visit(i, prompt_for(i), MODES[i % len(MODES)]) for i in range(clients)]
    start = threading.Barrier(clients)
    threads = [threading.Thread(target=_visit, args=(url, v, tokens, timeout_s, start), daemon=True) for v in visits]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout_s * 2)
    wall = time.perf_counter() - began
    for visit, thread in zip(visits, threads, strict=True):
        if thread.is_alive():
            visit.error = visit.error or f"no answer within {timeout_s * 2:.0f} s"
    after = Visit(clients, "After the crowd: what is a kite?", "plain")
    _visit(url, after, 4, timeout_s, threading.Barrier(1))
    if check:
        check_answers(visits + [after], tokens)
    return LoadReport(clients, tokens, visits, wall, answers_after=not after.error)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_app(timeout_s: float = 300.0, log: Path | None = None, env: dict[str, str] | None = None
               ) -> tuple[subprocess.Popen, str]:
    """Start `python app.py` on a free loopback port and wait until it answers; its output goes to `log`
    when given (a long run's output would fill a pipe nobody reads), else its errors to a pipe; `env` adds
    variables to its environment."""
    import urllib.request

    port = _free_port()
    env = dict(os.environ, **(env or {}), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    root = Path(__file__).resolve().parents[2]
    output = open(log, "w") if log else None  # noqa: SIM115  (the child holds it; ours closes with the process)
    process = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env,
                               stdout=output or subprocess.DEVNULL, stderr=subprocess.STDOUT if output
                               else subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = log.read_text() if log else process.stderr.read()
            raise RuntimeError(f"app.py exited: {said[-500:]}")
        try:
            urllib.request.urlopen(url + "config", timeout=2).close()
            return process, url
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"app.py did not answer on {url} within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20, help=f"concurrent visitors (1-{MAX_CLIENTS})")
    parser.add_argument("--tokens", type=int, default=12, help="new tokens per request")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each client waits at most")
    parser.add_argument("--url", help="an app already running (default: launch app.py on loopback)")
    args = parser.parse_args(argv)
    process = None
    url = args.url
    if url is None:
        process, url = launch_app()
    try:
        report = run_load(url, args.clients, args.tokens, args.timeout)
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    print(f"Load test, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, app at {url}")
    print(report.table())
    return 1 if report.errors or not report.answers_after else 0


if __name__ == "__main__":
    sys.exit(main())
