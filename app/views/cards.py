"""Trace metrics -> HTML: the headline beside the sliders and the cards below the text.

The kinds of numbers stay apart (modelled accelerator, measured CPU wall clock, fidelity), and
the fidelity card leads with "words differing" when core.analysis.metrics provides it, since a
word-level difference is what a reader notices; token agreement follows.
"""

from __future__ import annotations

import html

from app.views import words
from app.views.numbers import Headline, headline, passes_ran, plural, speed_text
from core.analysis.fidelity import numerics_split
from core.analysis.plain_pace import PLAIN_PACES, Measured, measured_speedup_here, slower_because, timing_complete
from core.trace import Trace
from core.vocabulary import Outcome

AGREEMENT_LATER = "measuring after the τ_accept line (a pass of the full model over this text)…"
"""A grid point's card before its teacher-forced pass: the background measures it once the line is on screen."""

__all__ = ["contradiction", "headline_from", "headline_html", "headline_values", "measured_here", "measured_tag",
           "metrics_html", "speed_text"]


def _label(metric: str) -> str:
    return html.escape(words.metric_label(metric))


def _stat(kind: str, metric: str, value: str, beside: str = "") -> str:
    return (f'<div class="stat {kind}" title="{html.escape(words.meaning("metric", metric))}">'
            f'<div class="label">{_label(metric)}</div><div class="line">'
            f'<div class="value" data-metric="{metric}">{value}</div>{beside}</div></div>')


def measured_here(trace: Trace, recorded: dict | None = None) -> Measured | None:
    """The run's measured speed-up over plain decoding on this machine (core.analysis.plain_pace); None for a
    recorded run (its clock was another machine's) or where plain's pace or a pass's wall time is missing."""
    return None if recorded is not None else measured_speedup_here(trace, PLAIN_PACES.get(trace.models))


def measured_tag(trace: Trace | None, measured: Measured | None, recorded: bool = False) -> str:
    """What the clock says beside the modelled speed-up: the measured speed-up over plain decoding here, "…" while
    plain's pace here is not known yet, that a recorded run's clock was another machine's, or that replayed passes
    have no wall clock; "" with no finished run."""
    if trace is None or not trace.rounds:
        return ""
    if recorded:
        return ('<span class="here" data-replayed="1" title="A recorded run: its clock was the recording machine\'s '
                '(the status line gives its speed). Run it live to measure the speed-up here.">measured<br>'
                'recorded</span>')
    if measured is not None:
        pace = measured.pace
        tip = (f"Measured on this machine: this run {1 / measured.run_s_per_token:.2f} tokens/s after its prompt's "
               f"pass, plain decoding {1 / pace.seconds_per_token:.2f} tokens/s (from {pace.source}).")
        return (f'<span class="here" data-metric="measured_speedup" title="{html.escape(tip)}">'
                f'measured<br>{measured.speedup:.2f}×</span>')
    if timing_complete(trace):
        return ('<span class="here" title="Every pass ran here; plain decoding\'s pace on this machine is not '
                'known yet.">measured<br>…</span>')
    tip = f"Measured speed-up not available for replayed passes: {passes_ran(trace)}. Run it live to measure."
    return f'<span class="here" data-replayed="1" title="{html.escape(tip)}">measured<br>replayed</span>'


def contradiction(metrics: dict, trace: Trace | None, measured: Measured | None) -> str:
    """The sentence for a modelled gain the clock did not show, with why from the run's own passes ("" otherwise)."""
    if trace is None or measured is None or not metrics.get("modelled_speedup", 0) > 1.0 or not measured.contradicts:
        return ""
    return (f"⚠ Slower than plain here ({measured.speedup:.2f}×), though modelled "
            f"{speed_text(metrics['modelled_speedup'])} on an accelerator: {slower_because(trace, measured)}.")


def headline_values(metrics: dict) -> tuple[str, str, str, str]:
    """The headline's three numbers as shown, and the fidelity metric the third is: speed-up, drafts rejected,
    words differing (token agreement stands in, named, where words were not measured; "…" until measured)."""
    if not metrics:
        return "—", "—", "—", "words_differing"
    if "words_differing" in metrics:
        fidelity, metric = f'{metrics["words_differing"]:.0%}', "words_differing"
    elif "full_agreement" in metrics:
        fidelity, metric = f'{metrics["full_agreement"]:.0%}', "full_agreement"
    else:
        fidelity, metric = "…", "words_differing"
    return speed_text(metrics["modelled_speedup"]), f'{metrics["rejection_rate"]:.0%}', fidelity, metric


def headline_from(values: tuple[str, str, str, str], row: str = "", classes: str = "", here: str = "") -> str:
    """The headline from its shown values (`headline_values`); `row` is the one-line row under the numbers (already
    HTML: a run's progress, a partial result's note), `classes` mark the whole headline ("ghost": not this point's),
    `here` is what the clock says beside the modelled speed-up (`measured_tag`)."""
    speed, rejected, fidelity, metric = values
    body = (_stat("modelled", "modelled_speedup", speed, here) + _stat("", "rejection_rate", rejected)
            + _stat("fidelity", metric, fidelity) + (row or '<div class="partial" title="">&nbsp;</div>'))
    return f'<div class="{" ".join(("viasd-headline", classes)).strip()}" id="viasd-headline">{body}</div>'


def headline_html(metrics: dict, trace: Trace | None = None, progress: str = "",
                  measured: Measured | None = None, recorded: bool = False) -> str:
    """Three numbers beside the sliders: modelled speed-up (the measured one beside it, `measured_tag`), drafts
    rejected, words differing; under them one line: a run's progress, a partial result's note, or a modelled gain
    the clock contradicts (`contradiction`)."""
    said = contradiction(metrics, trace, measured)
    if trace is not None and trace.partial:
        row = (f'<div class="partial" data-partial="1">⏸ Partial result: stopped after {len(trace.tokens)} '
               f'tokens ({html.escape(words.name("stop", trace.stop_reason))}); numbers cover those tokens only.</div>')
    elif said and not progress:  # as the page draws a point's row (app/static/viasd.js `headlineHtml`)
        row = f'<div class="partial" title="{html.escape(said)}">{html.escape(said)}</div>'
    else:  # the row is always there (one line, empty until a run streams), so the sliders below never move
        row = f'<div class="partial" title="{html.escape(progress)}">{html.escape(progress) or "&nbsp;"}</div>'
    return headline_from(headline_values(metrics), row, here=measured_tag(trace, measured, recorded))


def _row(metric: str, value: str, label: str = "") -> str:
    """A card row named by its metric's plain words (tooltip: its meaning); `label` overrides the name."""
    tip = html.escape(words.meaning("metric", metric))
    return f'<tr title="{tip}"><td>{html.escape(label) or _label(metric)}</td><td class="v">{value}</td></tr>'


def _modelled_card(m: dict, h: Headline) -> str:
    rejected = (f'<span data-metric="rejection_rate">{m["rejection_rate"]:.0%}</span>'
                f' ({h.rejected} of {h.drafted})' if h.drafted else
                '<span data-metric="rejection_rate">0%</span> (nothing drafted)')
    return ('<div class="viasd-card modelled"><h4>Modelled accelerator (cost model)</h4>'
            f'<div class="big" data-metric="modelled_speedup">{speed_text(m["modelled_speedup"])} vs plain</div><table>'
            + _row("modelled_cost", f'{m["modelled_cost"]:.1f} for {plural(h.tokens, "token")}')
            + _row("full_calls_per_token", f'{m["full_calls_per_token"]:.2f}')
            + _row("accepted", f'<span data-metric="accepted">{h.kept}</span> of {h.drafted}')
            + _row("rejection_rate", rejected)
            + _row("tokens_per_round", f'{m["tokens_per_round"]:.1f}')
            + '</table><div class="note">What these decisions would cost on a GPU, where a pass costs about the '
              'weights it reads. Not a measurement.</div></div>')


def _measured_card(m: dict, plain: tuple[float, str] | None = None) -> str:
    """Measured tokens/s where every pass ran here, with plain decoding's measured tokens/s beside it."""
    if m.get("timing_complete"):
        speed, note = f'<div class="big">{m["tokens_per_s"]:.1f} tokens/s</div>', "Every pass ran for real on this CPU."
    else:
        speed = '<div class="big">— tokens/s</div>'
        note = ("Some or all predictions came from the memo, so this wall clock is not the run's. "
                "Press “Run it live” for an honest measurement.")
    if plain is not None:
        speed += (f'<div class="note" data-metric="plain_tokens_per_s">plain decoding here: {plain[0]:.1f} tokens/s '
                  f'({html.escape(plain[1])})</div>')
    return ('<div class="viasd-card measured"><h4>Measured wall clock (this CPU)</h4>' + speed + '<table>'
            + _row("wall_s", f'{m["wall_s"]:.2f} s')
            + _row("wall_s", f'{m["drafter_wall_s"]:.2f} / {m["slim_wall_s"]:.2f} / {m["full_wall_s"]:.2f} s',
                   label="drafter / slim / full time")
            + _row("timing_complete", "yes" if m.get("timing_complete") else "no (memo)")
            + f'</table><div class="note">{note}</div></div>')


def _fidelity_card(m: dict, trace: Trace | None) -> str:
    if "words_differing" not in m and "full_agreement" not in m:
        stopped = trace is not None and trace.partial
        pending = ("not measured: the run was stopped early" if stopped else
                   "measuring now: the text is final, its words are being compared with the full model's own…")
        return ('<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>'
                f'<div class="note">{pending}</div></div>')
    lead = (f'<div class="big" data-metric="words_differing">{m["words_differing"]:.0%} of words differ</div>'
            if "words_differing" in m else f'<div class="big">{m["full_agreement"]:.0%} token agreement</div>')
    if getattr(trace.fidelity if trace else None, "against", "") == "classic SD":
        return ('<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>' + lead +
                '<div class="note" data-reference="classic-sd">So far against classic SD with the same drafter and '
                'precision: what the tiers changed. The full model\'s plain greedy answer (one token per pass) is '
                'being decoded now, to add what numerics change.</div></div>')
    nll = words.name("unit", "nats/token")
    return ('<div class="viasd-card fidelity"><h4>Fidelity to the full model</h4>' + lead + '<table>'
            + (_row("full_agreement", f'{m["full_agreement"]:.0%}', label="token agreement (second measure)")
               if "words_differing" in m and "full_agreement" in m else "")
            + _row("identical_to_full", "yes" if m["identical_to_full"] else "no")
            + _row("common_prefix", plural(int(m["common_prefix"]), "token"))
            + (_row("full_nll", f'{m["full_nll"]:.2f} {html.escape(nll)}') if "full_nll" in m else
               _row("full_agreement", AGREEMENT_LATER, label="token agreement and surprise"))
            + (_row("words_differing", html.escape(split), label="words differing, split")
               if (split := numerics_split(trace)) else "")
            + '</table>' + _spans_html(trace) + _expectations_html(trace)
            + f'<div class="note" data-reference="greedy">{html.escape(reference_note(trace))} Words differing: words '
              'inserted, deleted or changed against that answer. Token agreement: share of tokens that are the full '
              'model\'s own top choice.' + _reduced_precision_note(trace) + '</div></div>')


def reference_note(trace: Trace | None) -> str:
    """What fidelity compares against (always the full model's own greedy answer), and what that means for a
    sampled run: it differs even where the full model decided every token."""
    if trace is None or trace.policy.greedy:
        return "Compared with the full model's own greedy answer (plain decoding)."
    c = trace.config
    return (f"Compared with the full model's own greedy answer (plain decoding). This run samples (temperature "
            f"{c.temperature:g}, top-p {c.top_p:g}, seed {c.seed}), so it can differ from that answer even where "
            "the full model decided every token.")


def _reduced_precision_note(trace: Trace | None) -> str:
    """In bf16 even lossless decoding differs from plain greedy; say so where the split is not measured."""
    dtype = (getattr(trace, "models", None) or {}).get("dtype", "float32")
    if dtype in ("float32", "float64") or numerics_split(trace):
        return ""
    return (f" In {html.escape(dtype)} a pass over several tokens rounds differently from one token at a time, so "
            "even classic SD differs a little from plain greedy: Compare splits numerics from tiers.")


def _routing_card(m: dict, h: Headline, trace: Trace | None) -> str:
    shares = "".join(_share_row(m, o, h) for o in Outcome if m.get(f"share_{o.value}", 0.0) > 0)
    stop = str(m["stop_reason"])
    return ('<div class="viasd-card"><h4>Who decided the tokens</h4><table>' + shares + _audit_rows(h)
            + _row("rounds", f'<span data-metric="rounds">{h.rounds}</span>')
            + f'<tr title="{html.escape(words.meaning("stop", stop))} [{html.escape(stop)}]"><td>'
              f'{_label("stop_reason")}</td><td class="v">{html.escape(words.name("stop", stop))}</td></tr>'
            + '</table></div>')


def _share_row(m: dict, outcome: Outcome, h: Headline) -> str:
    """One outcome's share of the answer; tier 1 split by what the records say: kept on trust (then audited) or
    kept unchecked, so a token the full model audited is never called unchecked."""
    share = m.get(f"share_{outcome.value}", 0.0)
    direct = h.trust.direct if h.trust is not None and outcome is Outcome.DIRECT_ACCEPT and h.tokens else 0
    if not direct:
        return _row(f"share_{outcome.value}", f"{share:.0%}", label=words.name("outcome", outcome))
    unchecked = share - direct / h.tokens
    row = _row(f"share_{outcome.value}", f'<span data-metric="share_trusted">{direct / h.tokens:.0%}</span>',
               label=words.name("trust", "audited") + " (tier 1)")
    return row + (_row(f"share_{outcome.value}", f"{unchecked:.0%}", label=words.name("outcome", outcome))
                  if unchecked > 1e-9 else "")


def metrics_html(metrics: dict, trace: Trace | None = None, plain: tuple[float, str] | None = None) -> str:
    """Four cards that keep the kinds of numbers apart: modelled accelerator, measured CPU, fidelity, who decided.
    Every count comes from `app.views.numbers.headline` (core.analysis.metrics' definitions)."""
    if not metrics:
        return '<div class="viasd-cards" id="viasd-metrics"><div class="viasd-card">No run yet.</div></div>'
    h = headline(trace, metrics)
    partial = ' data-partial="1"' if trace is not None and trace.partial else ""
    return (f'<div class="viasd-cards" id="viasd-metrics"{partial}>{_modelled_card(metrics, h)}'
            f'{_measured_card(metrics, plain)}{_fidelity_card(metrics, trace)}{_routing_card(metrics, h, trace)}</div>')


def _audit_rows(h: Headline) -> str:
    c = h.trust
    if c is None:
        return ""
    cut = (f'<span data-metric="rolled_back">{c.cut}</span> {"token" if c.cut == 1 else "tokens"} '
           f'({plural(c.refusals, "refusal")})')
    kept = f"{c.kind.split()[0]} tokens kept on trust" if c.kind != "token" else "tokens kept on trust"
    return (_row("rolled_back", f'<span data-metric="trusted">{c.trusted}</span>', label=kept)
            + _row("rolled_back", f'<span data-metric="standing">{c.standing}</span>', label="… still in the answer")
            + _row("rolled_back", cut))


def _spans_html(trace: Trace | None, limit: int = 6) -> str:
    """Where the words differ from the full model's own output: this run's words against the full model's."""
    spans = getattr(getattr(trace, "fidelity", None), "differing_spans", None) or []
    if not spans:
        return ""
    items = "".join(
        f'<li><span class="viasd-ins">{html.escape(" ".join(s.output_words)) or "—"}</span> instead of '
        f'<span class="viasd-del">{html.escape(" ".join(s.reference_words)) or "—"}</span></li>'
        for s in spans[:limit])
    more = f"<li>… and {len(spans) - limit} more</li>" if len(spans) > limit else ""
    return f'<div class="note">Differing words (this run instead of the full model\'s):</div><ul>{items}{more}</ul>'


def _expectations_html(trace: Trace | None) -> str:
    """The task's checkable expectations: met here, and met by the full model's own output."""
    checks = getattr(getattr(trace, "fidelity", None), "expectations", None) or []
    if not checks:
        return ""
    rows = "".join(_row(f'{html.escape(c.kind)} “{html.escape(c.term)}”',
                        ("✓ met" if c.met else "✗ missed") + ("" if c.full_met is None else
                                                            f' (full model: {"✓" if c.full_met else "✗"})'))
                   for c in checks)
    return f'<div class="note">Task expectations:</div><table>{rows}</table>'
