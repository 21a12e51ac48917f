"""Model events run on one long-lived thread (app.model_thread): torch's per-thread OpenMP teams then stay one team,
not one per Gradio worker that happened to run a step."""

from __future__ import annotations

import contextvars
import inspect
import os
import threading

import gradio as gr
import pytest
import torch

from app.model_thread import NAME, TURN, lend_turn, model_event, model_steps, on_model_thread, turn_borrowed

VISITOR = contextvars.ContextVar("visitor", default="nobody")


def test_each_step_of_a_generator_runs_on_the_model_thread_and_keeps_its_signature() -> None:
    def handler(prompt: str, request: gr.Request = None, progress: gr.Progress = gr.Progress()):  # noqa: B008
        for word in prompt.split():
            yield word, threading.current_thread().name

    wrapped = model_event(handler)
    assert inspect.isgeneratorfunction(wrapped)  # Gradio streams it
    assert inspect.signature(wrapped) == inspect.signature(handler)  # Gradio injects the request and the bar
    steps = list(wrapped("a b c"))
    assert [w for w, _ in steps] == ["a", "b", "c"]
    assert {name for _, name in steps} == {f"{NAME}_0"}


def test_a_closed_event_runs_its_handler_s_cleanup_and_errors_reach_the_caller() -> None:
    cleaned: list[bool] = []

    def handler():
        try:
            yield 1
            yield 2
        finally:
            cleaned.append(True)

    stream = model_event(handler)()
    assert next(stream) == 1
    stream.close()  # what a cancelled event's generator gets
    assert cleaned == [True]

    def broken(x: int) -> int:
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 3"):
        model_event(broken)(3)


def test_the_caller_s_context_goes_along_and_a_nested_call_does_not_wait_on_itself() -> None:
    def outer() -> tuple[str, str]:
        return VISITOR.get(), on_model_thread(threading.current_thread).name  # nested: runs in place

    token = VISITOR.set("ada")
    try:
        seen, nested_thread = model_event(outer)()
    finally:
        VISITOR.reset(token)
    assert seen == "ada" and nested_thread.startswith(NAME)


def test_a_model_event_holds_the_turn_until_a_step_lends_it_and_gives_it_back() -> None:
    def handler():
        yield TURN.locked()
        yield TURN.locked()

    stream = model_event(handler)()
    assert not TURN.locked()  # creating the stream takes nothing
    assert next(stream) is True and next(stream) is True
    stream.close()  # cancelled between steps
    assert not TURN.locked()
    assert model_event(lambda: TURN.locked())() is True and not TURN.locked()
    assert model_event(lambda: model_event(lambda: TURN.locked())())() is True  # nested: no wait on itself


def test_model_steps_wait_for_the_turn_saying_so_then_run_on_the_model_thread() -> None:
    """What a re-route that must run the model does: it waits for the event in progress, yielding (so a cancel can
    end the wait), then streams on the model thread holding the turn, and gives it back."""
    def stream():
        yield {"step": threading.current_thread().name, "held": TURN.locked()}

    TURN.acquire()  # another event's run
    steps = model_steps(stream, {"status": "waiting"})
    assert next(steps) == {"status": "waiting"}
    assert next(steps) == {"status": "waiting"}  # still waiting, after one poll (Gradio takes no empty update)
    TURN.release()
    assert next(steps) == {"step": f"{NAME}_0", "held": True}
    assert list(steps) == [] and not TURN.locked()

    waiting = model_steps(stream, {"status": "waiting"})
    TURN.acquire()
    assert next(waiting) == {"status": "waiting"}
    waiting.close()  # Run cancelled it while it waited: it never held the turn, so it gives back nothing
    assert TURN.locked()
    TURN.release()
    assert list(model_steps(stream, {"status": "waiting"})) == [{"step": f"{NAME}_0", "held": True}]  # free: no wait


def test_a_run_lends_the_turn_between_rounds_so_a_waiting_reroute_goes_before_its_next_step() -> None:
    order: list[str] = []

    def run():
        for i in range(3):
            order.append(f"run {i}")
            lend_turn()
            yield i

    def reroute():
        order.append(f"re-route inside another run: {turn_borrowed()}")
        yield {"done": True}

    stream = model_event(run)()
    assert next(stream) == 0 and not TURN.locked()  # the first round lent the turn
    assert list(model_steps(reroute, {"status": "waiting"})) == [{"done": True}]
    assert list(stream) == [1, 2]
    assert order == ["run 0", "re-route inside another run: True", "run 1", "run 2"]
    assert not TURN.locked() and not turn_borrowed()
    assert list(model_steps(reroute, {})) == [{"done": True}]
    assert order[-1] == "re-route inside another run: False"

    stream = model_event(run)()
    next(stream)
    stream.close()  # cancelled while it lent the turn: it takes it back to clean up, then gives it back
    assert not TURN.locked()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads from /proc")
def test_torch_work_from_many_threads_keeps_one_openmp_team() -> None:
    """The cause, shown: torch work called from eight threads at once holds one thread and one OpenMP team; run
    straight on those threads it holds eight of each (while they live) on 2 cores."""
    if torch.get_num_threads() < 2:
        pytest.skip("one torch thread: no OpenMP team to count")
    a = torch.randn(256, 256)
    matmul = model_event(lambda: (a @ a).sum().item())
    matmul()  # the model thread and its team exist from here on
    start, release = threading.Barrier(9), threading.Event()

    def visitor(work) -> None:  # noqa: ANN001
        work()
        start.wait()
        release.wait()

    def count_while(work) -> int:  # noqa: ANN001
        visitors = [threading.Thread(target=visitor, args=(work,)) for _ in range(8)]
        for t in visitors:
            t.start()
        start.wait()
        held = _threads()
        release.set()
        for t in visitors:
            t.join()
        release.clear()
        start.reset()
        return held

    before = _threads()
    through_model_thread = count_while(matmul) - before
    directly = count_while(lambda: (a @ a).sum().item()) - before
    assert through_model_thread == 8  # the eight callers only, no team of their own
    assert directly >= 8 + 8 * (torch.get_num_threads() - 1)


def test_every_model_event_of_the_app_runs_on_the_model_thread() -> None:
    from app import ui

    demo = ui.build_demo()
    model_events = [fn for fn in demo.fns.values() if fn.concurrency_id == "model"]
    assert len(model_events) >= 10  # Run, re-route, Compare's three, Models, Classroom's two, a link's run...
    assert [fn.name for fn in model_events if not getattr(fn.fn, "on_model_thread", False)] == []
