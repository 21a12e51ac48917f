"""The soak's parts without an app: its targets fail on the memory growth the issue saw, its slider moves stay in
a small set, and its checker refuses a wrong, a foreign and a badly stopped answer (tiny random models)."""

from __future__ import annotations

import csv
import random
import threading
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from tiny import tiny_bundle

from app.settings import Settings
from app.tools import soak_pools as pools
from app.tools.soak_actions import Answer
from app.tools.soak_check import Checker, shown_text
from app.tools.soak_report import Sample, SoakReport
from core import generate

ROUTES = {"draft_route": "skip-middle-50", "slim_route": "skip-middle-25"}


def report(rss: list[float], threads: list[int] | None = None, latency: float = 1.0) -> SoakReport:
    """Samples every 30 s over len(rss) / 2 minutes; one re-route and one run per sample."""
    samples = [Sample(30.0 * i, mb, (threads or [40] * len(rss))[i], 60) for i, mb in enumerate(rss)]
    answers = [Answer(action, 0, 30.0 * i + 1, latency_s=latency) for i in range(len(rss)) for action in
               ("re-route", "run")]
    return SoakReport(answers, samples, minutes=len(rss) / 2, warmup_min=10)


def met(soak: SoakReport) -> dict[str, bool]:
    return {name: ok for name, ok, _ in soak.verdicts()}


def test_the_issue_s_memory_growth_misses_the_target_and_flat_memory_meets_it() -> None:
    flat = report([2000.0 + (i % 3) for i in range(40)])
    assert all(ok for _, ok, _ in flat.verdicts()), flat.table()
    # 2018 MB at minute 3 to 2339 MB at minute 10 and still rising: +16 % in 7 minutes
    rising = report([2018.0 + 321.0 * max(0, i - 6) / 14 for i in range(40)])
    assert not met(rising)["resident memory within ±5% after minute 10"], rising.table()
    assert "+" in next(numbers for name, _, numbers in rising.verdicts() if name.startswith("resident"))


def test_threads_that_pile_up_and_a_slower_end_miss_their_targets() -> None:
    soak = report([2000.0] * 40, threads=[40] * 20 + [41 + i for i in range(20)])
    assert not met(soak)["no growth in threads"] and met(soak)["no growth in handles"]
    slow = report([2000.0] * 40)
    for answer in slow.answers:
        answer.latency_s = 1.0 if answer.at_s < 600 else 3.0
    assert not any(ok for name, ok, _ in slow.verdicts() if name.startswith("p95")), slow.table()
    wrong = report([2000.0] * 40)
    wrong.answers[3].wrong, wrong.answers[5].error = "tokens differ", "boom"
    assert met(wrong)["0 errors"] is False and met(wrong)["0 wrong answers"] is False


def test_a_pool_that_follows_demand_is_not_growth_but_a_thread_or_handle_never_given_back_is() -> None:
    """The sixth soak: only Gradio's workers (1-5, cap 8) and the prefetch thread came and went, and a
    peak-against-peak count failed with nothing piling up. What is never given back lifts the fewest."""
    busier_late = [12, 16] * 10 + [12, 18] * 10  # workers come and go, more of them late in the hour
    assert met(report([2000.0] * 40, threads=busier_late))["no growth in threads"]
    one_kept = [n + (i > 20) for i, n in enumerate(busier_late)]  # after the warm-up, one thread never leaves
    assert not met(report([2000.0] * 40, threads=one_kept))["no growth in threads"]

    def handles(total: list[int], sockets: list[int]) -> tuple[bool, str]:
        soak = report([2000.0] * 40)
        soak.samples = [Sample(s.at_s, s.rss_mb, s.threads, n, sockets=k)
                        for s, n, k in zip(soak.samples, total, sockets, strict=True)]
        return next((ok, numbers) for name, ok, numbers in soak.verdicts() if name == "no growth in handles")

    visitors = [10, 16] * 10 + [10, 19] * 10  # their sockets open and close
    assert handles([20 + k for k in visitors], visitors)[0]
    assert "sockets, the visitors' connections: at least 10, then 10; at most 16, then 19" in \
        handles([20 + k for k in visitors], visitors)[1]
    leaked = [20 + k + i // 4 for i, k in enumerate(visitors)]  # a file opened every two minutes, never closed
    assert not handles(leaked, visitors)[0]


def test_at_rest_only_what_was_never_given_back_counts_as_growth() -> None:
    """With the soak's two rests, threads and handles are judged at rest, whatever the load did in between."""
    busier_late = [12, 16] * 10 + [13, 18] * 10  # under load, the fewest rose by one
    soak = report([2000.0] * 40, threads=busier_late)
    assert not met(soak)["no growth in threads"]  # no rests: judged by the floors under load
    soak.at_rest = [Sample(600.0, 2000.0, 11, 24), Sample(1230.0, 2000.0, 11, 24)]
    verdict = next(numbers for name, _, numbers in soak.verdicts() if name == "no growth in threads")
    assert met(soak)["no growth in threads"] and verdict.startswith("at rest 11 after the warm-up, 11 after")
    soak.at_rest[1] = Sample(1230.0, 2000.0, 11, 25)  # a handle never closed
    assert met(soak)["no growth in threads"] and not met(soak)["no growth in handles"]


def test_a_rest_waits_for_every_action_in_flight_then_notes_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from app.tools import soak

    monkeypatch.setattr(soak, "REST_S", 0.1)
    resting = soak.Soak("http://127.0.0.1:9/", os.getpid(), 1.0, 0, False, 0, Path("unused"), warmup_min=1.0)
    resting._busy = 1  # a visitor's run still going
    thread = threading.Thread(target=resting._rest)
    thread.start()
    thread.join(timeout=0.5)
    assert thread.is_alive() and not resting._awake.is_set() and not resting.at_rest  # nobody starts; not noted yet
    resting._busy = 0
    thread.join(timeout=5)
    assert resting._awake.is_set() and len(resting.at_rest) == 1
    assert resting.at_rest[0].threads >= 2 and resting.at_rest[0].handles > 0  # this process, from /proc


def test_the_csv_has_one_row_per_minute_with_memory_latency_and_counts(tmp_path: Path) -> None:
    soak = report([2000.0 + i for i in range(40)])
    soak.write_csv(tmp_path / "soak.csv")
    rows = list(csv.DictReader(open(tmp_path / "soak.csv")))
    assert len(rows) == 20 and rows[0]["minute"] == "1"
    assert {"rss_mb", "threads", "handles", "queue", "errors", "wrong", "p95 re-route", "p50 run"} <= set(rows[0])
    assert float(rows[-1]["rss_mb"]) == pytest.approx(2039.0) == float(rows[-1]["rss_max_mb"])
    assert len(soak.figure().data) == 4  # memory, its mapped-file share, and the p95 of each action


def test_slider_moves_stay_valid_and_few_per_base() -> None:
    rng = random.Random(0)
    for base in (*pools.SMOL_BASES, pools.PAIR_BASE):
        seen, shown = set(), base
        for step in range(300):
            shown = pools.moved(shown, rng, far=step % 5 == 0)
            assert pools.valid(shown.tau_accept, shown.tau_slim)
            assert shown.with_(tau_accept=base.tau_accept, tau_slim=base.tau_slim) == base
            seen.add((shown.tau_accept, shown.tau_slim))
        assert len(seen) <= 7, (base, seen)


def test_the_compare_box_text_leaves_out_dropped_words_and_notes() -> None:
    box = ('<div id="x" class="viasd-tokens"> Plants<del class="diff" title="t"> make</del><mark class="diff">'
           ' grow</mark> &amp; live <span class="tok special" title="end">■ end</span></div>'
           '<div class="viasd-note">1 replaced</div>')
    assert shown_text(box) == "Plants grow & live"


@pytest.fixture(scope="module")
def checker() -> Checker:
    bundle = tiny_bundle(drafter_layers=2)
    return Checker(loader=lambda *models: bundle)


def answer_for(checker: Checker, settings: Settings, **tamper: object) -> Answer:
    trace = generate(checker.bundle(("tiny-llama", "")), settings.prompt, settings.config(), replay=True)
    data = asdict(trace)
    spec = {"kind": "tokens", "asked": settings, "models": ("tiny-llama", ""), "replay": True, "stopped": False,
            "trace": {k: data[k] for k in ("prompt", "config", "models", "stop_reason")},
            "token_ids": list(trace.token_ids), "audit": [t.audit for t in trace.tokens]}
    spec.update(tamper)
    return Answer("run", 0, 0.0, check=spec)


def test_the_checker_accepts_a_right_answer_and_refuses_wrong_ones(checker: Checker) -> None:
    settings = Settings(prompt="the cat sat", mode="via", drafter="self", gamma=3, max_new_tokens=12,
                        tau_accept=0.5, tau_slim=0.3, copy_evidence="verifier", **ROUTES)
    right = answer_for(checker, settings)
    assert checker.check(right) == ""
    ids = right.check["token_ids"]
    assert "differ" in checker.check(answer_for(checker, settings, token_ids=ids[:-1] + [(ids[-1] + 1) % 40]))
    foreign = answer_for(checker, settings, asked=settings.with_(prompt="a dog ran"))
    assert "someone else's answer" in checker.check(foreign)
    other = answer_for(checker, settings, asked=settings.with_(tau_accept=0.6))
    assert "other settings" in checker.check(other) and "tau_accept" in checker.check(other)
    stopped = {**right.check["trace"], "stop_reason": "cancelled"}
    assert checker.check(answer_for(checker, settings, stopped=True, trace=stopped, token_ids=ids[:5],
                                    audit=right.check["audit"][:5])) == ""
    assert "stopped run" in checker.check(answer_for(checker, settings, stopped=True, trace=stopped,
                                                     token_ids=[(i + 1) % 40 for i in ids[:5]],
                                                     audit=right.check["audit"][:5]))


def test_only_tracebacks_of_the_app_count_not_gradios_refusal_of_an_input(tmp_path) -> None:
    from app.tools.soak import tracebacks

    frame = '  File "x.py", line 1, in f\n    f()\n'
    refused_choice = ("Traceback (most recent call last):\n" + frame + "gradio.exceptions.Error: 'Value: " + "x" * 900
                      + " (type: <class \\'str\\'>) is not in the list of choices: [\\'self\\', \\'ngram\\']'\n")
    cause = "\n\nThe above exception was the direct cause of the following exception:\n\n"
    refused_slider = ("Traceback (most recent call last):\n" + frame + "TypeError: '<' not supported between "
                      "instances of 'NoneType' and 'float'" + cause + "Traceback (most recent call last):\n" + frame
                      + "gradio.exceptions.ComponentProcessingError: Could not preprocess input component at index 9 "
                      "(a `slider` component)\n")
    out_of_range = ("Traceback (most recent call last):\n" + frame
                    + "gradio.exceptions.Error: 'Value -1 is less than minimum value 0.05.'\n")
    app_failure = "Traceback (most recent call last):\n" + frame + "ValueError: the app itself failed\n"
    log = tmp_path / "app.log"
    log.write_text("* Running on local URL\n" + refused_choice + refused_slider + out_of_range + "a line\n")
    assert tracebacks(log) == 0
    log.write_text(refused_choice + app_failure + refused_slider + app_failure)
    assert tracebacks(log) == 2


class _FakeVisitor:
    """A visitor whose `submit` returns a canned answer: enough for the actions' own bookkeeping."""

    def __init__(self, endpoint: str, answer: object) -> None:
        self.rng, self.models, self.started = random.Random(0), None, 0.0
        self.api = {endpoint: {"parameters": [{"parameter_name": "prompt", "python_type": {"type": "str"}}]}}
        self._answer = answer
        self.shown = pools.smol_settings(random.Random(1), via=True)

    def submit(self, endpoint: str, values: dict, answer: Answer, stop_after_first: bool = False) -> object:
        return self._answer

    def answer(self, action: str) -> Answer:
        return Answer(action, 0, 0.0)

    def settings(self, via: bool = False) -> pools.Settings:
        return pools.smol_settings(self.rng, via)


@pytest.mark.parametrize(("endpoint", "forgets"), [("/generate", True), ("/reroute", True), ("/compare", False)])
def test_a_hostile_run_makes_the_visitor_forget_the_run_it_had_on_screen(endpoint: str, forgets: bool) -> None:
    """The one-hour soak's 5 "no trace" re-routes: a hostile value the app accepted had put its own run on screen,
    and the next re-route, moved from the run the visitor remembered, was refused as "settings changed"."""
    from app.tools.soak_actions import hostile

    visitor = _FakeVisitor(endpoint, ["text", "Done"])
    hostile(visitor)
    assert (visitor.shown is None) == forgets


def test_an_answer_without_a_trace_is_an_error_that_quotes_its_status_line() -> None:
    from app.tools.page_client import EventError
    from app.tools.soak_actions import reroute

    refusal = "Thresholds set for the next run: the prompt or settings changed since the run shown, press **Run**."
    visitor = _FakeVisitor("/reroute", ["<div></div>", refusal, None])
    with pytest.raises(EventError, match="settings changed since the run shown"):
        reroute(visitor)


def test_the_apps_store_sizes_come_back_from_its_log_into_the_minute_table(tmp_path: Path) -> None:
    """Resident memory alone cannot tell a memo filling up from a leak: the app logs its stores, the soak reads them."""
    from app import held_log

    first = held_log.held()
    assert {"memo_mb", "live_grids", "live_points", "fidelity", "sessions", "page_feed", "threads"} <= set(first)
    assert first["threads"].get("MainThread") == 1 and sum(first["threads"].values()) == threading.active_count()
    log = f"some line\n{held_log.line()}\nanother\n"
    parsed = held_log.parse(log)
    assert len(parsed) == 1 and parsed[0]["sessions"] == first["sessions"]
    soak = report([1000.0] * 4)
    soak.held = [{**parsed[0], "memo_mb": {"embedded": 100.0, "pair": 20.5}, "at_s": 70.0}]
    rows = soak.rows()
    assert rows[0]["memo_mb"] == "" and rows[1]["memo_mb"] == 120.5
    assert "memo_mb" in soak.minute_table() and "memos MB" in {t.name for t in soak.figure().data}


def test_the_held_log_names_gradio_s_sessions_the_native_heap_and_native_threads() -> None:
    """What the fourth soak could not tell apart: Gradio's sessions, glibc's heap in use against freed-but-kept,
    and the threads Python did not start; and, for a diagnostic run, Python's largest allocation sites."""
    import json
    import tracemalloc
    from collections import OrderedDict

    from app import held_log

    holder = SimpleNamespace(session_data=OrderedDict.fromkeys(["a", "b", "c"]))
    first = held_log.held(holder)
    assert first["gradio_sessions"] == 3 and held_log.held()["gradio_sessions"] is None
    assert first["native_threads"] >= 0 and first["python_blocks_k"] > 0
    if first["malloc_mb"] is not None:  # glibc
        assert first["malloc_mb"]["in_use"] > 0 and first["malloc_mb"]["free_kept"] >= 0
    soak = report([1000.0] * 2)
    soak.held = [{**first, "at_s": 30.0}]
    row = soak.rows()[0]
    assert row["gradio_sessions"] == 3 and row["native_threads"] == first["native_threads"]
    tracemalloc.start(held_log.TRACE_FRAMES)
    try:
        kept = [bytearray(4 << 20)]  # noqa: F841  (alive while the snapshot is taken)
        sites = json.loads(held_log.heap_line()[len(held_log.HEAP_PREFIX):])
    finally:
        tracemalloc.stop()
    assert any("test_soak_parts.py" in site and kib >= 4096 for site, kib in sites.items())
    assert sites["all sites"] >= max(kib for site, kib in sites.items() if site != "all sites")


def test_the_held_log_names_open_handles_by_kind_and_live_tensors_by_dtype(tmp_path: Path) -> None:
    """The sixth soak missed "no growth in handles" by one and could not say which: each minute's line names the
    handles (a file by its path, sockets and pipes by kind); a diagnostic run also counts live tensors."""
    import json
    import socket

    import torch

    from app import held_log

    before = held_log.handle_census()
    kept_file = open(tmp_path / "kept.log", "w")  # noqa: SIM115  (held open while counted)
    kept_socket = socket.socket()
    try:
        after = held_log.handle_census()
    finally:
        kept_file.close()
        kept_socket.close()
    assert after[str(tmp_path / "kept.log")] == 1 and str(tmp_path / "kept.log") not in before
    assert after["socket"] == before.get("socket", 0) + 1
    assert held_log.held()["handles"] == held_log.handle_census()

    kept = torch.zeros(256, 1024, dtype=torch.bfloat16)
    counts = json.loads(held_log.tensor_line()[len(held_log.TENSOR_PREFIX):])
    assert counts["bfloat16"][0] >= 1 and counts["bfloat16"][1] >= 0.5
    del kept


def test_the_minute_table_splits_mapped_file_pages_from_the_rest() -> None:
    """The weights' file pages (core.models.resident) are read from /proc apart from the heap and shown apart."""
    import os

    from app.tools.soak import process_sample

    sample = process_sample(os.getpid(), 0.0)
    assert sample is not None and 0 < sample.file_mb < sample.rss_mb
    soak = report([1000.0] * 4)
    soak.samples = [Sample(s.at_s, s.rss_mb, s.threads, s.handles, file_mb=300.0 + i)
                    for i, s in enumerate(soak.samples)]
    assert [row["file_mb"] for row in soak.rows()] == [301.5, 303.0]  # medians of the samples at 30, 60 | 90 s
    assert "file_mb" in soak.minute_table()


def test_a_sample_of_an_app_that_died_is_none_not_a_crash_of_the_sampler() -> None:
    """A dead app not yet reaped is a zombie whose /proc status has no memory lines: the sampler thread died of a
    KeyError there (2026-12-05), and the soak then had no samples to say what happened."""
    import subprocess
    import sys
    import time

    from app.tools.soak import process_sample

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while "State:\tZ" not in Path(f"/proc/{child.pid}/status").read_text() and time.monotonic() < deadline:
            time.sleep(0.05)  # exited and not reaped: a zombie (its memory lines go a moment before its state turns Z)
        status = Path(f"/proc/{child.pid}/status").read_text()
        assert "State:\tZ" in status and "VmRSS" not in status
        assert process_sample(child.pid, 0.0) is None
    finally:
        child.wait()


def test_a_bf16_replay_may_part_from_a_fresh_run_only_at_a_measured_near_tie() -> None:
    """The one-hour soak's one wrong answer was a bf16 re-route parting from a fresh run at token 49: a replay reads
    logits of other pass shapes. Either token of a near-tie is the model's answer; anything else stays wrong."""
    import torch

    from app.tools.soak_check import tie_reason

    alone = torch.tensor([20.00, 19.98, 12.0, 3.0])
    assert "near-tie" in tie_reason(alone, alone + torch.tensor([0.0, 0.03, 0.0, 0.0]), [1, 0])
    assert "near-tie" in tie_reason(alone, alone, [0, 1])  # the shapes agree: 4 bf16 ulps of 20 is 0.31
    assert tie_reason(alone, alone, [0, 2]) == ""  # not the model's top two
    apart = torch.tensor([20.0, 19.0, 12.0, 3.0])
    assert tie_reason(apart, apart + torch.tensor([0.0, 0.1, 0.0, 0.0]), [1, 0]) == ""  # 1.0 apart, shapes 0.1


def test_near_tie_reads_the_full_models_logits_at_the_parting_token() -> None:
    """On a real (tiny) model: the parting token is judged at its own prefix (the answer's token is the model's top
    choice there), and a token outside the model's top two is never a tie."""
    import torch

    from app.tools.soak_check import near_tie
    from core import DecodeConfig
    from core.models.prompting import encode_prompt

    bundle, config = tiny_bundle(), DecodeConfig(mode="plain", max_new_tokens=8)
    got = generate(bundle, "abc", config).token_ids
    ids = encode_prompt(bundle.verifier.tokenizer, "abc", config.chat_template) + got[:3]
    with torch.no_grad():
        logits = bundle.verifier.model(torch.tensor([ids])).logits[0, -1]
    first, second, last = logits.argsort(descending=True)[[0, 1, -1]].tolist()
    assert first == got[3]
    assert near_tie(bundle, "abc", config, got, [*got[:3], last], 3) == ""
    gap = float(logits[first] - logits[second])
    said = near_tie(bundle, "abc", config, got, [*got[:3], second], 3)
    assert (said != "") == (gap <= 4 * 2**-8 * float(logits[[first, second]].abs().max())), (gap, said)


def test_a_stopped_bf16_replay_may_part_only_at_a_near_tie_as_a_finished_one_may(
        checker: Checker, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-hour rerun's one wrong answer: a pair visitor's stopped run parted from a fresh run inside its first
    39 tokens, and the stopped path, unlike a finished run's, had no near-tie rule. It has now, the same rule, and
    an fp32 run or a parting the rule does not explain stays wrong."""
    import torch

    from app.tools import soak_check

    settings = Settings(prompt="the cat sat", mode="via", drafter="self", gamma=3, max_new_tokens=12,
                        tau_accept=0.5, tau_slim=0.3, copy_evidence="verifier", **ROUTES)
    right = answer_for(checker, settings)
    ids, audit = right.check["token_ids"], right.check["audit"]
    stopped = {**right.check["trace"], "stop_reason": "cancelled"}
    parted = ids[:2] + [(ids[2] + 1) % 40] + ids[3:6]

    def wrong() -> str:
        return checker.check(answer_for(checker, settings, stopped=True, trace=stopped, token_ids=parted,
                                        audit=audit[:6]))

    asked_at: list[int] = []
    monkeypatch.setattr(soak_check, "near_tie", lambda *a: asked_at.append(a[-1]) or "a bf16 near-tie (test)")
    assert "stopped run" in wrong() and asked_at == []  # fp32: no tie is ever allowed
    monkeypatch.setattr(checker.bundle(("tiny-llama", "")).verifier, "dtype", torch.bfloat16)
    assert wrong() == "" and asked_at == [2] and "stopped run" in checker.ties[-1]
    monkeypatch.setattr(soak_check, "near_tie", lambda *a: "")
    assert "stopped run" in wrong()


def test_the_per_minute_figures_are_on_disk_before_the_answers_are_checked(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The check after a one-hour soak takes 20-60 minutes: twice a session ended during it and the hour's /proc
    samples, which lived only in the soak's memory, were lost. They are written first, then again once checked."""
    from app.tools import soak

    seen: dict[str, bool] = {}

    def check_all(answers: list[Answer]) -> None:
        seen["csv"] = (tmp_path / "soak.csv").exists() and (tmp_path / "samples.csv").exists()
        for answer in answers:
            answer.wrong = "marked by the check"

    monkeypatch.setattr(soak, "check_all", check_all)
    monkeypatch.setattr(soak, "write_png", lambda *args: None)
    report = soak.run_soak(0.02, 0, tmp_path, url="http://127.0.0.1:9/")  # nobody listens: one error, no visitor
    assert seen == {"csv": True}
    assert report.wrong and report.answers[-1].action == "answers afterwards"
    first_minute = next(csv.DictReader((tmp_path / "soak.csv").read_text().splitlines()))
    assert first_minute["wrong"] == str(len(report.wrong))
