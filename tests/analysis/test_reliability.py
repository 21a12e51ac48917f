"""Reliability math on hand-made arrays, sub-layer routing on a tiny model, and the app's reliability figures."""

import math

import numpy as np
import pytest
import torch
from transformers import DynamicCache

from core.analysis.prediction import predict_tiers
from core.analysis.reliability import (
    ModelSignals,
    ReliabilityData,
    coverage_precision,
    fires,
    lowest_threshold_for_precision,
    reliability_bins,
    signals_from_logits,
)
from core.decoding.confidence import confidence
from core.errors import RoutingError
from core.models.layer_routes import (
    find_preset,
    resolve_route,
    route_from_dict,
    route_to_dict,
    with_sublayer_skips,
)
from core.models.routed_layers import routed
from core.vocabulary import SIGNALS


def _model_signals(conf: list[float], agree: list[bool], drafted: list[bool] | None = None) -> ModelSignals:
    values = np.array(conf)
    return ModelSignals(choice=np.arange(len(conf)), confidence={s: values for s in SIGNALS},
                        agree=np.array(agree), drafted=np.array(drafted if drafted else [True] * len(conf)),
                        copy=np.zeros(len(conf), dtype=bool))


def hand_made(drafted: list[bool] | None = None) -> ReliabilityData:
    return ReliabilityData(
        drafter=_model_signals([0.9, 0.85, 0.3, 0.2, 0.95], [True, False, True, False, True], drafted),
        slim=_model_signals([0.7, 0.6, 0.8, 0.2, 0.1], [True, True, False, True, True]),
        full_choice=np.arange(5), stop=np.array([False, False, False, False, True]))


def test_predicted_tiers_follow_the_engine_rule_and_count_errors():
    p = predict_tiers(hand_made(), tau_accept=0.8, tau_slim=0.5)
    # tier 1: positions 0, 1 (position 4 is a stop token: never tier 1); tier 2: position 2; tier 3: 3 and 4.
    assert p.tier_share == pytest.approx({1: 0.4, 2: 0.2, 3: 0.4})
    assert p.error_rate == pytest.approx(0.4)  # position 1 (drafter wrong) and 2 (slim wrong)
    assert p.tier_precision[1] == pytest.approx(0.5) and p.tier_precision[2] == 0.0 and p.tier_precision[3] == 1.0
    assert "predicted" in p.label


def test_threshold_one_switches_tiers_off_and_zero_takes_everything():
    off = predict_tiers(hand_made(), 1.0, 1.0)
    assert off.tier_share == {1: 0.0, 2: 0.0, 3: 1.0} and off.error_rate == 0.0
    assert math.isnan(off.tier_precision[1])
    everything = predict_tiers(hand_made(), 0.0, 0.0)
    assert everything.tier_share[1] == pytest.approx(0.8)  # all but the stop token
    assert everything.tier_share[2] == pytest.approx(0.2)


def test_positions_without_a_draft_go_to_the_full_model():
    p = predict_tiers(hand_made(drafted=[False] * 5), 0.0, 0.0)
    assert p.tier_share == {1: 0.0, 2: 0.0, 3: 1.0}


def test_reliability_bins_count_and_agreement_per_bin():
    table = reliability_bins(np.array([0.05, 0.15, 0.95, 1.0]), np.array([False, True, True, False]), bins=10)
    assert list(table["count"]) == [1, 1, 0, 0, 0, 0, 0, 0, 0, 2]  # 1.0 falls in the last bin
    assert table["agreement"][0] == 0.0 and table["agreement"][1] == 1.0 and table["agreement"][9] == 0.5
    assert math.isnan(table["agreement"][5])
    assert table["mean_confidence"][9] == pytest.approx(0.975)


def test_coverage_and_precision_against_tau():
    conf = np.array([0.9, 0.8, 0.6, 0.4])
    agree = np.array([True, False, True, True])
    table = coverage_precision(conf, agree, [0.0, 0.7, 0.85, 1.0]).set_index("tau")
    assert table.loc[0.0, "coverage"] == 1.0 and table.loc[0.0, "precision"] == 0.75
    assert table.loc[0.7, "coverage"] == 0.5 and table.loc[0.7, "precision"] == 0.5
    assert table.loc[0.85, "precision"] == 1.0
    assert table.loc[1.0, "coverage"] == 0.0 and math.isnan(table.loc[1.0, "precision"])
    assert not fires(np.array([1.0]), 1.0)[0]


def test_lowest_threshold_meeting_a_precision_target():
    conf = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6])
    agree = np.array([True, True, True, False, True, False])
    assert lowest_threshold_for_precision(conf, agree, 1.0, min_count=1) == 0.85
    assert lowest_threshold_for_precision(conf, agree, 0.8, min_count=1) == 0.7  # 4 of 5
    assert lowest_threshold_for_precision(conf, agree, 1.0, min_count=4) == 1.0  # none qualifies: tier off
    tied = np.array([0.9, 0.9, 0.5])
    assert lowest_threshold_for_precision(tied, np.array([True, False, True]), 1.0, min_count=1) == 1.0


def test_vectorised_signals_equal_core_confidence():
    logits = torch.randn(6, 50) * 3
    choice, conf = signals_from_logits(logits)
    for i in range(6):
        probs = torch.softmax(logits[i], -1)
        assert choice[i] == int(probs.argmax())
        for signal in SIGNALS:
            assert conf[signal][i] == pytest.approx(confidence(probs, int(choice[i]), signal), abs=1e-5)


def test_measure_on_a_tiny_model_lines_up_with_the_text():
    from tiny import tiny_bundle

    from core.analysis.reliability import measure
    from core.config import DecodeConfig

    bundle = tiny_bundle(layers=6)
    config = DecodeConfig(max_new_tokens=12, slim_route="full", draft_route="skip-middle-50")
    data = measure(bundle, "hello there", config)
    assert len(data) == 12 and len(data.drafter.choice) == 12
    assert data.slim.agree.all(), "a slim verifier with every layer is the full model"
    assert data.costs["slim"] == pytest.approx(1.0)
    lookup = measure(bundle, "hello there", config.with_(drafter="ngram"))
    assert (lookup.drafter.choice[~lookup.drafter.drafted] == -1).all()


def test_app_figures_and_predicted_shares_build_without_a_model():
    from app.views.reliability_chart import (
        confidence_histogram_figure,
        coverage_precision_figure,
        predicted_tier_shares,
        prediction_text,
        reliability_figure,
        tier_shares_figure,
    )

    data = hand_made()
    for figure in (reliability_figure(data), coverage_precision_figure(data, 0.8, 0.5),
                   confidence_histogram_figure(data, 0.8, 0.5), reliability_figure(None)):
        assert figure.to_dict()["layout"]["title"]["text"]
    prediction = predicted_tier_shares(data, 0.8, 0.5)
    assert prediction.tier_share[1] == pytest.approx(0.4)
    assert "40%" in prediction_text(prediction) and "predicted" in prediction_text(prediction).lower()
    assert len(tier_shares_figure(prediction, {1: 0.3, 2: 0.3, 3: 0.4}).data) == 3
    assert predicted_tier_shares(None, 0.8, 0.5) is None


# ---------------------------------------------------------------- sub-layer routing (SWIFT-style)

def test_skipping_both_blocks_of_a_layer_equals_skipping_the_layer():
    from tiny import tiny_bundle

    model = tiny_bundle(layers=6).verifier.model
    ids = torch.tensor([[3, 4, 5, 6, 7, 8]])
    whole = resolve_route("layers:0-2,4-5", model.config)
    blocks = resolve_route("layers:0-5;no-attn:3;no-mlp:3", model.config)
    assert blocks.key != whole.key and blocks.describe().endswith("MLP of 3")
    with torch.inference_mode():
        with routed(whole):
            a = model(input_ids=ids).logits
        with routed(blocks):
            b = model(input_ids=ids).logits
        with routed(resolve_route("layers:0-5;no-mlp:3", model.config)):
            c = model(input_ids=ids).logits
        full = model(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-6)
    assert not torch.allclose(c, full, atol=1e-4) and not torch.allclose(c, a, atol=1e-4)


def test_sublayer_route_keeps_the_kv_cache_rules():
    """Incremental decoding with a cache under a sub-layer route equals recomputing without one."""
    from tiny import tiny_bundle

    model = tiny_bundle(layers=6).verifier.model
    route = resolve_route("layers:0-1,3-5;no-attn:3,4;no-mlp:0,5", model.config)
    ids = [3, 9, 4, 12, 5, 7, 8, 2]
    with torch.inference_mode(), routed(route):
        reference = model(input_ids=torch.tensor([ids])).logits[0]
        cache = DynamicCache(config=model.config)
        model(input_ids=torch.tensor([ids[:5]]), cache=cache, use_cache=True)
        step = model(input_ids=torch.tensor([ids[5:]]), position_ids=torch.arange(5, 8).unsqueeze(0), cache=cache,
                     use_cache=True).logits[0]
    assert torch.allclose(step, reference[5:], atol=1e-4)


def test_sublayer_routes_refuse_what_the_cache_needs_and_round_trip_as_presets(tmp_path):
    from tiny import tiny_bundle

    config = tiny_bundle(layers=6).verifier.model.config
    with pytest.raises(RoutingError, match="sizes the KV cache"):
        resolve_route("layers:0-5;no-attn:0", config)
    with pytest.raises(RoutingError, match="does not run"):
        with_sublayer_skips(resolve_route("layers:0-2", config), {4}, set(), config)
    with pytest.raises(RoutingError, match="no-attn"):
        resolve_route("layers:0-5;attn:2", config)
    route = resolve_route("layers:0-2,4-5;no-mlp:1", config)
    assert route_from_dict(route_to_dict(route), config).key == route.key
    assert resolve_route("calibrated-slim", config).name.endswith("(no calibrated preset)")
    assert find_preset(config, tmp_path) is None


def test_shipped_presets_resolve_by_name():
    """Every preset in core/presets names a valid route of its model and resolves as calibrated-slim."""
    from transformers import LlamaConfig

    from core.models.layer_routes import PRESET_DIR

    for path in sorted(PRESET_DIR.glob("*.json")):
        preset = __import__("json").loads(path.read_text())
        shape = preset["model"]
        if shape["model_type"] != "llama":
            continue
        config = LlamaConfig(num_hidden_layers=shape["num_layers"], hidden_size=shape["hidden_size"],
                             vocab_size=shape["vocab_size"])
        route = resolve_route("calibrated-slim", config)
        assert route.name.startswith("calibrated-slim")
        assert route.skipped == tuple(preset["routes"]["slim"]["skip_layers"])
        assert preset["held_apart"]["prompts"] > 0 and "verdict" in preset
