"""Classroom walkthroughs: the config a walkthrough runs (or the saved trace it replays) and the notes around it.

A walkthrough is a JSON file in examples/walkthroughs/: a title, a prompt, a `config` (DecodeConfig
fields, optionally over a named preset), talking points, and optionally a `fixed_config` its "Run the
fix" step runs. With `"recorded_trace": "<file in examples/traces/>"` it is replayed from that saved trace
(`Trace.from_json`) and its models are never loaded: a walkthrough of a pair too big to download in class.
"""

from __future__ import annotations

from pathlib import Path

from app.views import words
from app.views.insight import why_sentence
from app.views.lesson_facts import fill, lesson_facts, speed_words
from app.views.numbers import headline, plural
from app.views.render import shown_round
from app.views.round_replay import refused_word
from app.views.spelling import quoted
from core.analysis.breakeven import run_point
from core.analysis.metrics import summarize
from core.config import LOOKUP_PRESET, DecodeConfig
from core.errors import ConfigError
from core.trace import Trace
from core.vocabulary import DEFAULT_PROFILE

PRESETS = {"lookup": LOOKUP_PRESET}
"""Presets a walkthrough's config may start from (`{"preset": "lookup", ...}`): the constant is read, never copied."""
TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
"""Where a walkthrough's `recorded_trace` lives."""


PLAN = (
    ("0–2", None, "**About tab, the rule.** Walk the first drawing top to bottom: a draft word the drafter is sure "
                  "of (at least τ_accept) is kept by tier 1; else the slim verifier decides where it is sure of its "
                  "own top choice (at least τ_slim, tier 2); else the full model (tier 3). Read “how sure” with its "
                  "example."),
    ("2–5", "01_three_tiers", "Presenter mode on. Step rounds 1 to 4 with → or Space; for each word ask which tier "
                              "took it and why (the table's why column gives the comparison)."),
    ("5–7", "03_classic_sd_free_verdicts", "The same prompt with tiers 1 and 2 off: free verdicts and the free extra "
                                           "word. Compare the last round's cost line with the walkthrough before."),
    ("7–10", "04_copied_typo", "Find the copied misspelling the notes name; ask the notes' question; press **Run the "
                               "fix** (one setting changes) and step to the round the notes name: the copy stands "
                               "struck through, the full model's word beside it."),
    ("10–12", "05_why_self_drafting_loses", "The last round's cost line says how much slower than plain; the notes "
                                            "work the break-even out and the “Why this speed” line sums it up."),
    ("12–15", "06_where_the_slim_verifier_pays", "Rounds where the slim verifier decided against rounds where it "
                                                 "missed; then the About tab's round timeline and its one-line pay-off "
                                                 "rule. Close with the question in the notes."),
)
"""The 15-minute class, minute by minute, by walkthrough file (the plan names each as the picker numbers it)."""


def class_plan(stems: list[str], titles: list[str]) -> str:
    """The class plan as Markdown, each walkthrough named by its number and title in the picker."""
    lines = ["Everything below is on screen in this app: the Classroom (presenter mode, 1024x768 or larger) and "
             "the About tab. → / Space / PageDown step a round, ← / PageUp go back."]
    for minutes, stem, text in PLAN:
        where = f"**{numbered(stems.index(stem) + 1, titles[stems.index(stem)])}.** " if stem in stems else ""
        lines.append(f"- **{minutes} min** · {where}{text}")
    return "\n".join(lines)


def walkthrough_config(walkthrough: dict, fixed: bool = False) -> DecodeConfig | None:
    """The validated config a walkthrough runs, or (`fixed`) the one its "Run the fix" step runs; None if it has none.

    A config is DecodeConfig fields over the engine's defaults, or over a preset named by "preset". A
    `fixed_config` is the settings the fix changes, over the walkthrough's own config, so a class sees one change.
    """
    if fixed:
        changes = walkthrough.get("fixed_config")
        base = walkthrough_config(walkthrough)
        return None if changes is None or base is None else _spec(changes, base)
    spec = walkthrough.get("config")
    return None if spec is None else _spec(spec, DecodeConfig())


def _spec(spec: dict, base: DecodeConfig) -> DecodeConfig:
    spec = dict(spec)
    preset = spec.pop("preset", None)
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}' in a walkthrough: use {', '.join(PRESETS)}")
    return (PRESETS[preset] if preset else base).with_(**spec).validate()


SETTING_NAMES = {"copy_evidence": "copies", "tau_accept": "τ_accept", "tau_slim": "τ_slim", "gamma": "γ"}
"""How a changed setting is named in the fix's notes (others by their field name)."""


def _value(config: DecodeConfig, field: str) -> str:
    value = getattr(config, field)
    return words.name("copy_evidence", value) if field == "copy_evidence" else f"{value:g}" if isinstance(
        value, float) else str(value)


def changed_settings(before: DecodeConfig, after: DecodeConfig) -> list[str]:
    """The settings that differ between two configs, by field name."""
    return [f for f in before.to_dict() if getattr(before, f) != getattr(after, f)]


def recorded_trace(walkthrough: dict, folder: Path | None = None) -> Trace | None:
    """The saved trace a walkthrough replays (its `recorded_trace`, a file name in `folder`); None if it runs live.
    A missing or unreadable file is one ConfigError line (the Classroom keeps working)."""
    name = walkthrough.get("recorded_trace")
    if not name:
        return None
    folder = TRACES if folder is None else folder
    path = (folder / str(name)).resolve()
    if path.parent != folder.resolve():
        raise ConfigError(f"recorded_trace '{name}' must be a file name in {folder.name}/")
    try:
        return Trace.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"cannot replay recorded_trace '{name}': {type(error).__name__}") from None


def _fidelity(m: dict) -> str:
    if "words_differing" not in m:
        return "fidelity not measured"
    same = ("identical to the full model's own answer" if m["identical_to_full"] else
            f"{m['words_differing']:.0%} of words differ from the full model's own answer")
    if m.get("expectations_total"):
        same += f"; {m['expectations_met']} of {m['expectations_total']} task checks met"
    return same


def settings_line(trace: Trace) -> str:
    """τ_accept, τ_slim and γ as the engine applied them (its stamped policy: classic SD has both thresholds off),
    and the copy setting where the run made copies."""
    policy, config = trace.policy, trace.config
    if policy.method == "plain":
        return "plain decoding"
    off = " (off)" if policy.mode == "via" else " (off: classic SD)"
    text = (f"τ_accept {policy.tau_accept:g}{off if not policy.tier1_on else ''} · "
            f"τ_slim {policy.tau_slim:g}{off if not policy.tier2_on else ''} · γ {config.gamma}")
    if policy.makes_copies:
        text += f" · copies {words.name('copy_evidence', config.copy_evidence)}"
    return text


def fix_notes(walkthrough: dict, before: Trace, after: Trace, cut_rounds: list[int]) -> str:
    """Markdown below the fix's replay: the one setting the fix changed, what it did on the two runs (measured),
    where the audit cut, then the fix's talking points. `cut_rounds`: indexes of the rounds whose audit cut tokens
    in `after` (recorded per cut token)."""
    b, a = summarize(before), summarize(after)
    changed = changed_settings(before.config, after.config)
    said = "; ".join(f"{SETTING_NAMES.get(f, f)} {_value(before.config, f)} → {_value(after.config, f)}"
                     for f in changed)
    count = "one setting" if len(changed) == 1 else plural(len(changed), "setting")
    parts = [f"**The fix changes {count}: {said}.** Before: {_fidelity(b)}, "
             f"{speed_words(b['modelled_speedup'])} (modelled). After: {_fidelity(a)}, "
             f"{speed_words(a['modelled_speedup'])} (modelled)."]
    trust = headline(after, a).trust
    if trust is not None:
        where = cut_places(after, cut_rounds)
        cut = f": {where}." if where else " (no token it checked was wrong)."
        parts.append(f"{plural(trust.trusted, trust.kind)} kept on trust and audited; the audit cut "
                     f"{plural(trust.cut, 'token')}{cut}")
    points = walkthrough.get("fix_talking_points") or []
    if points:
        facts = lesson_facts(after)
        filled = [text for p in points if (text := fill(p, facts)) is not None]
        parts.append("**Talking points: the fix**\n\n" + "\n".join(f"- {p}" for p in filled))
    return "\n\n".join(parts)


def cut_places(trace: Trace, cut_rounds: list[int]) -> str:
    """Where the audit cut, in words a class can find: 'in round 9 it refused “availible” (struck through) and
    wrote “available”'."""
    out = []
    for index in cut_rounds:
        refused = refused_word(trace, index)
        written = next((t for t in trace.tokens if t.round == index and t.reason == "audit-refused"), None)
        if refused is None:
            continue
        wrote = f" and wrote {quoted(written.text)}" if written is not None else ""
        out.append(f"in round {shown_round(index)} it refused {quoted(refused)} (struck through){wrote}")
    return "; ".join(out)


def numbered(number: int, title: str) -> str:
    """A walkthrough as the picker lists it: '3. Classic speculative decoding …'."""
    return f"{number}. {title}"


def walkthrough_heading(walkthrough: dict, trace: Trace | None = None, number: int | None = None,
                        fix: bool = False, limit: int = 90) -> str:
    """Markdown above the replay: the number and title, the thresholds and γ the run applied, the prompt's start
    (one line in presenter mode; the whole prompt is in the notes below)."""
    title = str(walkthrough.get("title", "Walkthrough"))
    name = numbered(number, title) if number else title
    settings = f" · {'**The fix:** ' if fix else ''}{settings_line(trace)}" if trace is not None else ""
    prompt = " ".join(str(walkthrough.get("prompt", "")).split())
    shown = prompt if len(prompt) <= limit else prompt[:limit].rsplit(" ", 1)[0] + " …"
    return f"**{name}**{settings} · Prompt: {shown}"


def walkthrough_notes(walkthrough: dict, trace: Trace | None = None) -> str:
    """Markdown below the replay: intro, the whole prompt, the talking points with their numbers read from `trace`,
    and the run's "why this speed" line. Provenance goes to `provenance` (a closed details section)."""
    facts = lesson_facts(trace) if trace is not None else {}
    intro = fill(walkthrough.get("intro", ""), facts) or ""
    parts = [intro, f"**Prompt:** {walkthrough.get('prompt', '')}"]
    points = [text for p in walkthrough.get("talking_points") or [] if (text := fill(p, facts)) is not None]
    if points:
        parts.append("**Talking points**\n\n" + "\n".join(f"- {p}" for p in points))
    if trace is not None and trace.rounds:
        parts.append(f"**Why this speed:** {why_sentence(trace, run_point(trace), profile_name(trace))}")
    return "\n\n".join(p for p in parts if p)


def profile_name(trace: Trace) -> str:
    """The cost profile that priced the run, short (its full label is in the details)."""
    if trace.cost_profile == DEFAULT_PROFILE:
        return "the modelled accelerator"
    return f"this CPU's measured profile ({trace.cost_profile})"


def provenance(walkthrough: dict, trace: Trace | None) -> str:
    """The closed "details" section: the models and routes the run used, how a recorded trace was made, the cost
    profile: what an engineer asks, not what a class needs."""
    if trace is None:
        return ""
    lines = [f"- Full model: {trace.models.get('verifier', '?')}; drafter: {trace.models.get('drafter', '?')}",
             f"- Slim verifier: {trace.models.get('slim_route', '?')} (setting `{trace.config.slim_route}`)",
             f"- Costs priced by: {trace.cost_label or trace.cost_profile}"]
    if walkthrough.get("recorded_trace"):
        how = f", recorded with `{walkthrough['recorded_with']}`" if walkthrough.get("recorded_with") else ""
        lines.append(f"- Replayed from a saved run (`examples/traces/{walkthrough['recorded_trace']}`){how}")
    lines += [f"- {note}" for note in walkthrough.get("details") or []]
    return "\n".join(lines)
