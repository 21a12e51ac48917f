"""What a day of visitors used to leave behind, one test per leak the soak found (no app, no model).

- every run's downloads went to a fresh temp folder kept for good (/tmp filled);
- the app's per-visitor records were pruned only after 6 idle hours, and a pair's load lock was kept
  for every name ever asked (hostile names included), loaded or not;
- Gradio kept every session's last outputs (figures included) up to 10,000 sessions, and the files it
  copied for downloads for as long as the process lived;
- native memory freed by runs on Gradio's worker threads stayed resident (glibc's per-thread arenas);
- Gradio's worker pool grew and shrank with the crowd (up to 40 threads): the soak saw more threads late than
  in its warm-up;
- bf16 passes through oneDNN kept a compiled kernel for every pass shape ever seen, up to 1024 in each of two
  caches: native memory rose with every new prompt length for hours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from app import exports, native_memory, session
from app.session import Sessions
from core.config import DecodeConfig
from core.limits import WORKER_THREADS
from core.models.loading import ModelBundle
from core.trace import TokenRecord, Trace


def _trace() -> Trace:
    token = TokenRecord(position=0, token_id=7, text="hi", round=0, tier=3, outcome="full-accepted",
                        reason="not-confident", verdict="argmax")
    return Trace(prompt="p", prompt_token_count=1, config=DecodeConfig(max_new_tokens=1), models={}, tokens=[token],
                 stop_reason="eos")


def test_downloads_of_old_runs_are_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exports, "_root", None)
    monkeypatch.setattr(exports.tempfile, "tempdir", str(tmp_path))
    written = []
    for _ in range(7):
        written.append(exports.export_files(_trace(), keep=3))
        time.sleep(0.01)  # distinct modification times
    root = exports.export_root()
    assert root.parent == tmp_path and len(list(tmp_path.iterdir())) == 1  # one parent, not one folder per run
    kept = sorted(p.name for p in root.iterdir())
    assert len(kept) == 3
    assert all(Path(p).exists() for p in written[-1]) and not any(Path(p).exists() for p in written[0])
    assert [Path(p).suffix for p in written[-1]] == [".csv", ".csv", ".json"]


def _loader(loads: list[str], fail: set[str] = frozenset(), delay_s: float = 0.0):  # noqa: ANN202
    def load(verifier: str = "embedded", drafter: str | None = None) -> object:
        loads.append(verifier)
        time.sleep(delay_s)
        if verifier in fail:
            raise ValueError(f"no such model: {verifier}")
        return SimpleNamespace(verifier=SimpleNamespace(name=verifier), drafter=None)
    return load


def test_visitor_records_are_bounded_least_recently_seen_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "MAX_SESSIONS", 5)
    sessions = Sessions(_loader([]))
    for i in range(50):
        sessions.start_job(f"visitor{i}")
        sessions.request_stop("visitor0")  # visitor0 keeps coming back
    assert sessions.visitor_count() == 5
    assert "visitor0" in sessions._visitors and "visitor49" in sessions._visitors
    assert "visitor1" not in sessions._visitors


def test_a_pair_s_load_lock_goes_when_its_load_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "MAX_EXTRA_BUNDLES", 1)
    loads: list[str] = []
    sessions = Sessions(_loader(loads, fail={f"org/bad{i}" for i in range(20)}))
    for i in range(20):
        with pytest.raises(ValueError):
            sessions.choose(f"v{i}", f"org/bad{i}", "")
    sessions.choose("a", "org/good", "")
    assert sessions._loading == {}


def test_two_visitors_asking_for_one_pair_at_once_share_one_load() -> None:
    loads: list[str] = []
    sessions = Sessions(_loader(loads, delay_s=0.3))
    got = []
    threads = [threading.Thread(target=lambda n=n: got.append(sessions.choose(f"v{n}", "org/pair", "")))
               for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == ["org/pair"] and got[0] is got[1]
    assert sessions._loading == {}


def test_gradio_keeps_as_many_sessions_as_the_app_and_deletes_old_downloads() -> None:
    from app import ui

    assert ui.launch_kwargs()["state_session_capacity"] == session.MAX_SESSIONS
    from app.views.page_grid import PageFeed

    assert PageFeed.MAX_SESSIONS == session.MAX_SESSIONS  # it kept 2048 sessions' page holdings
    demo = ui.build_demo()
    assert demo.delete_cache == ui.DELETE_CACHE


def test_every_bundle_shares_one_memo_and_no_model_reads_another_s_rows() -> None:
    """The soak held a 512 MiB memo per bundle, three still filling at minute 60: one budget for the process now.
    Two loads under one name are two models (here different weights): sharing must not mix their predictions."""
    from core import DecodeConfig, generate
    from tests.tiny import tiny_bundle

    def one() -> ModelBundle:
        return tiny_bundle("llama", 4, avoid_eos=True)

    def other() -> ModelBundle:
        bundle = one()
        with torch.no_grad():
            bundle.verifier.model.get_input_embeddings().weight.mul_(-1.0)  # same name, other predictions
        return bundle

    bundles = [one(), other()]
    sessions = Sessions(lambda *args, **kwargs: bundles.pop(0) if bundles else pytest.fail("loaded twice"))
    config = DecodeConfig(max_new_tokens=16, chat_template=False)
    embedded, pair = sessions.default_bundle(), sessions.choose("a", "org/pair", "")
    assert embedded.memo is pair.memo is sessions.memo
    assert embedded.verifier.name == pair.verifier.name
    ran = [generate(bundle, "the cat sat", config, replay=True).token_ids for bundle in (embedded, pair, embedded)]
    alone = [generate(make(), "the cat sat", config).token_ids for make in (one, other)]
    assert ran[0] == ran[2] == alone[0], "the first model's run, replayed from the shared memo, is its own"
    assert ran[1] == alone[1] != alone[0], "the second model computed its own rows, not the first's"
    assert len({key.split("|")[0] for key, _ in sessions.memo._entries}) == 2  # "tiny-llama#<tag>", one per model


def _resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


@pytest.mark.skipif(native_memory._libc() is None, reason="glibc only")
def test_memory_a_worker_thread_freed_goes_back_to_the_system() -> None:
    """A worker thread frees 180 MB of small blocks but keeps a few, scattered: glibc keeps the freed pages
    resident (the soak's native growth) until `trim` hands them back."""
    kept: list[bytearray] = []

    def work() -> None:
        blocks = [bytearray(60_000) for _ in range(3000)]  # below the mmap threshold: inside the thread's arena
        kept.extend(blocks[::100] + blocks[-1:])

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    before = _resident_mb()
    assert native_memory.trim()
    assert before - _resident_mb() > 100, (before, _resident_mb())
    assert native_memory.limit_arenas()


def test_the_app_caps_arenas_and_starts_one_trimmer() -> None:
    source = Path(__file__).resolve().parents[2].joinpath("app.py").read_text()
    assert source.index("native_memory.limit_arenas()") < source.index("from app.session import")
    assert "native_memory.start_trimmer()" in source
    thread = native_memory.start_trimmer(period_s=3600)
    assert thread.daemon and thread.is_alive()


def test_the_apps_worker_threads_cap_how_many_events_run_at_once() -> None:
    """Ten visitors pressing at once get at most `VIASD_WORKER_THREADS` events worked on together (a tiny app
    launched with the app's own launch arguments; the cap is lowered to 3 to make it visible)."""
    import gradio as gr
    from gradio_client import Client

    from app import ui

    assert ui.launch_kwargs()["max_threads"] == WORKER_THREADS
    lock, busy, peak = threading.Lock(), [0], [0]

    def slow(x: str) -> str:
        with lock:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        time.sleep(0.4)
        with lock:
            busy[0] -= 1
        return x

    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(slow, box, box, api_name="slow", concurrency_limit=None)
    demo.queue(default_concurrency_limit=None)
    demo.launch(prevent_thread_lock=True, quiet=True, **{**ui.launch_kwargs(), "max_threads": 3})
    try:
        client = Client(demo.local_url, verbose=False)
        jobs = [client.submit(str(n), api_name="/slow") for n in range(10)]
        assert sorted(job.result(timeout=60) for job in jobs) == sorted(str(n) for n in range(10))
    finally:
        demo.close()
    assert peak[0] == 3  # reached, never passed


_NEW_SHAPES = """
import json, sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from app import native_memory
from app.tools.kernel_cache_probe import heap_mb
if sys.argv[1] == "capped":
    native_memory.bound_kernel_caches({"LRU_CACHE_CAPACITY": 4, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": 16})
torch.manual_seed(0)
config = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2)
model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
marks = []
with torch.inference_mode():
    for length in range(4, 124):
        model(torch.randint(0, 512, (1, length)))
        if length in (43, 83, 123):
            marks.append(heap_mb())
print(json.dumps({"fill": marks[1] - marks[0], "after": marks[2] - marks[1]}))
"""


def _growth(mode: str) -> dict[str, float]:
    """Native MB in use gained over 40 new prompt lengths, after 40 others (`fill`) and after 80 (`after`)."""
    env = {k: v for k, v in os.environ.items() if k not in native_memory.KERNEL_CACHES}
    done = subprocess.run([sys.executable, "-c", _NEW_SHAPES, mode], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.full  # 240 bf16 runs in two subprocesses: a leak measurement, about a minute
def test_bf16_kernels_for_new_pass_shapes_stop_piling_up_once_the_caches_are_capped() -> None:
    """A tiny bf16 model run at 120 prompt lengths: with torch's defaults native memory keeps rising with each new
    length; with `bound_kernel_caches` it stops once the capped caches are full. Skipped on a CPU whose bf16
    matmuls keep no per-shape kernels (no oneDNN bf16 path): there is nothing to cap."""
    if native_memory.allocator_mb() is None:
        pytest.skip("glibc's mallinfo2 is not available here")
    default = _growth("default")
    if default["after"] < 1.0:
        pytest.skip(f"this CPU's bf16 passes keep no per-shape kernels: {default}")
    capped = _growth("capped")
    assert capped["after"] < 0.25 * default["after"], (default, capped)


def test_the_app_caps_the_kernel_caches_before_the_first_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    source = Path(__file__).resolve().parents[2].joinpath("app.py").read_text()
    assert source.index("native_memory.bound_kernel_caches()") < source.index("demo = build_demo()")
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "99")  # an operator's own setting stays
    monkeypatch.delenv("LRU_CACHE_CAPACITY", raising=False)  # monkeypatch puts back what was there
    assert native_memory.bound_kernel_caches() == {"LRU_CACHE_CAPACITY": "64", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "99"}
