"""The Gradio app's table of contents: four tabs, read left to right as a story.

Each tab lives in `app/tabs/` and owns its layout and handlers; this module only places them and
hands the few shared pieces across (the Generate tab's settings widgets and last trace, the grid).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.closed_tabs import ClosedTabs
from app.notch import HEAD
from app.session_components import keep_replaced_ids
from app.share import SharePanel
from app.tabs.about import AboutTab
from app.tabs.classroom import CSS as CLASSROOM_CSS
from app.tabs.classroom import ClassroomTab
from app.tabs.compare import CompareTab
from app.tabs.generate import GenerateTab
from app.tabs.models import ModelsPanel
from app.tabs.tradeoff_lesson import CSS as LESSON_CSS
from app.tabs.tradeoff_lesson import TradeoffLesson
from app.views import render
from app.views.style import CSS
from core.limits import MAX_SESSIONS, WORKER_THREADS

THEME = gr.themes.Default(text_size="lg", primary_hue="blue").set(
    # one shade darker than the default so white button text passes WCAG AA (4.5:1) in light mode
    button_primary_background_fill="*primary_600", button_primary_background_fill_hover="*primary_700",
    button_cancel_background_fill="#b91c1c", button_cancel_background_fill_hover="#991b1b",
    body_text_color_subdued="*neutral_600")
DELETE_CACHE = (3600, 3600)
"""Every hour, Gradio deletes the files it copied for visitors (the downloads) more than an hour ago."""
INTRO = ("### VIA-SD Explorer · a drafter guesses ahead; each guess is **trusted** (tier 1), **checked by a slim "
         "verifier** (tier 2) or **checked by the full model** (tier 3)")


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded here; the first model event or the warm-up loads it)."""
    keep_replaced_ids()  # a session's copy of the page stays the page's size (app/session_components.py)
    with gr.Blocks(title="VIA-SD Explorer", delete_cache=DELETE_CACHE) as demo:
        gr.Markdown(INTRO, elem_id="viasd-intro")
        with gr.Tabs():
            with gr.Tab("1 · Generate & tune", id="generate"):
                generate = GenerateTab()
                with generate.models_box:
                    models = ModelsPanel(*generate.opening_models)
                    share = SharePanel()
            with gr.Tab("2 · Compare", id="compare"):
                compare = CompareTab()
            with gr.Tab("3 · Classroom", id="classroom"):
                classroom = ClassroomTab()
                lesson = TradeoffLesson()
            with gr.Tab("4 · About the numbers", id="about"):
                AboutTab()
        generate.wire(compare.tradeoff_plot, compare.grid_state, (models.verifier, models.drafter, models.quant))
        models.wire(generate.widgets)
        compare.wire(generate.widgets)
        classroom.wire(generate.out["trace"])
        lesson.wire()
        demo.unload(ClosedTabs(lambda: demo.state_holder).on_unload)  # a closed tab's state goes a minute later
        demo.load(generate.ready, None, generate.out["status"], api_visibility="private", queue=False,
                  show_progress="hidden")
        share.wire(demo, generate.widgets, generate.example, generate.generate, generate.out,
                   (models.verifier, models.drafter))
    return demo


def launch_kwargs() -> dict[str, Any]:
    """Theme and CSS go to launch() in Gradio 6; tests that launch the demo themselves use this too. Gradio keeps
    every session's last outputs (figures included) until `state_session_capacity` sessions: 10,000 by default,
    gigabytes on a public demo; the app keeps as many as it keeps visitors (`VIASD_MAX_SESSIONS`). Its worker
    threads are capped too (`VIASD_WORKER_THREADS`): the pool no longer grows with the crowd."""
    return {"theme": THEME, "css": CSS + CLASSROOM_CSS + LESSON_CSS + render.TOKEN_CSS, "head": HEAD,
            "footer_links": ["api", "gradio", "settings"], "state_session_capacity": MAX_SESSIONS,
            "max_threads": WORKER_THREADS}
