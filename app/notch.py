"""The Generate tab's notch in the browser: the page's grid data, the slider events that draw it, the streaming.

`NotchPanel` builds the hidden data component (the run grid as app.views.page_grid encodes it), the line under
the sliders saying which point is shown (and whether it snapped), the trade-off chart and the two-dimensional
picker; `wire` attaches browser-side (js=, no server round trip) handlers to every slider move, greys what only
the server draws until its re-route lands, and polls for prefetched points while a grid is still filling.
The script itself is app/static/viasd.js, sent once in the page head (`HEAD`).
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.grids import GRIDS
from app.late_reliability import waiting as late_waiting
from app.views.page_grid import FEED

HEAD = f"<script>{(Path(__file__).parent / 'static' / 'viasd.js').read_text()}</script>"
"""The page's notch script, loaded before any component renders (app.ui.launch_kwargs)."""
POLL_S = 0.5
"""How often a page asks for points its grid still lacks (only while the prefetch is filling it)."""


def _registered(name: str) -> str:
    """js_on_load of a gr.HTML the script draws into: it hands the script its element and props."""
    return f"window.viasd && window.viasd.register('{name}', element, props);"


def drawn_html(name: str, value: str = "", **kwargs: object) -> gr.HTML:
    """A gr.HTML whose value the page script may set (`props.value`, which keeps Gradio's copy in step)."""
    return gr.HTML(value, js_on_load=_registered(name), **kwargs)


class NotchPanel:
    """The data component, the notch line, the trade-off chart, the picker and the poll timer."""

    def __init__(self, data: str = "") -> None:
        self.data = gr.HTML(data, html_template="", elem_id="viasd-grid-data", visible="hidden",
                            js_on_load=_registered("data") + " watch('value', () => window.viasd.load(props.value));")
        self.line = drawn_html("notch", "", elem_id="viasd-notch")
        self.tradeoff = drawn_html("tradeoff", '<div class="viasd-tradeoff"></div>', elem_id="viasd-tradeoff")
        self.timer = gr.Timer(POLL_S, active=False)

    def picker(self) -> gr.HTML:
        """The two-dimensional picker (τ_accept across, τ_slim up): a click sets both sliders."""
        self.pick = gr.HTML('<div class="viasd-picker"></div>', elem_id="viasd-picker", js_on_load=_registered(
            "picker") + " watch('value', () => window.viasd.keep('picker'));")  # mounted when its accordion opens
        return self.pick

    @staticmethod
    def more(session: str) -> tuple:
        """Timer tick: the points this page lacks (a delta for the data component), and whether to keep polling.
        The tab's tick (app.tabs.generate) sends them with the run's reliability charts once those exist."""
        text, coming = FEED.more(session, GRIDS)  # the run's reliability data may still come after the last point
        return (text if text is not None else gr.skip()), gr.Timer(active=coming or late_waiting(session))

    def wire(self, sliders: dict[str, gr.Slider], release_event: object) -> None:
        """Browser-side handlers on every slider move; after a server re-route lands, nothing stays greyed."""
        a, s, g = sliders["tau_accept"], sliders["tau_slim"], sliders["gamma"]
        for name, which in (("tau_accept", "accept"), ("tau_slim", "slim"), ("gamma", "gamma")):
            sliders[name].input(None, [a, s, g], [a, s], js=f"(a, s, g) => window.viasd.move('{which}', a, s, g)",
                                queue=False, show_progress="hidden", api_visibility="private")
        release_event.then(None, None, None, js="() => window.viasd.fresh()", queue=False, show_progress="hidden",
                           api_visibility="private")
