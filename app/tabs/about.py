"""Tab 4, About: the rule as the engine runs it, the words on screen with worked examples, one round's costs,
the slim verifier's layers, when tier 2 pays, then measured versus modelled numbers, metric definitions, limits.

The pictures are inline SVG (app.views.drawings) that follow the page's text colour in light and dark
mode. The round, the layers and the pay-off numbers are read from the recorded Qwen-pair run the
Classroom replays (its trace's calls and route), so they are this machine's, and say so.
"""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

import core.analysis.metrics as core_metrics
from app import recorded
from app.views import drawings, walkthroughs, words
from app.views.lesson_facts import lesson_facts
from app.views.recorded_tradeoff import about_markdown
from app.views.walkthroughs import profile_name
from core.errors import ConfigError, RoutingError
from core.limits import MAX_GAMMA, MAX_NEW_TOKENS, MAX_PROMPT_CHARS
from core.models.layer_routes import resolve_route
from core.trace import Trace
from examples import load_walkthroughs

SHOWN_METRICS = ("words_differing", "full_agreement", "identical_to_full", "modelled_speedup", "rejection_rate",
                 "accepted", "rounds", "tokens_per_round", "full_calls_per_token", "rolled_back", "full_nll",
                 "tokens_per_s")
"""The numbers the app's cards and tables show, in the order a student meets them."""
METRIC_TABLE = "| number | what it means |\n|---|---|\n" + "\n".join(
    f"| {words.metric_label(key)} | {words.meaning('metric', key)} |" for key in SHOWN_METRICS)
"""One row per number, in the same plain words as the cards' labels and tooltips (app.views.words)."""


STUDENT_INTRO = """
## How one round works

A big language model writes one word-piece (a *token*) per pass, and every pass reads all of its weights:
that is slow. **Speculative decoding** lets a cheap *drafter* guess a few tokens ahead (γ of them), and the big
model checks all the guesses in one pass. **VIA-SD** adds two shortcuts, decided for each guess in turn: when the
drafter is sure enough (**τ_accept**), its guess is kept without any check (tier 1); otherwise a *slim verifier*
(the same big model with some of its layers skipped) looks, and where *it* is sure enough of its own top choice
(**τ_slim**) it decides (tier 2); only the rest go to the full model (tier 3). Setting a dial to 1.0 switches its
tier off.
"""

WORDS = """
## The words on screen, each with a worked example

**How sure** a model is of a word is the probability it gives that word. For the drafter, that is the word it
drafted: if it gives “blue” 0.62, “clear” 0.25 and everything else 0.13, it is 0.62 sure of “blue”, below τ_accept
0.7, so tier 1 does not keep it. For the slim verifier (and the full model), it is the probability of *its own top
choice*, whatever was drafted: if it gives “clear” 0.72 and “blue” 0.20, it is 0.72 sure, at least τ_slim 0.5, so
it decides: its top choice is not “blue”, so it **replaces** “blue” with “clear” and the round ends. That is why
tier 2 can accept *or* replace: being sure is about its own choice.

**Prompt lookup's confidence** is a count in the text, not a model's belief. After “my cat sat; your cat ran; the
cat” it looks for the last words earlier in the text: “the cat” never occurred before, “cat” did, twice. It copies
what followed the latest one, “ran”, with confidence 1/3 (a one-word match, out of the three words it tries to
match) × 1/2 (one of the two earlier “cat”s was followed by “ran”) = 0.17; the next copied word “;” followed both,
so it scores 1/3 × 2/2 = 0.33. A three-word match that always continued the same way scores 1.

**Free extra word.** When every draft of a round is kept and the full model ran, its one pass has also predicted
the word after the last draft: that word is written too, for nothing. Four drafts kept → five words for one pass.

**Kept on trust.** With prompt lookup under the setting *copies kept on trust, audited*, a confident copy (“the sky
iz” copied from a prompt that says “the sky iz blue”) is kept at once, before any model has checked it. On screen
it has a line above it (a dashed box while its check is pending).

**Audit.** The full model must read every kept word anyway before it can write the next one (its memory of the
text catches up), so that pass also checks the words kept on trust, at no extra pass: that check is the audit.

**Cut by the audit.** At the first copy the audit refuses (“iz”: the full model would write “is”), the text is cut
back there: the refused copy and every word written after it are removed (shown struck through in the round that
cut them), and the full model's own word is written in its place. So the answer stays the full model's own.
"""

NUMBERS = f"""
## Measured or modelled? Two kinds of numbers, never mixed

**Modelled (blue, "modelled" in every label): what a GPU would gain.** On a GPU, one pass costs about the same
whether it checks one token or eight, because the time goes into reading the weights. So we *count* the work: each
pass costs the share of the full model's weights it reads (a slim pass reads fewer layers than the full model's
one pass). Plain decoding costs exactly 1 per token, and *modelled speed-up* = tokens ÷ cost.
This is arithmetic on a model of the hardware, not a stopwatch.

**Measured (orange, "measured"): seconds on this machine.** A real stopwatch, on this server's CPU. A CPU checks
eight tokens for about the price of two single passes, so measured speed-ups here are smaller than modelled ones —
that difference is itself a lesson about hardware. Moving a slider replays predictions the app has already computed
(same tokens, instantly), so those runs have no honest time: press **Run it live** to measure.

**Fidelity (green, measured): did the shortcuts change the answer?** Tiers 1 and 2 can let through a token the full
model would not have chosen. The headline measure is **words differing**, explained below; *token agreement* is a
second, finer measure, always labelled as such.

**Rounds** are numbered from 1 everywhere on screen (Classroom, tooltips, charts). The downloaded CSV and JSON files
keep the engine's `round` index, which starts at 0 (screen round = `round` + 1).

## Words differing: the headline fidelity number
For every run the app also asks the full model for **its own answer** to the same prompt (plain decoding, always
picking its top word). Then it lines the two answers up word by word and counts the words that were **inserted,
deleted or changed**, divided by the number of words in the longer answer.

* 0 % means the run wrote exactly the full model's own answer: the shortcuts cost nothing.
* "The sky is blue" against "The sky looks blue": one word of four changed, so 25 % of words differ.
* A few differing words can still matter (a copied typo is one word), so the fidelity card lists them, and for
  prompts with checkable expectations it says which ones the answer meets.

Why words and not tokens? A reader notices words. *Token agreement* counts, token by token, whether each token is
the full model's own top choice given the text before it; it is finer, and it can look high while the few
differing tokens are the whole task.

## What each number on screen means
{METRIC_TABLE}

Engineers: every number is defined once, in `core/analysis/metrics.py` (its definitions are under "Metric
definitions, as the code states them" below).

## Limits and tips
* Prompts up to {MAX_PROMPT_CHARS:,} characters; up to {MAX_NEW_TOKENS} new tokens; draft length γ up to {MAX_GAMMA}.
* τ_slim stays at or below τ_accept (drag τ_accept below it and it comes along); 1.0 switches a tier off.
* One run at a time uses the model; other requests wait in the queue. **Stop** ends a run after its current round.
* Every chart has a camera icon in its top-right toolbar: click it to save the chart as a PNG.
  The trace itself downloads as CSV (tokens, rounds) and JSON below the charts.
* **Link to these settings** (Generate tab) gives a link that opens the same prompt and settings and runs them:
  `?prompt=…&tau_accept=…&tau_slim=…&gamma=…&mode=…&drafter=…&max_new_tokens=…&run=1`.
"""


def _recorded() -> Trace | None:
    """The recorded run of the real pair that the Classroom replays (the About tab draws its round and route)."""
    walk = next((w for w in load_walkthroughs() if w.get("recorded_trace")), None)
    try:
        return walkthroughs.recorded_trace(walk) if walk else None
    except ConfigError:
        return None


def _timeline_round(trace: Trace) -> int:
    """The first round that ran all three (drafter, slim verifier, full model) and read no prompt: a typical round."""
    return next((r.index for r in trace.rounds if {"drafter", "slim", "full"} <= set(r.models_run)
                 and not any(c.prefill for c in r.calls)), 0)


def recorded_sections(trace: Trace | None) -> tuple[str, str, str]:
    """(timeline HTML, layer-stack HTML, pay-off Markdown) from the recorded pair run; placeholders without it."""
    if trace is None or not trace.rounds:
        missing = "The recorded run of the Qwen pair is not installed here (examples/traces/)."
        return f"<p>{missing}</p>", "", missing
    index = _timeline_round(trace)
    timeline = drawings.round_timeline_svg(trace, index)
    shape = SimpleNamespace(num_hidden_layers=int(trace.models.get("num_layers", 0)), model_type="", layer_types=None)
    try:
        route = resolve_route(trace.config.slim_route, shape)
        layers = drawings.layer_stack_svg(route, f"The slim verifier of the recorded run: {route.describe()}")
    except RoutingError:
        layers = f"<p>Slim verifier: {trace.models.get('slim_route', '?')}</p>"
    return timeline, layers, payoff(trace)


def payoff(trace: Trace) -> str:
    """The tier-2 pay-off rule with the recorded run's numbers: slim passes that decide against a slim pass's cost."""
    facts = lesson_facts(trace)
    needed = ("slim_passes", "slim_decided", "slim_decided_share", "slim_cost_share")
    if not all(k in facts for k in needed):
        return "The recorded run ran no slim pass past its first, so it cannot show the pay-off rule."
    decided, share = int(facts["slim_decided"]) / int(facts["slim_passes"]), float(facts["slim_cost_share"])
    verdict = ("so here tier 2 pays" if decided > share else
               "so here tier 2 costs more than it saves, which is why the pair's recommended setting switches it off")
    measured = (f" (on the stopwatch a slim pass took {facts['slim_ms']} ms against {facts['full_ms']} ms for a full "
                f"pass: {facts['slim_wall_share']})" if "slim_wall_share" in facts else "")
    return f"""
## When tier 2 pays: one line

Every slim pass costs *s* of a full pass. It pays back only when it **decides**: when the round then ends with no
full pass at all. If a share *h* of slim passes decide, each slim pass saves *h* − *s* full passes on average, so

**tier 2 pays when the share of slim passes that decide is larger than a slim pass's cost as a share of a full
pass: h > s.**

In the recorded run of the real pair on this machine (priced by {profile_name(trace)}), {facts['slim_passes']}
rounds ran a slim pass and {facts['slim_decided']} of them ended without a full pass (rounds
{facts['rounds_slim_decided']}): h = {facts['slim_decided']}/{facts['slim_passes']} = {facts['slim_decided_share']}.
A slim pass cost s = {facts['slim_cost_share']} of a full pass (the median of each, as the run priced
them){measured}. {decided:.0%} < {share:.0%}: {verdict} (τ_slim 1.0).
"""


class AboutTab:
    """Static: the rule, the words on screen, one round's costs, the slim layers, the pay-off rule, the numbers."""

    def __init__(self) -> None:
        timeline, layers, rule = recorded_sections(_recorded())
        gr.Markdown(STUDENT_INTRO, elem_id="viasd-about-intro")
        gr.HTML(drawings.rule_svg())
        gr.Markdown(WORDS, elem_id="viasd-about-words")
        gr.Markdown("## One round, drawn to its costs\n\nThe drafter guesses one word per pass; the slim verifier "
                    "then reads all the guesses in one pass, and the full model (if it must) in one more. Each box is "
                    "as wide as its cost, read from the recorded run.")
        gr.HTML(timeline)
        gr.Markdown("## The slim verifier is the full model with parts switched off\n\nSame weights, fewer of them "
                    "run: each column is one layer, its attention block above its MLP block.")
        gr.HTML(layers)
        gr.Markdown(rule, elem_id="viasd-about-payoff")
        gr.Markdown(NUMBERS, elem_id="viasd-about-numbers")
        gr.Markdown(about_markdown(recorded.load(recorded.OPENING)), elem_id="viasd-about-tradeoff")
        with gr.Accordion("Metric definitions, as the code states them", open=False):
            gr.Markdown(f"```\n{(core_metrics.__doc__ or '').strip()}\n```")
