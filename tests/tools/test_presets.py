"""Named recommended settings: one place (core.config.preset), every one valid."""

import pytest

from core.config import LOOKUP_PRESET, PRESETS, preset
from core.errors import ConfigError


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
