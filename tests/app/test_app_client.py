"""The app's public endpoints, called with gradio_client against the real embedded model (short runs)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from app_fixtures import (  # noqa: F401  (fixtures)
    PROMPT,
    SETTINGS,
    TEST_SETTINGS,
    app_client_fixture,
    app_url_fixture,
    by_name,
    settings_with,
)

pytestmark = pytest.mark.embedded

OUTCOMES = {"direct-accepted", "slim-accepted", "slim-regenerated", "full-accepted", "full-corrected", "full-bonus",
            "plain"}


def _spans(html: str) -> list[dict]:
    """data-* attributes of every token span in the rendered text."""
    pattern = r'<span class="tok[^"]*" data-pos="(\d+)" data-round="(\d+)" data-tier="(\d)" ' \
              r'data-outcome="([a-z-]+)"'
    return [{"pos": int(p), "round": int(r), "tier": int(t), "outcome": o} for p, r, t, o in re.findall(pattern, html)]


def _check_main(result: tuple, expect_tokens: int | None = None) -> tuple[list[dict], dict]:
    tokens_html, status, legend, metrics_html, metrics, conf_plot, timeline_plot, files = result
    spans = _spans(tokens_html)
    assert spans, f"no coloured tokens in {tokens_html[:300]}"
    assert {s["outcome"] for s in spans} <= OUTCOMES
    assert [s["pos"] for s in spans] == list(range(len(spans)))
    assert metrics["tokens"] == len(spans)
    if expect_tokens is not None:
        assert metrics["tokens"] == expect_tokens or metrics["stop_reason"] == "eos"
    assert metrics["rounds"] == len({s["round"] for s in spans})
    assert metrics["tokens_per_round"] == pytest.approx(metrics["tokens"] / metrics["rounds"])
    assert sum(v for k, v in metrics.items() if k.startswith("share_")) == pytest.approx(1.0)
    assert metrics["modelled_speedup"] > 0 and 0.0 <= metrics["rejection_rate"] <= 1.0
    assert 0.0 <= metrics["full_agreement"] <= 1.0 and metrics["common_prefix"] <= metrics["tokens"]
    for outcome in OUTCOMES:  # legend counts agree with the spans
        count = sum(s["outcome"] == outcome for s in spans)
        assert metrics[f"share_{outcome}"] == pytest.approx(count / len(spans))
    assert "Modelled accelerator" in metrics_html and "Measured wall clock" in metrics_html
    assert "×" in legend and "direct accept" in legend
    for plot in (conf_plot, timeline_plot):
        assert plot["type"] == "plotly" and json.loads(plot["plot"])["data"]
    names = sorted(str(f) for f in files)
    assert any(n.endswith("_tokens.csv") for n in names) and any(n.endswith(".json") for n in names)
    csv = pd.read_csv(next(n for n in names if n.endswith("_tokens.csv")))
    assert len(csv) == len(spans) and list(csv["outcome"]) == [s["outcome"] for s in spans]
    return spans, metrics


def test_generate_streams_coloured_tokens(app_client: object) -> None:
    job = app_client.submit(PROMPT, *SETTINGS, api_name="/generate")
    result = job.result(timeout=600)
    spans, metrics = _check_main(result[:8], expect_tokens=16)
    assert 'data-metric="modelled_speedup"' in result[8]  # the headline beside the sliders
    assert "Done" in result[1]
    assert "title=" in result[0]  # hover tooltips
    assert len(job.outputs()) >= 2, "the run should stream partial results"


def test_reroute_changes_routing_and_flags_timing(app_client: object) -> None:
    low = app_client.predict(PROMPT, *SETTINGS, api_name="/reroute")
    high_settings = settings_with(tau_accept=1.0, tau_slim=1.0)  # tiers 1 and 2 off: every token needs the full model
    high = app_client.predict(PROMPT, *high_settings, api_name="/reroute")
    _, m_low = _check_main(low[:8])
    spans_high, m_high = _check_main(high[:8])
    assert "Re-routed in" in high[1]
    assert {s["tier"] for s in spans_high} == {3}
    assert m_high["identical_to_full"] is True  # only the full model decided: same text as plain greedy
    assert m_high["timing_complete"] is False and "not the run's" in high[3]
    assert m_low["modelled_speedup"] != pytest.approx(m_high["modelled_speedup"])


def test_out_of_order_or_out_of_range_thresholds_are_clamped_with_one_line(app_client: object) -> None:
    """Sliders never refuse: τ_slim above τ_accept follows it down, a value out of range is clamped, each said in
    one line, and the run is the one with the values used."""
    result = app_client.predict(PROMPT, *settings_with(tau_accept=0.4, tau_slim=0.8), api_name="/reroute")
    assert "τ_slim 0.8 above τ_accept 0.4: τ_slim follows τ_accept down to 0.4" in result[1]
    assert "Re-routed" in result[1] and "out of order" not in result[1]
    assert "τ 0.4 / 0.4" in result[1]
    result = app_client.predict(PROMPT, *settings_with(tau_accept=1.5, max_new_tokens=0), api_name="/generate")
    assert "τ_accept 1.5 is above its range (0–1): using 1" in result[1]
    assert "max new tokens 0 is below its range (1–" in result[1] and "1 token in 1 round" in result[1]
    again = app_client.predict(PROMPT, *SETTINGS, api_name="/generate")  # the app keeps working
    assert again[1].startswith("**Done")


@pytest.mark.parametrize(("prompt", "expected"), [("   ", "prompt is empty"), ("x" * 25_000, "the limit is")],
                         ids=["empty", "huge"])
def test_bad_prompts_give_a_message(app_client: object, prompt: str, expected: str) -> None:
    result = app_client.predict(prompt, *SETTINGS, api_name="/generate")
    assert expected in result[1]


def test_bad_route_gives_a_message(app_client: object) -> None:
    settings = list(SETTINGS)
    settings[2] = "layers:0-99"
    result = app_client.predict(PROMPT, *settings, api_name="/generate")
    assert "route names layers" in result[1]


def test_compare_marks_differences(app_client: object) -> None:
    plain, sd, via, table, status = app_client.predict(PROMPT, *SETTINGS, False, api_name="/compare")
    assert "viasd-compare-plain" in plain and 'data-differs="0"' in plain
    assert 'data-differs="0"' in sd  # greedy classic SD reproduces the full model exactly
    assert "viasd-compare-via" in via and "NOT meaningful" in status
    assert "τ_accept 0.5, τ_slim 0.3" in via  # the thresholds VIA-SD used, in words
    df = pd.DataFrame(table["data"], columns=table["headers"])
    assert list(df["setting"]) == ["Plain", "Classic SD", "VIA-SD (τa 0.5, τs 0.3)"]
    assert df.loc[0, "speed-up (modelled)"] == "1.00×" and df.loc[1, "same text"] == "yes"
    assert list(df.columns)[:3] == ["setting", "speed-up (modelled)", "words differing"]  # replayed: not measured


def test_threshold_grid(app_client: object) -> None:
    plot, grid, status, *_ = app_client.predict(PROMPT, *SETTINGS, "0.5, 1.0", api_name="/grid")
    df = pd.DataFrame(grid["data"], columns=grid["headers"])
    # the sliders' pair (0.5, 0.3) is always added, so its star is always drawn; tier 2 off goes with every τ_accept,
    # and both tiers off is classic SD, named so
    pairs = ((0.3, 0.3), (0.5, 0.3), (0.5, 0.5), (1.0, 0.3), (1.0, 0.5), (0.3, 1.0), (0.5, 1.0))
    assert sorted(df["setting"]) == sorted([*(f"VIA-SD at τ_accept {'off' if a >= 1 else f'{a:g}'}, τ_slim "
                                              f"{'off' if s >= 1 else f'{s:g}'}" for a, s in pairs),
                                            "classic SD (τ_accept off, τ_slim off)"])
    assert df["speed-up (modelled)"].str.endswith("×").all() and df["words differing"].str.endswith("%").all()
    names = [t.get("name") for t in json.loads(plot["plot"])["data"]]
    assert "τ_slim 0.3" in names and "τ_slim off" in names and "the sliders' pair" in names
    bad = app_client.predict(PROMPT, *SETTINGS, "0.5, banana", api_name="/grid")
    assert "cannot read threshold values" in bad[2]


def test_walkthrough_loads_and_explains(app_client: object) -> None:
    from examples import load_walkthroughs

    walks = load_walkthroughs()
    assert len(walks) >= 2
    title = next(w["title"] for w in walks if w["config"].get("drafter") == "ngram")  # the cheaper one
    from app.tabs.classroom import OUTPUTS

    out = dict(zip([n for n in OUTPUTS if n != "trace"], app_client.predict(title, False, api_name="/walkthrough"),
                   strict=True))  # a State is not sent to API callers
    assert title in out["heading"] and "τ_accept" in out["heading"] and "Talking points" in out["notes"]
    assert "Why this speed" in out["notes"] and "Full model:" in out["details"]  # provenance under Details
    spans = _spans(out["tokens"])
    assert spans, "walkthrough text should be coloured"
    assert {s["round"] for s in spans} == {0}, "later rounds stay hidden until reached"
    assert "Round 1 of" in out["caption"] and "passes" in out["caption"] and "data-reason=" in out["caption"]
    assert "<table>" in out["round_table"]


def test_an_audited_run_equals_plain_greedy_and_reports_what_the_audit_cut(app_client: object) -> None:
    """Copies kept on trust and audited; on this rename the audit refuses a stretch the model rewrites."""
    from app.tabs.generate import OUTPUTS
    from examples import load_prompts

    names = tuple(n for n in OUTPUTS if n not in ("trace", "reliability"))  # States are not sent to API callers
    prompt = load_prompts("grounded")[8].text
    audited = settings_with(mode="via", drafter="ngram", gamma=16, tau_accept=0.9, tau_slim=1.0,
                            copy_evidence="audit", draft_stop_below=0.5, audit_span=32, max_new_tokens=96)
    out = by_name(app_client.predict(prompt, *audited, api_name="/generate"), names)
    plain = by_name(app_client.predict(prompt, *settings_with(mode="plain", max_new_tokens=96),
                                       api_name="/generate"), names)
    assert "Done" in out["status"] and out["metrics_json"]["identical_to_full"] is True
    text = lambda html: "".join(re.findall(r">([^<]*)</span>", html))  # noqa: E731
    assert text(out["tokens"]) == text(plain["tokens"]), "greedy output must equal the full model's"
    assert out["metrics_json"]["rolled_back"] > 0, "this setting should make the audit refuse a copy"
    assert 'data-metric="rolled_back"' in out["metrics"] and "cut by the audit" in out["metrics"]
    assert "audit refused" in out["why"] and "identical to the full model's own" in out["why"]
    assert 'data-trust="audited"' in out["tokens"] and "audit pending" in out["legend"]


def test_walkthrough_fix_runs_its_fixed_config(app_client: object) -> None:
    from app.tabs.classroom import OUTPUTS
    from examples import load_walkthroughs

    title = next(w["title"] for w in load_walkthroughs() if w.get("fixed_config"))
    out = dict(zip([n for n in OUTPUTS if n != "trace"], app_client.predict(title, False, api_name="/walkthrough_fix"),
                   strict=True))
    assert "The fix" in out["heading"] and "copies kept on trust, audited" in out["heading"]
    assert "The fix changes one setting: copies trusted unchecked → kept on trust, audited." in out["notes"]
    assert "identical to the full model's own answer" in out["notes"].split("After:")[1]
    assert "it refused" in out["notes"], "on its prompt the fix's audit cuts, and the notes say where"
    assert _spans(out["tokens"]) and "Round 1 of" in out["caption"]


def test_models_can_be_switched_per_session_and_bad_ids_leave_the_app_working(app_url: str, tmp_path) -> None:
    """Unknown ids and mismatched tokenizers give one line; a good local pair runs with drafter 'model'."""
    from gradio_client import Client
    from tiny import char_tokenizer, tiny_model

    for name, layers, extra in (("verifier", 4, ""), ("drafter", 2, ""), ("other", 2, "XY")):
        folder = tmp_path / name
        tiny_model(layers=layers, vocab=43 + len(extra)).save_pretrained(folder)
        char_tokenizer(extra).save_pretrained(folder)
    client = Client(app_url, verbose=False)  # its own browser session: the shared client keeps the embedded model

    def load(verifier: str, drafter: str) -> str:  # /load_models answers its status line, then the settings it sets
        result = client.predict(verifier, drafter, api_name="/load_models")
        return result[0] if isinstance(result, (list, tuple)) else result

    message = load("no-such-org/no-such-model-xyz", "")
    assert "could not load" in message and "no-such-org/no-such-model-xyz" in message and "Traceback" not in message
    message = load(str(tmp_path / "verifier"), str(tmp_path / "other"))
    assert "tokenizers differ" in message
    message = load(str(tmp_path / "verifier"), str(tmp_path / "drafter"))
    assert message.startswith("**Models ready:**") and "drafter model" in message

    settings = ["via", "model", "auto-draft", "auto-slim", 3, 12, False, 0.8, 0.95, 0, 0.4, 0.2]
    result = client.predict("the cat sat on the mat", *settings, api_name="/generate")
    assert "Done" in result[1] and str(tmp_path / "verifier") in result[1]
    assert result[4]["drafter_calls"] > 0


def test_the_runs_grid_is_prefetched_nearest_first_so_a_one_notch_drag_computes_nothing(app_client: object) -> None:
    import threading
    import time

    from app.grids import GRIDS
    from app.model_thread import TURN
    from app.prefetch import PREFETCHER
    from app.session import SESSIONS
    from core.sweeps.grid import Point

    settings = settings_with(tau_accept=0.45, tau_slim=0.3)
    app_client.predict(PROMPT, *settings, api_name="/generate")
    grid = PREFETCHER.grid
    assert grid is not None and grid.prompt == PROMPT and grid.total > 100
    neighbour = Point(0.5, 0.3, TEST_SETTINGS.gamma)
    assert neighbour in grid.grid.nearest_first(Point(0.45, 0.3, TEST_SETTINGS.gamma))[:3]
    started = time.perf_counter()
    while grid.trace(neighbour) is None and time.perf_counter() - started < 300:
        time.sleep(0.2)
    PREFETCHER.stop()
    assert grid.trace(neighbour) is not None and GRIDS.find(PROMPT, grid.config, grid.models) is grid
    memo = SESSIONS.default_bundle().memo
    misses = memo.misses
    with TURN:  # another visitor's long run holds the model: a computed point does not wait for it
        job = app_client.submit(PROMPT, *settings_with(tau_accept=0.5, tau_slim=0.3), api_name="/reroute")
        result = job.result(timeout=60)
    assert "Re-routed" in result[1]
    assert memo.misses == misses, "a computed point of the grid needs no model prediction"

    far = grid.grid.nearest_first(Point(0.45, 0.3, TEST_SETTINGS.gamma))[-1]
    assert grid.trace(far) is None  # the prefetch stopped long before it: this re-route must run the model
    TURN.acquire()
    threading.Timer(3.0, TURN.release).start()  # another visitor's run, ending in 3 s
    job = app_client.submit(PROMPT, *settings_with(tau_accept=far.tau_accept, tau_slim=far.tau_slim, gamma=far.gamma),
                            api_name="/reroute")
    result = job.result(timeout=300)
    assert "Re-routed" in result[1] and memo.misses > misses
    assert any("Waiting for the model" in update[1] for update in job.outputs())  # said while it waited


def test_two_visitors_at_once_both_get_their_own_complete_run(app_url: str) -> None:
    """Model events queue behind one slot; neither visitor's run is lost or mixed with the other's."""
    from gradio_client import Client

    first, second = Client(app_url, verbose=False), Client(app_url, verbose=False)
    job_a = first.submit("What is 15 percent of 80?", *SETTINGS, api_name="/generate")
    job_b = second.submit("Give me three tips for sleeping better.", *settings_with(tau_accept=1.0, tau_slim=1.0),
                          api_name="/generate")
    result_a, result_b = job_a.result(timeout=600), job_b.result(timeout=600)
    spans_a, _ = _check_main(result_a[:8], expect_tokens=16)
    spans_b, metrics_b = _check_main(result_b[:8], expect_tokens=16)
    assert {s["tier"] for s in spans_b} == {3} and metrics_b["identical_to_full"] is True
    assert "15 percent" not in result_b[0] and result_a[0] != result_b[0]


# -- pieces that need no model --------------------------------------------------------------------------------------


def test_settings_follow_the_api_order_and_give_friendly_errors() -> None:
    from app_fixtures import TEST_SETTINGS

    from app.settings import Settings
    from core.errors import ConfigError

    assert Settings.names()[0] == "prompt" and Settings.names()[11:13] == ["tau_accept", "tau_slim"]
    assert Settings.from_values(**dict(zip(Settings.names(), TEST_SETTINGS.as_list(), strict=True))) == TEST_SETTINGS
    config = TEST_SETTINGS.with_(sampling=True, temperature=0.7).config()
    assert config.temperature == 0.7 and TEST_SETTINGS.config().temperature == 0.0  # greedy unless sampling
    with pytest.raises(ConfigError, match="τ_accept must be between 0 and 1"):
        TEST_SETTINGS.with_(tau_accept=1.7).config()
    with pytest.raises(ConfigError, match="out of order"):
        TEST_SETTINGS.with_(tau_accept=0.2, tau_slim=0.4).config()


def test_the_app_opens_on_the_spelling_fix_with_the_lookup_preset() -> None:
    """The default Settings are grounded prompt 3 with every decoding value read from LOOKUP_PRESET."""
    from app import share
    from app.settings import Settings
    from app.tabs.generate_layout import COPY_EVIDENCE_CHOICES
    from core.config import COPY_EVIDENCE, LOOKUP_PRESET, DecodeConfig
    from core.errors import ConfigError
    from examples import load_prompts

    opening = Settings()
    assert opening.prompt == load_prompts("grounded")[8].text and "wordCounts" in opening.prompt
    assert opening.config() == LOOKUP_PRESET.validate()
    assert Settings.of(LOOKUP_PRESET) == opening
    assert [v for _, v in COPY_EVIDENCE_CHOICES] != [] and {v for _, v in COPY_EVIDENCE_CHOICES} == set(COPY_EVIDENCE)
    assert Settings.names()[-3:] == ["copy_evidence", "draft_stop_below", "audit_span"]  # added last: old calls work
    # a link written before these fields existed reopens the run it shared (engine defaults), not the preset
    old_link = {"prompt": "hi", "mode": "via", "drafter": "self", "gamma": "4", "tau_accept": "0.8", "tau_slim": "0.5",
                "max_new_tokens": "48"}
    opened, problems = share.settings_from_query(old_link)
    engine = DecodeConfig()
    assert problems == [] and opened.drafter == "self" and opened.prompt == "hi"
    assert (opened.copy_evidence, opened.draft_stop_below, opened.audit_span) == (
        engine.copy_evidence, engine.draft_stop_below, engine.audit_span)
    with pytest.raises(ConfigError, match="audit span must be a whole number"):
        opening.with_(audit_span=float("nan")).config()


def test_error_decorator_turns_typed_errors_into_one_status_line() -> None:
    from app.guard import reports_errors
    from core.errors import ConfigError

    @reports_errors("status", suffix=" (kept)")
    def stream(fail: bool):
        yield {"tokens": "a", "status": "running"}
        if fail:
            raise ConfigError("bad value")
        yield {"status": "done"}

    assert list(stream(False))[-1] == {"status": "done"}
    assert list(stream(True))[-1] == {"status": "⚠ **bad value** (kept)"}

    @reports_errors("status")
    def broken() -> dict:
        raise RuntimeError("boom")

    assert broken() == {"status": "⚠ **internal error: RuntimeError: boom**"}


def test_sessions_tell_a_visitor_whose_models_were_evicted() -> None:
    from types import SimpleNamespace

    from app.session import MAX_EXTRA_BUNDLES, ModelsEvictedError, Sessions

    loads = []

    def loader(verifier: str = "embedded", drafter: str | None = None) -> object:
        loads.append(verifier)
        return SimpleNamespace(verifier=SimpleNamespace(name=verifier), drafter=None)

    sessions = Sessions(loader)
    assert sessions.choose("a", "org/first", "").verifier.name == "org/first"
    for i in range(MAX_EXTRA_BUNDLES):
        sessions.choose(f"other{i}", f"org/model{i}", "")
    with pytest.raises(ModelsEvictedError, match="org/first.*unloaded to make room"):
        sessions.bundle("a")
    assert sessions.bundle("other0").verifier.name == "org/model0"  # still loaded
    sessions.choose("a", "", "")  # back to the embedded model on purpose
    assert sessions.bundle("a").verifier.name == "embedded"
    stop = sessions.start_job("a")
    sessions.request_stop("a")
    assert stop() and not sessions.start_job("a")()


def _trace(words: list[str], stop: str = "eos") -> object:
    from core.trace import TokenRecord, Trace

    tokens = [TokenRecord(position=i, token_id=abs(hash(w)) % 10**6, text=w, round=i, tier=3, outcome="full-accepted",
                          reason="not-confident", verdict="argmax") for i, w in enumerate(words)]
    return Trace(prompt="p", prompt_token_count=1, config={}, models={}, tokens=tokens, stop_reason=stop)


def test_diff_marks_deletions_substitutions_and_insertions_but_not_end_tokens() -> None:
    from app.views.diff import diff_html

    words = [" plants", " make", " sugar", " and", " oxygen", ".", "<|im_end|>"]
    reference = _trace(words)
    same = diff_html(_trace(words[:-1]), reference, "x")  # no end token: still identical (it is not a word)
    assert 'data-differs="0"' in same and "<|im_end|>" not in same and "im_end" not in same
    dropped = diff_html(_trace([" plants", " make", " sugar", ".", "<|im_end|>"]), reference, "x")
    assert 'data-dropped="2"' in dropped and "<del class=\"diff\"" in dropped and " and oxygen" in dropped
    assert "■ end" in dropped  # the end token is a small marker, not text
    swapped = diff_html(_trace([" plants", " make", " starch", " and", " oxygen", ".", " Yes"]), reference, "x")
    assert 'data-replaced="1"' in swapped and 'data-added="1"' in swapped and "<mark" in swapped


def test_rerouted_text_keeps_the_old_tail_on_screen_until_replaced() -> None:
    from app.views.render import tokens_html

    old = _trace([" a", " b", " c", " d"])
    new = _trace([" a", " x"], stop="running")
    html = tokens_html(new, pending=old)
    assert 'data-tokens="2"' in html and 'data-pending="2"' in html and " c d" in html
    assert 'data-pending="0"' in tokens_html(_trace([" a", " x"], stop="eos"), pending=old)  # finished: no tail


def test_two_drafter_settings_of_one_pair_hold_one_verifier() -> None:
    from types import SimpleNamespace

    from app.session import Sessions

    calls = []

    def loader(verifier: str = "embedded", drafter: str | None = None, **options: object) -> object:
        calls.append(options.get("loaded_verifier"))
        shared = options.get("loaded_verifier")
        return SimpleNamespace(verifier=shared or SimpleNamespace(name=verifier), drafter=SimpleNamespace(name=drafter))

    sessions = Sessions(loader)
    first = sessions.choose("a", "org/verifier", "org/drafter", drafter_quant="none")
    second = sessions.choose("b", "org/verifier", "org/drafter", drafter_quant="int8")
    other = sessions.choose("c", "org/other", "org/drafter", drafter_quant="none")
    assert first is not second and second.verifier is first.verifier  # one copy of the verifier, two bundles
    assert calls == [None, first.verifier, None] and other.verifier is not first.verifier
