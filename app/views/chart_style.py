"""One look for every chart: plotly templates for light and dark, and a title that never clips.

Figures are built on the server, which does not know the visitor's colour scheme, so every figure
carries the light template (`viasd_light`) and the page repaints it in dark mode with the dark
template's colours (`dark_css`, added to the app's CSS by app.views.style): no round trip, no white
chart on a dark page. Both templates are registered with plotly, so a script can pick either.

Titles: a chart sits in a column about 450 px wide at 1024 px, and plotly does not wrap titles, so a
title stays short (TITLE_CHARS) with any detail on a second, smaller line; `finish` enforces both.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

TITLE_CHARS = 44
"""Longest title line (and subtitle line) that fits a chart column at 1024 px wide in a 15 px font."""
FONT = {"size": 15}

PALETTE = {
    "light": {"fg": "#111111", "bg": "#ffffff", "grid": "#e3e3e3", "line": "#474747", "muted": "#5a5a5a"},
    "dark": {"fg": "#f2f2f2", "bg": "#16161a", "grid": "#3a3a42", "line": "#c9c9c9", "muted": "#c9c9c9"},
}
"""The app's CSS variables (app.views.style) for each scheme: charts and page use the same colours."""


def _template(scheme: str) -> go.layout.Template:
    c = PALETTE[scheme]
    axis = {"gridcolor": c["grid"], "linecolor": c["line"], "zerolinecolor": c["grid"], "tickcolor": c["line"],
            "automargin": True, "title": {"standoff": 8}}
    return go.layout.Template(layout={
        "font": {"color": c["fg"], "size": FONT["size"], "family": "ui-sans-serif, system-ui, sans-serif"},
        "paper_bgcolor": c["bg"], "plot_bgcolor": c["bg"], "xaxis": axis, "yaxis": axis,
        "legend": {"bgcolor": "rgba(0,0,0,0)", "orientation": "h", "y": -0.22},
        "hoverlabel": {"font": {"size": 14}}, "colorway": ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                                          "#56B4E9", "#F0E442"]})


pio.templates["viasd_light"] = _template("light")
pio.templates["viasd_dark"] = _template("dark")
TEMPLATE = "viasd_light"


def fit_line(text: str, limit: int = TITLE_CHARS) -> str:
    """A title line cut at a word boundary to `limit` characters (an ellipsis says it was cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def finish(fig: go.Figure, title: str, subtitle: str = "", height: int = 420) -> go.Figure:
    """The house layout: the template, a short title (and a smaller second line), margins that grow to fit."""
    text = fit_line(title) + (f"<br><sup>{fit_line(subtitle, int(TITLE_CHARS * 1.3))}</sup>" if subtitle else "")
    # centred in the top margin: Gradio draws the Plot's label badge over the top-left corner, and it raises the
    # top margin to 100 px whenever a label shows, so a centred title (two lines at most) sits clear below it
    fig.update_layout(title={"text": text, "x": 0.5, "xanchor": "center"}, template=TEMPLATE,
                      font=FONT, height=height, margin={"l": 60, "r": 20, "t": 100, "b": 50, "autoexpand": True})
    return fig


def dark_css(scope: str = ".dark") -> str:
    """CSS that repaints a light-template chart with the dark template's colours under `scope`."""
    d = PALETTE["dark"]
    plot = f"{scope} .js-plotly-plot"
    return (f"{plot} .svg-container > .main-svg:first-child {{background: {d['bg']} !important;}}\n"
            f"{plot} .bg, {plot} .legend .bg {{fill: {d['bg']} !important;}}\n"
            f"{plot} text:not(.contourlabels text):not(.hoverlayer text) {{fill: {d['fg']} !important;}}\n"
            f"{plot} .gridlayer path, {plot} .zerolinelayer path {{stroke: {d['grid']} !important;}}\n"
            f"{plot} .modebar-btn path {{fill: {d['muted']} !important;}}\n"
            # threshold lines (#333333 shapes) and the break-even line (a black trace) in the page's own colour
            f"{plot} .shapelayer path[style*='rgb(51, 51, 51)'], {plot} .scatterlayer path.js-line[style*='rgb(0, 0, "
            f"0)'] {{stroke: {d['fg']} !important;}}\n")
