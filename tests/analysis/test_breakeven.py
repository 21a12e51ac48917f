"""Cost profiles, pricing and the break-even explanation, on hand-made laws and hand-made traces (no real model)."""

import json

import pytest
from tiny import tiny_model

from core.analysis.breakeven import (
    PUBLISHED,
    break_even_alpha,
    break_even_cost,
    expected_speedup,
    expected_tokens,
    explain,
    run_point,
)
from core.decoding.cost import CostModel
from core.decoding.cost_profiles import (
    CostProfile,
    ModelCosts,
    accelerator_costs,
    load_profile,
    model_signature,
    shipped_profiles,
)
from core.errors import ProfileError
from core.models.layer_routes import resolve_route
from core.tools.profile import PassTiming, fit
from core.trace import CallRecord, RoundRecord, TokenRecord, Trace
from core.vocabulary import DEFAULT_PROFILE

LAYERS = 6
# Hand-made laws: a one-token pass costs 1 + layers (so 7 for the full model = the unit); a k-token
# pass costs 2 + k + layers * 2.
LAWS = ModelCosts(num_layers=LAYERS, single_fixed=1.0, single_layer=1.0, fixed=2.0, per_token=1.0,
                  layer_fixed=2.0, layer_per_token=0.0)


@pytest.fixture(scope="module")
def model():
    return tiny_model("llama", LAYERS)


@pytest.fixture(scope="module")
def costs(model):
    profile = CostProfile(name="hand", kind="measured", label="hand-made", device="cpu", dtype="float32",
                          time_unit="s", models={model_signature(model): LAWS})
    return CostModel(model, profile)


# --- the formula -----------------------------------------------------------------------------------


def test_expected_tokens_matches_the_standard_formula_and_its_limits():
    assert expected_tokens(0.0, 4) == pytest.approx(1.0)
    assert expected_tokens(1.0, 4) == pytest.approx(5.0)
    assert expected_tokens(0.5, 3) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert expected_tokens(0.999999, 4) == pytest.approx(5.0, rel=1e-4)


def test_break_even_points_sit_exactly_on_speedup_one():
    alpha = break_even_alpha(0.2, 4, 1.0)
    assert alpha is not None and expected_speedup(alpha, 0.2, 4, 1.0) == pytest.approx(1.0, abs=1e-9)
    cost = break_even_cost(0.7, 4, 1.0)
    assert cost is not None and expected_speedup(0.7, cost, 4, 1.0) == pytest.approx(1.0)
    # monotone: a dearer drafter needs more acceptance
    assert break_even_alpha(0.3, 4, 1.0) > break_even_alpha(0.1, 4, 1.0)


def test_a_drafter_too_dear_for_any_acceptance_has_no_break_even():
    # 4 drafts at 1.1 passes each + verification: even 5 tokens per round cannot pay 5.4 passes
    assert break_even_alpha(1.1, 4, 1.0) is None
    # a free drafter at zero acceptance still loses when verification costs more than one pass
    assert break_even_cost(0.0, 4, 1.5) is None
    # and a free drafter with free verification always pays
    assert break_even_alpha(0.0, 4, 1.0) == 0.0


def test_a_round_that_cost_nothing_is_unboundedly_fast_and_said_so():
    # a free drafter whose tokens no verifier checked (tier 1 kept them all): no division by zero
    assert expected_speedup(0.5, 0.0, 4, 0.0) == float("inf")
    assert expected_speedup(0.5, 0.0, 4, 1.0) == expected_tokens(0.5, 4)


def test_published_regime_is_fast_under_the_formula():
    low = expected_speedup(PUBLISHED.alpha[0], PUBLISHED.cost[1], 4, 1.0)
    assert low > 1.5


# --- profiles and pricing ----------------------------------------------------------------------------


def test_fit_recovers_known_laws():
    points = [PassTiming("m", f"r{layers}", layers, k, LAWS.time(layers, k))
              for layers in (2, 4, 6) for k in (1, 2, 4, 8, 16, 64)]
    fitted = fit(points, LAYERS)
    for layers, k in [(3, 1), (5, 10), (6, 100)]:
        assert fitted.time(layers, k) == pytest.approx(LAWS.time(layers, k), rel=1e-6)
    assert all(p.fitted == pytest.approx(p.seconds) for p in points)


def test_fit_refuses_too_few_points():
    with pytest.raises(ProfileError):
        fit([PassTiming("m", "full", 6, 1, 1.0), PassTiming("m", "full", 6, 2, 2.0)], LAYERS)


def test_cost_units_are_full_one_token_passes(model, costs):
    full, half = resolve_route("full", model.config), resolve_route("early-exit-50", model.config)
    assert costs.cost_units(model, full, 1) == pytest.approx(1.0)
    assert costs.cost_units(model, half, 1) == pytest.approx((1 + 3) / 7)
    assert costs.cost_units(model, full, 4) == pytest.approx((2 + 4 + 12) / 7)
    assert costs.call_cost(model, half) == costs.cost_units(model, half, 1)
    # plain: a prefill of 10 tokens, then one pass per token
    assert costs.plain_cost(10, 5) == pytest.approx((2 + 10 + 12) / 7 + 4)


def test_accelerator_profile_prices_by_weights_read_nearly_flat_in_tokens(model):
    costs = CostModel(model)  # the default profile
    assert costs.profile.kind == "modelled" and costs.profile.name == DEFAULT_PROFILE
    full = resolve_route("full", model.config)
    assert costs.cost_units(model, full, 1) == pytest.approx(1.0)
    assert 1.0 < costs.cost_units(model, full, 16) < 1.06
    laws = accelerator_costs(model)
    head = sum(p.numel() * p.element_size() for p in model.get_output_embeddings().parameters())
    assert laws.fixed == head  # bytes read: a quantised model reads fewer


def test_a_measured_profile_without_the_model_falls_back_and_says_so(model):
    profile = CostProfile(name="other", kind="measured", label="other machine", device="cpu", dtype="float32",
                          time_unit="s", models={})
    costs = CostModel(model, profile)
    assert "modelled accelerator" in costs.label


def test_profiles_load_by_name_or_fail_with_one_clear_error(tmp_path):
    with pytest.raises(ProfileError, match="no cost profile"):
        load_profile("no-such-profile")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x"}))
    with pytest.raises(ProfileError, match="not a valid profile"):
        load_profile(bad)
    for name in shipped_profiles():  # every shipped profile loads and says what it is
        profile = load_profile(name)
        assert profile.kind in ("measured", "modelled") and profile.label


def test_profile_round_trips_through_json(costs):
    again = CostProfile.from_json(costs.profile.to_json())
    assert again.models == costs.profile.models


# --- a run's point and its sentence, on hand-made traces ---------------------------------------------


def _priced(trace: Trace, costs: CostModel) -> Trace:
    """Price the calls as the engine does, once (each role's first call is the prefill that reads the prompt)."""
    seen = set()
    for call in (c for r in trace.rounds for c in r.calls):
        price = lambda k, layers=call.layers: costs.cost_units(costs.verifier, layers, k)  # noqa: E731
        call.cost_units, call.prefill = price(call.tokens_processed), call.role not in seen
        beyond = max(1, call.tokens_processed - trace.prompt_token_count + 1)
        call.prefill_units = call.cost_units - price(beyond) if call.prefill else 0.0
        seen.add(call.role)
    trace.cost_profile, trace.cost_label = costs.profile.name, costs.label
    return trace


def _trace(rounds: list[tuple[int, int, bool]], drafter_layers: int = 3, gamma: int = 4, mode: str = "sd",
           costs: CostModel | None = None) -> Trace:
    """Rounds of (drafted, kept, refused): one drafter call per draft token, one full pass of drafted+1 tokens;
    in round 0 the first pass of each model also reads the 10-token prompt."""
    tokens, records = [], []
    for index, (drafted, kept, refused) in enumerate(rounds):
        prompt = 10 if index == 0 else 0
        calls = [CallRecord("drafter", 1 + (prompt - 1 if i == 0 else 0), drafter_layers, 0.0, 0.0, False)
                 for i in range(drafted)]
        calls.append(CallRecord("full", drafted + 1 + (prompt - 1 if index == 0 else 0), LAYERS, 0.0, 0.0, False))
        records.append(RoundRecord(index, list(range(drafted)), accepted=kept, emitted=kept + 1, calls=calls))
        outcomes = ["full-accepted"] * kept + ["full-corrected" if refused else "full-bonus"]
        tokens += [TokenRecord(len(tokens), 1, "x", index, 3, o, "", "") for o in outcomes]
    trace = Trace("p", 10, {"mode": mode, "gamma": gamma}, {}, tokens, records)
    return _priced(trace, costs) if costs is not None else trace


def test_run_point_counts_only_judged_drafts_and_prices_calls(costs):
    trace = _trace([(4, 1, True), (4, 4, False), (4, 0, True)], costs=costs)
    point = run_point(trace)
    assert (point.drafted, point.kept, point.refused) == (12, 5, 2)
    assert point.alpha == pytest.approx(5 / 7)
    assert point.cost == pytest.approx((1 + 3) / 7)  # one-token drafter pass, 3 layers
    assert point.verify == pytest.approx((2 + 5 + 12) / 7)  # a 5-token full pass; the prompt's prefill left out
    assert point.gamma == 4


def test_sentence_for_a_slow_self_drafter_names_cost_acceptance_and_break_even(costs):
    trace = _trace([(4, 1, True)] * 3, drafter_layers=5, costs=costs)  # dear drafter, half the judged drafts kept
    text = explain(trace)
    point = run_point(trace)
    assert point.speedup < 1
    assert f"cost {point.cost:.2f} of a full pass" in text and "50% of drafts were kept" in text
    needed = break_even_alpha(point.cost, 4, point.verify)
    assert (f">= {needed:.0%} kept" in text) if needed is not None else "no acceptance breaks even" in text


def test_sentence_for_a_fast_free_drafter(model):
    profile = CostProfile(name="flat", kind="measured", label="flat", device="cpu", dtype="float32", time_unit="s",
                          models={model_signature(model): ModelCosts(LAYERS, 1, 1, 7, 0, 1, 0)})
    costs = CostModel(model, profile)
    trace = _trace([(4, 4, False)] * 3, drafter_layers=0)
    for round_ in trace.rounds:  # prompt lookup: no drafter calls at all
        round_.calls = [c for c in round_.calls if c.role != "drafter"]
    text = explain(_priced(trace, costs))
    assert run_point(trace).cost == 0.0
    assert "stays ahead" in text and "100% of drafts were kept" in text


def test_sentences_for_plain_and_for_runs_that_drafted_nothing(costs):
    assert explain(_trace([(0, 0, False)] * 2, mode="plain", costs=costs)).startswith("Plain decoding")
    assert "Nothing was drafted" in explain(_trace([(0, 0, False)] * 2, costs=costs))


def test_breakeven_figure_marks_the_run_the_others_and_the_published_regime(costs):
    from app.views.breakeven_chart import breakeven_figure

    point = run_point(_trace([(4, 1, True)] * 3, costs=costs))
    other = run_point(_trace([(4, 3, True)] * 3, costs=costs))
    fig = breakeven_figure(point, [("earlier run", other)], profile_label="hand-made")
    names = [t.name for t in fig.data]
    assert "this run" in names and "earlier run" in names and "break-even (1.0x)" in names
    star = fig.data[names.index("this run")]
    assert (star.x[0], star.y[0]) == (pytest.approx(point.alpha), pytest.approx(point.cost))
    edge = fig.data[names.index("break-even (1.0x)")]
    for a, c in zip(edge.x, edge.y, strict=True):
        assert expected_speedup(a, c, point.gamma, point.verify) == pytest.approx(1.0)
    box = fig.layout.shapes[0]
    assert (box.x0, box.x1, box.y0, box.y1) == (*PUBLISHED.alpha, *PUBLISHED.cost)
    assert "hand-made" in fig.layout.title.text
    assert breakeven_figure(None).data  # an empty view still draws the curves


def test_cli_prints_one_why_sentence_per_run(costs):
    from core.tools.cli import why_lines

    text = why_lines({"plain": _trace([(0, 0, False)], mode="plain", costs=costs),
                      "sd": _trace([(4, 1, True)] * 2, costs=costs)})
    assert costs.label in text
    assert "plain: Plain decoding" in text and "sd: Drafting cost" in text


def test_walkthrough_on_break_even_has_a_valid_config():
    from core.config import DecodeConfig
    from examples import load_walkthroughs

    walk = next(w for w in load_walkthroughs() if w["title"].startswith("Why self-drafting loses"))
    config = DecodeConfig(**walk["config"]).validate()
    assert config.drafter == "self" and config.mode == "sd"
    assert len(walk["talking_points"]) >= 4


def test_explain_run_reads_the_recorded_prices_of_the_run(model):
    from core.analysis.breakeven import explain_run
    from core.analysis.metrics import summarize

    accelerator = CostModel(model)
    trace = _trace([(4, 1, True)] * 2, costs=accelerator)
    trace.plain_cost_units = accelerator.plain_cost(10, len(trace.tokens))
    result = explain_run(trace)
    assert result.point == run_point(trace)
    assert result.sentence.startswith("Drafting cost") and "accelerator" in result.profile_label
    assert result.predicted_speedup == pytest.approx(accelerator.predicted_speedup(trace))
    assert result.predicted_speedup == summarize(trace)["modelled_speedup"]


def test_the_engine_prices_each_call_once_and_the_prefill_apart(model):
    from tiny import tiny_bundle

    from core.config import DecodeConfig
    from core.decoding.engine import generate

    bundle = tiny_bundle()
    for profile in (None, CostModel(bundle.verifier.model).profile):
        trace = generate(bundle, "abc abc abc", DecodeConfig(max_new_tokens=12, chat_template=False), profile=profile)
        costs = CostModel(bundle.verifier.model, profile)
        assert trace.cost_profile == costs.profile.name and trace.cost_label == costs.label
        calls = [c for r in trace.rounds for c in r.calls]
        assert [c.role for c in calls if c.prefill] == ["drafter", "slim", "full"][:len({c.role for c in calls})]
        assert all(c.prefill_units == 0.0 for c in calls if not c.prefill)
        assert all(0.0 < c.prefill_units < c.cost_units for c in calls if c.prefill)
        assert sum(c.cost_units for c in calls) == pytest.approx(costs.calls_cost(trace))  # priced as the profile does
        assert trace.plain_cost_units == pytest.approx(costs.plain_cost(trace.prompt_token_count, len(trace.tokens)))


def _lookup_trace(rounds: list[tuple[int, int, str]]) -> Trace:
    """Prompt-lookup rounds of (drafted, kept, last outcome): one full pass of drafted + 1 tokens each (the
    first also reads the 10-token prompt); no drafter calls, a copy costs nothing."""
    tokens, records = [], []
    for index, (drafted, kept, last) in enumerate(rounds):
        calls = [CallRecord("full", drafted + 1 + (9 if index == 0 else 0), LAYERS, 0.0, 0.0, False)]
        records.append(RoundRecord(index, list(range(drafted)), accepted=kept, emitted=kept + 1, calls=calls))
        tokens += [TokenRecord(len(tokens), 1, "x", index, 3, o, "", "") for o in ["full-accepted"] * kept + [last]]
    return Trace("p", 10, {"mode": "sd", "gamma": 4}, {}, tokens, records)


def test_lookup_ceiling_is_one_for_plain_decoding_and_bounds_a_wasteful_run(model, costs):
    from core.analysis.breakeven import lookup_ceiling

    plain = _lookup_trace([(0, 0, "plain")] * 5)
    assert lookup_ceiling(plain, costs) == pytest.approx(1.0)  # nothing to merge, nothing wasted
    run = _lookup_trace([(4, 4, "full-bonus"), (4, 1, "full-corrected"), (4, 0, "full-corrected")])
    # The oracle: prefill writes token 0; a pass over tokens 0-5 writes token 6 (the first correction), a pass over
    # token 6 writes token 7 (the second); the answer ends on the model's own token.
    unit = lambda k: costs.cost_units(model, LAYERS, k)  # noqa: E731
    oracle = unit(10) + unit(6) + unit(1)
    assert lookup_ceiling(run, costs) == pytest.approx(costs.calls_cost(run) / oracle)
    assert lookup_ceiling(run, costs) > 1.0


def test_cli_settings_start_from_the_lookup_preset_and_take_explicit_options():
    from core.config import LOOKUP_PRESET, DecodeConfig
    from core.tools.cli import build_config, parser

    preset = build_config(parser().parse_args(["x", "--preset", "lookup", "--tau-accept", "0.7"]))
    assert preset == LOOKUP_PRESET.with_(tau_accept=0.7).validate()
    plain_defaults = build_config(parser().parse_args(["x", "--copy-evidence", "audit", "--audit-span", "8"]))
    assert plain_defaults == DecodeConfig(copy_evidence="audit", audit_span=8).validate()
