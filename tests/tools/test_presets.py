"""Named recommended settings: one place (core.config.preset), every one valid."""

import json

import pytest
from transformers import Qwen2Config

from core.config import LOOKUP_PRESET, PRESETS, preset
from core.errors import ConfigError
from core.models.layer_routes import PRESET_DIR, resolve_route, route_to_dict
from core.tools.pair_bench import CHEAPER_SLIM, SEARCHED_SLIM, SEARCHED_TAU


def test_lookup_is_the_lookup_preset_itself():
    assert preset("lookup") is LOOKUP_PRESET


def test_the_pair_preset_drafts_with_the_model_and_uses_the_calibrated_slim_route():
    pair = preset("qwen2.5-coder").validate()
    assert pair.mode == "via" and pair.drafter in ("model", "hybrid") and pair.slim_route == "calibrated-slim"
    assert pair.temperature == 0.0  # greedy: the audit keeps it exact


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_validates(name):
    assert preset(name).validate() == PRESETS[name]


def test_an_unknown_preset_is_one_clear_line():
    with pytest.raises(ConfigError, match="no preset 'gpt'.*lookup"):
        preset("gpt")


def test_the_tables_searched_slim_lead_is_the_shipped_calibrated_preset():
    """core/tools/pair_bench.py spells the searched mask out; it must stay the one the search saved."""
    saved = json.loads((PRESET_DIR / "qwen2.5-coder-1.5b.json").read_text())
    config = Qwen2Config(num_hidden_layers=saved["model"]["num_layers"], hidden_size=saved["model"]["hidden_size"],
                         vocab_size=saved["model"]["vocab_size"], num_attention_heads=12, num_key_value_heads=2)
    assert route_to_dict(resolve_route(SEARCHED_SLIM, config)) == saved["routes"]["slim"]
    assert resolve_route("calibrated-slim", config).key == resolve_route(SEARCHED_SLIM, config).key
    assert SEARCHED_TAU == saved["slim"]["tau_slim"]
    assert "status" not in saved  # a finished search, not the partial one


def test_the_tables_cheaper_slim_lead_skips_the_35_percent_budgets_searched_layers():
    """The README's search table: the 35 % budget's best mask skips layers 5, 7-8, 12-16, 23 and 25 of 28, whole."""
    config = Qwen2Config(num_hidden_layers=28, hidden_size=1536, vocab_size=151936, num_attention_heads=12,
                         num_key_value_heads=2)
    route = resolve_route(CHEAPER_SLIM, config)
    assert route.skipped == (5, 7, 8, 12, 13, 14, 15, 16, 23, 25)
    assert route.skip_attention == route.skip_mlp == ()
