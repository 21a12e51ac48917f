"""The claims the app shows about one run, each recomputed from the trace's records and compared with the view.

`check_claims` builds every view of a finished run (the tokens and their marks, the legend, the cards, the
headline, the why and audit sentences, every round's caption, the sensitivity line and the predicted tier
shares) and holds each number and sentence to a recount of the records: the trace's tokens, rounds, calls and
audit states and the policy the engine stamped. Where a view claims something about other runs (the
sensitivity line's notches, an exact prediction) the engine is run again and must agree. tests/app/test_claims.py
drives it over random configurations; `configurations` draws them.
"""

from __future__ import annotations

import html
import random
import re
from collections import Counter
from html.parser import HTMLParser

from app.views import cards, render
from app.views.insight import prediction_markdown, why_sentence
from app.views.numbers import plural
from app.views.round_replay import round_view, trace_decoder
from app.views.sensitivity import effect_line
from core import DecodeConfig, attach_fidelity, generate
from core.analysis.breakeven import explain_run
from core.analysis.metrics import summarize
from core.analysis.prediction import predict_tiers
from core.analysis.reliability import measure
from core.round_policy import in_order, threshold_text
from core.trace import Trace
from core.vocabulary import Audit, Outcome, Reason, Tier

KEPT = {Outcome.DIRECT_ACCEPT.value, Outcome.SLIM_ACCEPT.value, Outcome.FULL_ACCEPT.value}
SHOWN_TRUST = {Audit.TRUSTED.value: "awaiting", Audit.AUDITED.value: "audited"}
THRESHOLDS = (0.0, 0.0, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0, 1.0)


def configurations(count: int, seed: int, drafters: tuple[str, ...], base: DecodeConfig) -> list[DecodeConfig]:
    """`count` valid settings drawn over mode x drafter x copy evidence x thresholds (0, 1 and equal pairs often)
    x greedy / sampling x gamma x slim gate x audit span."""
    rng, found = random.Random(seed), []
    while len(found) < count:
        tau_accept = rng.choice(THRESHOLDS)
        tau_slim = rng.choice([tau_accept, tau_accept, 1.0, *[t for t in THRESHOLDS if t <= tau_accept]])
        config = base.with_(
            mode=rng.choice(("plain", "sd", "via", "via", "via", "via")), drafter=rng.choice(drafters),
            copy_evidence=rng.choice(("slim", "verifier", "statistic", "audit", "audit")), tau_accept=tau_accept,
            tau_slim=tau_slim, gamma=rng.choice((1, 1, 2, 3, 4, 6)), slim_min_hit_rate=rng.choice((0.0, 0.0, 0.6)),
            audit_span=rng.choice((2, 4, 32)), temperature=rng.choice((0.0, 0.0, 0.0, 0.8)), seed=rng.randrange(50))
        found.append(config.validate())
    return found


def same(a: Trace, b: Trace) -> bool:
    """Two runs alike in everything the views show: tokens, tiers, reasons, audit states, rounds and priced calls."""
    def key(t: Trace) -> tuple:
        tokens = [(x.token_id, x.tier, x.reason, x.outcome, x.audit) for x in [*t.tokens, *t.rolled_back]]
        rounds = [(r.draft_tokens, r.accepted, r.emitted, [(c.role, c.tokens_processed, round(c.cost_units, 9))
                                                           for c in r.calls]) for r in t.rounds]
        return tokens, rounds
    return key(a) == key(b)


class _Spans(HTMLParser):
    """Every token span (one with data-pos) of a tokens view, as its attributes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.spans: list[dict[str, str]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        if tag == "span" and "data-pos" in found:
            self.spans.append(found)


def _metric(page: str, name: str) -> str | None:
    found = set(re.findall(rf'data-metric="{name}">([^<]*)<', page))
    assert len(found) <= 1, f"{name} shown as {found}"
    return found.pop() if found else None


def _trusted(trace: Trace) -> list:
    """Tokens kept on trust: those still standing (recorded state) and those an audit cut that tier 1 or 2 kept
    on trust (the stamped policy's rule, the token's recorded kind)."""
    policy = trace.policy
    return ([t for t in trace.tokens if t.audit in SHOWN_TRUST]
            + [t for t in trace.rolled_back if t.tier in (Tier.DRAFT, Tier.SLIM) and policy.on_trust(t.inputs.is_copy)])


def check_tokens_and_legend(trace: Trace) -> None:
    """Every mark on the text is the record's; the legend counts the records and explains the marks in use."""
    spans = _Spans(render.tokens_html(trace)).spans
    assert len(spans) == len(trace.tokens)
    for t, span in zip(trace.tokens, spans, strict=True):
        assert (span["data-outcome"], span["data-reason"], int(span["data-tier"])) == (t.outcome, t.reason, t.tier)
        assert span.get("data-trust", "") == SHOWN_TRUST.get(t.audit, ""), (t, span)
        if t.audit in SHOWN_TRUST:
            assert span["data-copy"] == str(int(t.inputs.is_copy))
            assert ("prompt-lookup copy" in span["title"]) == t.inputs.is_copy
            assert ("audited it and it stands" in span["title"]) == (t.audit == Audit.AUDITED)
        assert "kept on trust (" not in span["title"] or t.audit in SHOWN_TRUST  # the trust note, not a reason
    legend = render.legend_html(trace)
    counts = dict(re.findall(r'class="tok(?: replaced)? o-([a-z-]+)">[^<]*</span> <span class="count">×(\d+)<', legend))
    assert {k: int(v) for k, v in counts.items()} == {o.value: n for o, n in (
        (o, sum(t.outcome == o for t in trace.tokens)) for o in Outcome)}
    marks = trace.policy.audits or any(t.audit != Audit.NONE for t in [*trace.tokens, *trace.rolled_back])
    assert ("kept on trust, then audited" in legend) == marks
    if marks:
        standing = re.search(r"kept on trust, then audited</span> <span class=\"count\">×(\d+)<", legend)
        assert int(standing.group(1)) == sum(t.audit in SHOWN_TRUST for t in trace.tokens)
        cut = re.search(r"cut by the audit</span> <span class=\"count\">×(\d+)<", legend)
        assert int(cut.group(1)) == len(trace.rolled_back)


def check_cards(trace: Trace) -> dict:
    """The cards and the headline: every count recounted from the records."""
    m = summarize(trace)
    drafted = sum(len(r.draft_tokens) for r in trace.rounds)
    kept = sum(t.outcome in KEPT for t in trace.tokens)
    cost = sum(c.cost_units for r in trace.rounds for c in r.calls)
    speed = (trace.plain_cost_units or len(trace.tokens)) / cost if cost else float("inf")
    page, top = cards.metrics_html(m, trace), cards.headline_html(m, trace)
    rejection = f"{(drafted - kept) / drafted if drafted else 0.0:.0%}"
    assert _metric(page, "rejection_rate") == _metric(top, "rejection_rate") == rejection
    assert _metric(page, "accepted") == str(kept) and _metric(page, "rounds") == str(len(trace.rounds))
    shown = "∞ (no verifier ran)" if speed == float("inf") else f"{speed:.2f}×"
    assert _metric(top, "modelled_speedup") == shown and _metric(page, "modelled_speedup") == f"{shown} vs plain"
    trusted = _trusted(trace)
    marks = trace.policy.audits or any(t.audit != Audit.NONE for t in [*trace.tokens, *trace.rolled_back])
    assert (_metric(page, "trusted") is not None) == marks
    if marks:
        assert _metric(page, "trusted") == str(len(trusted)) and _metric(page, "rolled_back") == str(
            len(trace.rolled_back))
        assert _metric(page, "standing") == str(sum(t.audit in SHOWN_TRUST for t in trace.tokens))
    direct = [t for t in trace.tokens if t.outcome == Outcome.DIRECT_ACCEPT]
    on_trust = [t for t in direct if t.audit != Audit.NONE]
    if on_trust:
        assert _metric(page, "share_trusted") == f"{len(on_trust) / len(trace.tokens):.0%}"
    assert ("kept unchecked (tier 1)" in page) == (len(direct) > len(on_trust)), "tier 1 called unchecked"
    if trace.fidelity is not None:
        words = html.unescape(page)
        assert "Compared with the full model's own greedy answer" in words
        assert ("This run samples" in words) == (not trace.policy.greedy)
    return {"drafted": drafted, "kept": kept, "speed": shown, "rejection": rejection, "trusted": trusted,
            "direct": len(direct), "direct_on_trust": len(on_trust)}


def check_sentences(trace: Trace, counts: dict) -> None:
    """The why sentence and its audit sentence, in the records' numbers and the records' words."""
    sentence = why_sentence(trace, explain_run(trace).point)
    if trace.policy.method == "plain" or not trace.rounds:
        assert sentence.startswith("Plain decoding")
        return
    assert f"Modelled speed-up {counts['speed']} over plain" in sentence
    if counts["drafted"]:
        assert f"Of {counts['drafted']} drafted token" in sentence and f"{counts['kept']} ended up" in sentence
        assert f"{counts['rejection']} of drafts rejected" in sentence
    if counts["direct"] and counts["kept"]:
        assert f"Tier 1 kept {counts['direct']} of the {counts['kept']} kept drafts" in sentence
        assert (f"({counts['direct_on_trust']} of them on trust" in sentence) == bool(counts["direct_on_trust"])
    trusted = counts["trusted"]
    marks = trace.policy.audits or any(t.audit != Audit.NONE for t in [*trace.tokens, *trace.rolled_back])
    told = re.search(r"kept on trust(?: \(\d+ copied, \d+ drafted\))? and audited", sentence)
    assert (bool(told) or "Nothing was kept on trust" in sentence) == marks, sentence
    if marks and trusted:
        copies = sum(t.inputs.is_copy for t in trusted)
        kind = "copied token" if copies == len(trusted) else "drafted token" if not copies else "token"
        assert f"{len(trusted)} {kind}{'' if len(trusted) == 1 else 's'} w" in sentence, sentence
        if trace.rolled_back:
            refusals = sum(t.reason == Reason.AUDIT_REFUSED for t in trace.tokens)
            standing = sum(t.audit in SHOWN_TRUST for t in trace.tokens)
            assert f"refused {refusals} token" in sentence and f"so {standing} stand" in sentence


class _Points(HTMLParser):
    """The caption's points (li): their data attributes and their text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.points: list[tuple[dict[str, str], str]] = []
        self._open = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "li":
            self.points.append((dict(attrs), ""))
            self._open = True

    def handle_endtag(self, tag: str) -> None:
        self._open = self._open and tag != "li"

    def handle_data(self, data: str) -> None:
        if self._open:
            attrs, text = self.points[-1]
            self.points[-1] = (attrs, text + data)


def check_captions(trace: Trace) -> int:
    """Every round's caption: its counts from the round's records, and each point's words from its tokens' records
    (kept on trust or not, a copy or not, whether the slim verifier was asked). Returns the points checked."""
    decode, policy, checked = trace_decoder(trace), trace.policy, 0
    written = [*trace.tokens, *trace.rolled_back]
    for index, rnd in enumerate(trace.rounds):
        _, caption = round_view(trace, index, decode)
        assert f"Round {index + 1} of {len(trace.rounds)}." in caption
        kept = f"Kept {rnd.accepted} of {plural(rnd.drafted, 'draft')}, wrote" if rnd.drafted else "Wrote"
        assert f"{kept} {plural(rnd.emitted, 'token')}, for " in caption
        gone = sum(1 for t in trace.rolled_back if t.audit_round is not None and t.audit_round <= index)
        answer = sum(1 for t in written if t.round <= index) - gone
        cost = sum(c.cost_units for r in trace.rounds[:index + 1] for c in r.calls)
        assert f"So far {plural(answer, 'token')} cost {cost:.2f}" in caption
        cut = sum(1 for t in trace.rolled_back if t.audit_round == index)
        assert (f"Its audit cut {plural(cut, 'token')}" in caption) == bool(cut)
        slim_ran = any(c.role == "slim" for c in rnd.calls)
        mine = sorted((t for t in written if t.round == index), key=lambda t: (t.reason == Reason.AUDIT_REFUSED,
                                                                               t.position))
        for attrs, text in _Points(caption).points:
            group, mine = mine[:int(attrs["data-tokens"])], mine[int(attrs["data-tokens"]):]
            assert {t.reason for t in group} == {attrs["data-reason"]}, (attrs, group)
            trusted = {t.audit != Audit.NONE for t in group}
            assert len(trusted) == 1
            assert ("Kept on trust:" in text) == (trusted.pop() and group[0].reason in (
                Reason.DRAFT_CONFIDENT, Reason.SLIM_CONFIDENT)), text
            assert "Prompt lookup copied" not in text or all(t.inputs.is_copy for t in group), text
            asked = [t.slim_confidence is not None and policy.tier2_on for t in group]
            assert "Neither was sure" not in text or all(asked), text
            assert "tier 2 is off" not in text or not policy.tier2_on, text
            assert "slim pass was skipped this round" not in text or not slim_ran, text
            assert "Classic SD:" not in text or policy.mode == "sd", text
            checked += 1
    return checked


def check_views(trace: Trace, bundle: object) -> dict:
    """Every view of one finished run against its records (fidelity measured first, as the app does)."""
    attach_fidelity(bundle, trace)
    check_tokens_and_legend(trace)
    counts = check_cards(trace)
    check_sentences(trace, counts)
    return {"points": check_captions(trace), "trusted": len(counts["trusted"])}


def check_sensitivity(trace: Trace, bundle: object) -> bool:
    """The line under the sliders speaks of the run on screen, with its settings, and the notches it names give
    that very run: the engine, run again at each end of each range, agrees. True when a line was shown."""
    line = effect_line(trace)
    if not line:
        return False
    policy, config = trace.policy, trace.config
    assert f"τ_accept {threshold_text(policy.tau_accept)}, τ_slim {threshold_text(policy.tau_slim)}" in line
    answer = [t for t in trace.tokens if t.draft_confidence is not None]
    unwritten = [r for r in trace.rounds if r.unwritten is not None]
    assert (f"{len(trace.decisions())} drafted tokens recorded ({len(answer)} in the answer, {len(trace.rolled_back)}"
            f" cut by the audit, {len(unwritten)} left unwritten by a refusal)") in line
    assert len(trace.decisions()) == len(answer) + len(trace.rolled_back) + len(unwritten)
    for name in ("τ_accept", "τ_slim"):
        span = re.search(rf"{name} (?:anywhere from (\S+) to (\S+)|only at (\S+))(?: gives| \()", line)
        if span is None:
            assert name == "τ_slim" and "a one-notch move of τ_slim does change it" in line
            continue
        for text in {v for v in span.groups() if v}:
            value = 1.0 if text == "off" else float(text)
            again = config.with_(**{"tau_accept" if name == "τ_accept" else "tau_slim": value})
            if in_order(again.tau_accept, again.tau_slim):
                assert same(generate(bundle, trace.prompt, again), trace), (name, value, line)
    return True


def check_prediction(trace: Trace, bundle: object, rng: random.Random) -> int:
    """The predicted tier shares as the panel shows them, at the run's thresholds and at another pair; where the
    prediction says it is exact, the engine's own re-route has those very shares. Returns the exact ones checked."""
    config, exact = trace.config, 0
    if not trace.tokens or not config.greedy:
        return 0
    data = measure(bundle, trace.prompt, config, trace.token_ids)
    for a, s in ((config.tau_accept, config.tau_slim), (rng.choice(THRESHOLDS), rng.choice(THRESHOLDS))):
        if not in_order(a, s):
            continue
        predicted = predict_tiers(data, a, s, config.draft_signal, config.slim_signal)
        shares = predicted.tier_share
        line = prediction_markdown(data, a, s, config.draft_signal, config.slim_signal)
        assert f"tier 1 {shares[1]:.0%}, tier 2 {shares[2]:.0%}, tier 3 {shares[3]:.0%}" in line
        assert ("(exact:" in line) == predicted.exact
        if predicted.exact:
            rerouted = generate(bundle, trace.prompt, config.with_(tau_accept=a, tau_slim=s))
            actual = Counter(t.tier for t in rerouted.tokens)
            assert {k: actual[k] / len(rerouted.tokens) for k in (1, 2, 3)} == shares, (a, s, config)
            exact += 1
    return exact
