"""Lossy verification rules (core.decoding.policies) on hand-made distributions: no model.

Each rule's decisions, its reduction to classic speculative decoding at its exact setting, and,
under sampling, that a speculative cascade emits exactly its mixed target pi at a position.
"""

import math
from dataclasses import astuple

import pytest
import torch

from core.decoding.policies import BildRule, CascadeRule, Verdict, make_rule
from core.decoding.sampling import Sampler, rejection_sample
from core.errors import ConfigError
from core.vocabulary import LOSSY_RULES, Why, check_alpha, exact_alpha

Q = torch.tensor([0.5, 0.3, 0.2, 0.0])  # the verifier: argmax 0, -log q = 0.69, 1.20, 1.61, inf


def judge(rule, q, token, p=None) -> tuple[bool, int, str]:
    return astuple(rule.judge(q, token, p, int(torch.argmax(q))))


def random_pairs(n: int, vocab: int = 6, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Drafter/verifier pairs, flat to peaked; some drafters certain to float precision (max p == 1.0)."""
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for i in range(n):
        sharp = 1.0 + 30.0 * float(torch.rand((), generator=g)) if i % 3 == 0 else 1.0
        p = torch.softmax(torch.randn(vocab, generator=g) * sharp, -1)
        q = torch.softmax(torch.randn(vocab, generator=g) * 2.0, -1)
        pairs.append((p, q))
    return pairs


# --- BiLD ---------------------------------------------------------------------------------------

def test_bild_keeps_the_argmax_and_tokens_within_the_rollback_distance():
    rule = BildRule(Sampler(), rollback=1.3)
    assert judge(rule, Q, 0) == (True, 0, Why.ARGMAX.value)
    assert rule.distance(Q, 1) == pytest.approx(-math.log(0.3))
    assert judge(rule, Q, 1) == (True, 1, Why.WITHIN_ROLLBACK.value), "-log 0.3 = 1.20 <= 1.3"
    assert judge(rule, Q, 2) == (False, 0, Why.ROLLED_BACK.value), "-log 0.2 = 1.61 > 1.3: the argmax replaces it"
    assert judge(rule, Q, 3)[0] is False, "a token the verifier gives no probability is always rolled back"
    assert judge(BildRule(Sampler(), rollback=2.0), Q, 2)[0]


def test_bild_rollback_zero_is_classic_greedy_sd():
    rule = BildRule(Sampler(), rollback=0.0)
    for p, q in random_pairs(60):
        for token in range(q.numel()):
            best = int(torch.argmax(q))
            assert judge(rule, q, token, p)[:2] == (token == best, best)


def test_bild_rollback_zero_is_classic_sd_under_sampling_draw_for_draw():
    bild, plain = Sampler(temperature=1.0, seed=5), Sampler(temperature=1.0, seed=5)
    rule = BildRule(bild, rollback=0.0)
    for p, q in random_pairs(60):
        token = int(torch.multinomial(p, 1, generator=plain.generator))
        torch.multinomial(p, 1, generator=bild.generator)  # keep the two streams in step
        assert judge(rule, q, token, p)[:2] == rejection_sample(plain, q, token, p)


def test_bild_under_sampling_keeps_within_rollback_and_otherwise_rejection_samples():
    sampler = Sampler(temperature=1.0, seed=0)
    rule = BildRule(sampler, rollback=1.3)
    p = torch.tensor([0.05, 0.9, 0.05, 0.0])  # q/p = 1/3 at token 1: plain SD would often reject it
    assert all(judge(rule, Q, 1, p)[0] for _ in range(200))
    outcomes = [judge(rule, Q, 2, torch.tensor([0.0, 0.0, 1.0, 0.0])) for _ in range(2000)]
    kept = sum(v[0] for v in outcomes) / len(outcomes)
    assert kept == pytest.approx(0.2, abs=0.04), "beyond the rollback distance: accepted w.p. q/p = 0.2"


# --- Speculative cascades: decisions ------------------------------------------------------------

P = torch.tensor([0.9, 0.1, 0.0, 0.0])  # a confident drafter that disagrees with the verifier
QC = torch.tensor([0.2, 0.6, 0.2, 0.0])  # max q 0.6; gap max q - max p = -0.3; TV(P, QC) = 0.7


@pytest.mark.parametrize("deferral, alpha, defers", [
    ("chow", 0.05, True),  # 0.9 < 1 - 0.05
    ("chow", 0.2, False),  # 0.9 >= 0.8
    ("diff", -0.5, True),  # -0.3 > -0.5
    ("diff", 0.0, False),
    ("opt", -0.5, True),  # -0.3 > -0.35
    ("opt", -0.4, False),  # -0.3 <= -0.28
    ("opt", 0.0, False),
])
def test_cascade_deferral_rules_on_a_hand_made_position(deferral, alpha, defers):
    rule = CascadeRule(Sampler(), deferral, alpha)
    assert rule.defers(QC, P) is defers
    assert torch.equal(rule.target(QC, 0, P), QC if defers else P)
    verdict = judge(rule, QC, 0, P)  # the greedy drafter drafted its argmax, token 0; the verifier prefers 1
    if defers:
        assert verdict == (False, 1, Why.DEFERRED_REPLACED.value)
    else:
        assert verdict == (True, 0, Why.NOT_DEFERRED.value)


def test_cascade_opt_reads_total_variation():
    rule = CascadeRule(Sampler(), "opt", -0.45)
    assert rule.defers(QC, P), "-0.3 > -0.45 * 0.7 = -0.315"
    assert not CascadeRule(Sampler(), "opt", -0.42).defers(QC, P), "-0.3 <= -0.42 * 0.7 = -0.294"


@pytest.mark.parametrize("name", ["cascade-chow", "cascade-diff", "cascade-opt"])
def test_cascade_never_defers_at_alpha_one(name):
    rule = make_rule(name, Sampler(), 1.0)
    assert not any(rule.defers(q, p) for p, q in random_pairs(60))


def test_prompt_lookup_counts_as_a_one_hot_drafter():
    q_flat = torch.tensor([0.3, 0.3, 0.2, 0.2])
    q_sure = torch.tensor([0.05, 0.9, 0.05, 0.0])
    chow = CascadeRule(Sampler(), "chow", 0.0)
    assert judge(chow, q_sure, 2)[0], "max p = 1: Chow trusts every copied token for alpha >= 0"
    assert not judge(CascadeRule(Sampler(), "chow", -1.0), q_sure, 2)[0]
    diff = CascadeRule(Sampler(), "diff", -0.2)  # defers when max q > 0.8
    assert judge(diff, q_flat, 2)[0] and not judge(diff, q_sure, 2)[0]
    opt = CascadeRule(Sampler(), "opt", -0.5)  # defers when max q - 1 > -0.5 * (1 - q(x))
    assert judge(opt, q_flat, 2)[0], "-0.7 <= -0.4"
    assert not judge(opt, q_sure, 0)[0], "-0.1 > -0.475"
    assert judge(BildRule(Sampler(), 2.0), q_flat, 2)[0], "BiLD reads only q"


# --- Reduction to classic SD at each rule's exact setting ---------------------------------------

@pytest.mark.parametrize("name", sorted(LOSSY_RULES))
def test_every_rule_is_classic_greedy_sd_at_its_exact_setting(name):
    rule = make_rule(name, Sampler(), exact_alpha(name))
    pairs = random_pairs(90)
    assert any(float(p.max()) == 1.0 for p, _ in pairs), "the set includes drafters certain to float precision"
    for p, q in pairs:
        best = int(torch.argmax(q))
        for draft_p in (p, None):
            token = int(torch.argmax(p))
            verdict = rule.judge(q, token, draft_p, best)
            assert (verdict.accepted, verdict.token) == (token == best, best)


@pytest.mark.parametrize("name", sorted(LOSSY_RULES))
def test_every_rule_is_classic_sd_under_sampling_at_its_exact_setting(name):
    ours, plain = Sampler(temperature=1.0, seed=11), Sampler(temperature=1.0, seed=11)
    rule = make_rule(name, ours, exact_alpha(name))
    for p, q in random_pairs(90, seed=1):
        token = int(torch.multinomial(p, 1, generator=plain.generator))
        torch.multinomial(p, 1, generator=ours.generator)
        verdict = rule.judge(q, token, p, int(torch.argmax(q)))
        assert (verdict.accepted, verdict.token) == rejection_sample(plain, q, token, p)


# --- Under sampling a cascade emits pi -----------------------------------------------------------

def emitted_distribution(rule, p: torch.Tensor, q: torch.Tensor, draws: int, seed: int = 0) -> torch.Tensor:
    """Monte Carlo: draft x ~ p, let the rule judge it, histogram what is emitted at this position."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.zeros_like(q)
    best = int(torch.argmax(q))
    for _ in range(draws):
        token = int(torch.multinomial(p, 1, generator=g))
        counts[rule.judge(q, token, p, best).token] += 1
    return counts / draws


@pytest.mark.parametrize("deferral, alpha", [("chow", 0.05), ("chow", 0.5), ("diff", -0.5), ("diff", 0.0),
                                             ("opt", -0.5), ("opt", 0.0)])
def test_cascade_emits_its_mixed_target_under_sampling(deferral, alpha):
    p = torch.tensor([0.6, 0.25, 0.1, 0.05])
    q = torch.tensor([0.1, 0.5, 0.3, 0.1])  # max p 0.6, max q 0.5, TV 0.5
    rule = CascadeRule(Sampler(temperature=1.0, seed=2), deferral, alpha)
    pi = rule.target(q, 0, p)
    got = emitted_distribution(rule, p, q, draws=8000)
    assert torch.allclose(got, pi, atol=0.02), (got, pi)
    if rule.defers(q, p):
        keep_all = emitted_distribution(_KeepAll(), p, q, draws=8000)
        assert not torch.allclose(keep_all, pi, atol=0.02), "the check must fail for a rule that accepts everything"


class _KeepAll:
    """A broken rule that accepts every draft: the Monte Carlo check must tell it apart from pi."""

    def judge(self, q, token, p, best):
        return Verdict(True, token, "kept")


def test_cascade_target_mixes_per_position():
    """At one position the rule defers, at another it does not: each emits its own pi."""
    rule = CascadeRule(Sampler(temperature=1.0, seed=4), "chow", 0.3)  # defer when max p < 0.7
    unsure_p, sure_p = torch.tensor([0.4, 0.3, 0.2, 0.1]), torch.tensor([0.8, 0.1, 0.05, 0.05])
    q = torch.tensor([0.05, 0.15, 0.3, 0.5])
    assert torch.allclose(emitted_distribution(rule, unsure_p, q, 6000), q, atol=0.02)
    assert torch.allclose(emitted_distribution(rule, sure_p, q, 6000), sure_p, atol=0.02)


# --- Settings ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, alpha", [("bild", -0.1), ("cascade-chow", -1.5), ("cascade-diff", 1.5),
                                         ("cascade-opt", -3.0), ("cascade-opt", float("nan")), ("bild", True)])
def test_alpha_out_of_range_is_one_config_error(name, alpha):
    with pytest.raises(ConfigError, match="verify_alpha"):
        check_alpha(name, alpha)


def test_unknown_rule_is_one_config_error():
    with pytest.raises(ConfigError, match="verify_rule must be one of"):
        make_rule("lenient", Sampler(), 0.0)


# --- Fronts (core.analysis.tradeoffs) and the trade-off chart, on hand-made points ----------------------------

def _points():
    import pandas as pd

    return pd.DataFrame([
        {"scheme": "via-sd", "setting": "exact", "modelled_speedup": 1.5, "words_differing": 0.0},
        {"scheme": "via-sd", "setting": "a", "modelled_speedup": 2.0, "words_differing": 0.05},
        {"scheme": "via-sd", "setting": "dominated", "modelled_speedup": 1.8, "words_differing": 0.10},
        {"scheme": "via-sd", "setting": "b", "modelled_speedup": 2.6, "words_differing": 0.30},
        {"scheme": "bild", "setting": "exact", "modelled_speedup": 1.5, "words_differing": 0.0},
        {"scheme": "bild", "setting": "c", "modelled_speedup": 2.2, "words_differing": 0.02},
        {"scheme": "bild", "setting": "same speed, more differing", "modelled_speedup": 2.2, "words_differing": 0.04},
    ])


def test_pareto_front_keeps_only_settings_nothing_beats():
    from core.analysis.tradeoffs import pareto_fronts

    fronts = pareto_fronts(_points())
    assert list(fronts["via-sd"]["setting"]) == ["exact", "a", "b"]
    assert list(fronts["bild"]["setting"]) == ["exact", "c"]


def test_dominance_table_names_the_fastest_scheme_per_budget():
    from core.analysis.tradeoffs import dominance_table

    table = dominance_table(_points(), budgets=(0.0, 0.02, 0.05, 0.5)).set_index("differing <=")
    assert table.loc[0.0, "fastest"] == "via-sd, bild", "both are classic SD at their exact setting"
    assert table.loc[0.02, "fastest"] == "bild" and table.loc[0.02, "bild"] == 2.2
    assert table.loc[0.05, "fastest"] == "bild"
    assert table.loc[0.5, "fastest"] == "via-sd" and table.loc[0.5, "via-sd"] == 2.6


def test_scheme_grids_start_at_classic_sd_and_validate():
    from core.analysis.tradeoffs import SCHEMES, scheme_settings
    from core.config import DecodeConfig

    for scheme in SCHEMES:
        settings = scheme_settings(scheme)
        first = settings[0]
        if scheme == "via-sd":
            assert (first["tau_accept"], first["tau_slim"]) == (1.0, 1.0)
        else:
            assert first["verify_alpha"] == exact_alpha(first["verify_rule"])
        for setting in settings:
            DecodeConfig().with_(**setting).validate()
    with pytest.raises(ConfigError):
        scheme_settings("medusa")


def test_tradeoff_chart_draws_a_front_per_scheme_and_stars_the_current_setting():
    from app.views.tradeoff_chart import tradeoff_chart

    fig = tradeoff_chart(_points(), current=("bild", "c"))
    fronts = [t for t in fig.data if t.mode == "lines+markers"]
    assert sorted(t.name for t in fronts) == ["BiLD", "VIA-SD"] and fronts[-1].name == "VIA-SD"  # drawn on top
    assert list(fronts[-1].x) == [0.0, 5.0, 30.0], "x is words differing in percent"
    star = [t for t in fig.data if t.name == "current"]
    assert len(star) == 1 and list(star[0].y) == [2.2]
    assert tradeoff_chart(None).layout.annotations, "an empty chart says how to fill it"


# --- In the engine, on a tiny random model --------------------------------------------------------

PROMPT = "the cat sat on the mat. the cat sat on the"


@pytest.fixture(scope="module")
def tiny():
    from tiny import tiny_bundle

    return tiny_bundle("llama", layers=6, drafter_layers=2)


def _config(**changes):
    from core.config import DecodeConfig

    base = DecodeConfig(mode="sd", max_new_tokens=24, gamma=4, chat_template=False, draft_route="skip-middle-50",
                        slim_route="skip-middle-25")
    return base.with_(**changes)


@pytest.mark.parametrize("drafter", ["self", "model", "ngram"])
@pytest.mark.parametrize("name", sorted(LOSSY_RULES))
def test_each_rule_at_its_exact_setting_equals_plain_greedy_in_the_engine(tiny, name, drafter):
    from core import generate

    plain = generate(tiny, PROMPT, _config(mode="plain")).token_ids
    trace = generate(tiny, PROMPT, _config(drafter=drafter, verify_rule=name, verify_alpha=exact_alpha(name)))
    assert trace.token_ids == plain
    assert trace.config.verify_rule == name


@pytest.mark.parametrize("name, alpha", [("bild", 3.0), ("cascade-chow", 0.5), ("cascade-diff", 0.0),
                                         ("cascade-opt", 0.0), ("cascade-chow", 1.0)])
def test_each_lossy_rule_runs_end_to_end_and_records_why(tiny, name, alpha):
    from core import generate, summarize

    exact = generate(tiny, PROMPT, _config(drafter="model", verify_rule=name, verify_alpha=exact_alpha(name)))
    lossy = generate(tiny, PROMPT, _config(drafter="model", verify_rule=name, verify_alpha=alpha))
    assert len(lossy.tokens) == 24
    vocabulary = {w.value for w in Why} | {"argmax", "argmax differs"}
    judged = [t.verdict for t in lossy.tokens if t.reason in ("not-confident", "free-verdict", "stop-token")]
    assert judged and set(judged) <= vocabulary
    assert summarize(lossy)["rejection_rate"] <= summarize(exact)["rejection_rate"]
    lenient = Why.WITHIN_ROLLBACK if name == "bild" else Why.NOT_DEFERRED
    assert lenient.value in judged, "the lossy setting kept some token the exact setting would have judged"
    assert lenient.value not in {t.verdict for t in exact.tokens}
    if (name, alpha) == ("cascade-chow", 1.0):  # never defers: every draft token is kept
        assert summarize(lossy)["rejection_rate"] == 0.0
        assert set(judged) == {Why.NOT_DEFERRED.value}


def test_bild_fallback_shortens_drafts(tiny):
    from core import generate, summarize

    long = summarize(generate(tiny, PROMPT, _config(drafter="model", verify_rule="bild")))
    short = summarize(generate(tiny, PROMPT, _config(drafter="model", verify_rule="bild", draft_stop_below=0.99)))
    assert short["drafted"] / short["rounds"] < long["drafted"] / long["rounds"]


def test_bad_rule_settings_are_one_config_error():
    with pytest.raises(ConfigError):
        _config(verify_rule="bild", verify_alpha=-1.0).validate()
    with pytest.raises(ConfigError):
        _config(verify_rule="cascade-opt", verify_alpha=-2.5).validate()
    with pytest.raises(ConfigError):
        _config(verify_rule="lenient").validate()
    _config(verify_rule="cascade-diff", verify_alpha=-1.0).validate()


def test_sweep_runs_every_scheme_on_a_tiny_model_and_exact_settings_agree(tiny, monkeypatch):
    import core.analysis.tradeoffs as tradeoffs

    monkeypatch.setattr(tradeoffs, "VIA_THRESHOLDS", (1.0, 0.5))
    monkeypatch.setattr(tradeoffs, "BILD_FALLBACKS", (0.0,))
    monkeypatch.setattr(tradeoffs, "BILD_ROLLBACKS", (0.0, 3.0))
    monkeypatch.setattr(tradeoffs, "CASCADE_ALPHAS", {k: (1.0,) for k in tradeoffs.CASCADE_ALPHAS})
    rows = tradeoffs.sweep_schemes(tiny, [PROMPT], _config(drafter="model", max_new_tokens=12))
    assert set(rows["scheme"]) == set(tradeoffs.SCHEMES)
    exact = rows.groupby("scheme").head(1)  # each scheme's first setting is classic SD
    assert (exact["words_differing"] == 0.0).all() and exact["identical_to_full"].all()
    assert exact["modelled_speedup"].nunique() == 1, "classic SD costs the same whichever scheme runs it"
    fronts = tradeoffs.pareto_fronts(tradeoffs.scheme_points(rows))
    assert all(len(front) >= 1 for front in fronts.values())
