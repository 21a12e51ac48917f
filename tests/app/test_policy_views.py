"""Where a tier cannot act, the cockpit says so: its slider is disabled with the reason, its τ line gives way to a
note, and a run with both tiers off is called classic SD. Read from the policy (core.round_policy), no model."""

from __future__ import annotations

import gradio as gr

from app.tabs.generate import GenerateTab
from app.views import charts
from app.views.grid_chart import row_name
from core.config import DecodeConfig
from core.trace import Trace


def test_the_tier_sliders_are_disabled_and_say_why_where_no_tier_can_act():
    with gr.Blocks():
        tab = GenerateTab()
    for mode, words in (("sd", "off in classic SD"), ("plain", "off in plain decoding")):
        updates = tab.tier_sliders(mode)
        assert {u["interactive"] for u in updates.values()} == {False}
        assert all(words in u["label"] for u in updates.values())
    assert {u["interactive"] for u in tab.tier_sliders("via").values()} == {True}


def _shapes(fig) -> list:
    return [s for s in fig.layout.shapes if s.type == "line"]


def test_the_tau_lines_are_drawn_only_for_tiers_that_act():
    via = Trace("p", 1, DecodeConfig(mode="via", tau_accept=0.8, tau_slim=0.5).to_dict(), {})
    sd = Trace("p", 1, DecodeConfig(mode="sd", tau_accept=0.8, tau_slim=0.5).to_dict(), {})
    off = Trace("p", 1, DecodeConfig(mode="via", tau_accept=1.0, tau_slim=1.0).to_dict(), {})
    assert len(_shapes(charts.confidence_figure(via, 0.8, 0.5))) == 2
    notes = [a.text for a in charts.confidence_figure(sd, 0.8, 0.5).layout.annotations]
    assert not _shapes(charts.confidence_figure(sd, 0.8, 0.5))
    assert "τ_accept: tier off in classic SD" in notes and "τ_slim: tier off in classic SD" in notes
    assert off.policy.name == "classic SD" and sd.policy.tau_accept == 1.0
    assert row_name(1.0, 1.0).startswith("classic SD") and row_name(0.9, 1.0) == "VIA-SD at τ_accept 0.9, τ_slim off"
