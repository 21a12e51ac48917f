"""A session's copy of the page stays the size of the page however many runs stream into it (app.session_components).

Through Gradio itself: a streamed event that updates some outputs and leaves others out (Gradio fills those with
`gr.skip()`), as the app's run does, used to add each touched component to the session again under a new id.
"""

from __future__ import annotations

import gradio as gr
import pytest
from gradio.state_holder import SessionState

from app import session_components
from app.tools.page_client import Page


def _streamed_page_sizes(runs: int) -> tuple[list[int], list[str]]:
    """Run a two-output streaming event `runs` times in one tab: the session's component count after each run, and
    what the page shows at the end."""

    def stream(n: str):  # noqa: ANN202
        yield {status: f"running {n}…"}  # the figure is left out: Gradio fills it with gr.skip()
        yield {status: f"done {n}", figure: f"<b>figure {n}</b>"}

    with gr.Blocks() as demo:
        prompt, status, figure = gr.Textbox(), gr.Markdown(), gr.HTML()
        gr.Button().click(stream, prompt, [status, figure], api_name="run")
    demo.queue()
    demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        sizes = []
        with Page(demo.local_url) as page:
            run = next(i for i, d in page.dependencies.items() if d.get("api_name") == "run")
            for n in range(runs):
                page.values[prompt._id] = str(n)
                shown = page.call(run)
                sizes.append(len(demo.state_holder.session_data[page.session].blocks_config.blocks))
        return sizes, shown
    finally:
        demo.close()


def test_a_session_holds_one_copy_of_each_component_however_many_runs_stream_into_it() -> None:
    session_components.keep_replaced_ids()
    sizes, shown = _streamed_page_sizes(runs=6)
    assert shown == ["done 5", "<b>figure 5</b>"]  # the replaced components still show each run's values
    assert sizes == [sizes[0]] * 6


def test_without_the_fix_every_streamed_run_adds_components_to_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leak itself, so the test above is known to be able to fail (and to notice a Gradio that fixes it)."""
    monkeypatch.setattr(SessionState, "__setitem__", session_components._set_in_session)
    sizes, _ = _streamed_page_sizes(runs=4)
    assert sizes[-1] > sizes[0]


def test_the_app_keeps_replaced_ids_before_any_session_exists() -> None:
    from app import ui

    ui.build_demo()
    assert getattr(SessionState.__setitem__, "keeps_ids", False)
