"""core.tools.calibrate on a tiny model: costs of sub-layer routes, the search, restricted heads, held-apart scoring."""

import pytest

from core.analysis.slim_calibration import Calibrator, Text, route_cost, route_from_blocks
from core.models.layer_routes import resolve_route
from core.tools.calibrate import rank_units, search


@pytest.fixture(scope="module")
def calibrator():
    from tiny import tiny_bundle

    from core.config import DecodeConfig
    from core.decoding.engine import generate
    from core.models.prompting import encode_prompt

    bundle = tiny_bundle(layers=6)
    texts = []
    for prompt in ("hello there", "count 1 2 3 4"):
        ids = encode_prompt(bundle.verifier.tokenizer, prompt)
        out = generate(bundle, prompt, DecodeConfig(mode="plain", max_new_tokens=10)).token_ids
        texts.append(Text(ids + out, len(ids)))
    return Calibrator(bundle, texts)


def test_sublayer_costs_sit_between_whole_layer_routes(calibrator):
    model = calibrator.model
    full = resolve_route("full", model.config)
    mlp_only = route_from_blocks([(3, "mlp")], model.config, "probe")
    whole = route_from_blocks([(3, "mlp"), (3, "attention")], model.config, "probe")
    assert whole.skipped == (3,) and not whole.skip_mlp, "both blocks of a layer become a whole-layer skip"
    assert route_cost(model, full) == pytest.approx(1.0)
    assert route_cost(model, whole) < route_cost(model, mlp_only) < 1.0
    assert route_cost(model, full, vocab_share=0.5) < 1.0


def test_full_route_scores_perfectly_and_search_returns_scored_prefixes(calibrator):
    full = resolve_route("full", calibrator.model.config)
    (score,) = calibrator.score(full, 0.95, "prob")
    assert score.agreement == 1.0 and score.precision == 1.0 and score.coverage == 1.0
    assert score.net_saving == pytest.approx(0.0)
    units = rank_units(calibrator, sublayer=True)
    assert (0, "attention") not in [b for u in units for b in u], "layer 0's attention sizes the cache"
    tried = search(calibrator, 0.9, "prob", [1, 3], True, (None, 10), log=lambda *_: None)
    assert len(tried) == 4
    for _route, s in tried:
        assert 0 < s.cost < 1 and 0 <= s.coverage <= 1 and s.net_saving == pytest.approx(s.coverage - s.cost)
        assert s.tau_slim == 1.0 or s.precision >= 0.9 - 1e-9
    restricted = [s for _, s in tried if s.vocab_top == 10]
    assert all(s.cost < 1 for s in restricted)
