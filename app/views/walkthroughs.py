"""Classroom walkthroughs: the config a walkthrough runs (or the saved trace it replays) and the notes around it.

A walkthrough is a JSON file in examples/walkthroughs/: a title, a prompt, a `config` (DecodeConfig
fields, optionally over a named preset), talking points, and optionally a `fixed_config` its "Run the
fix" step runs. With `"recorded_trace": "<file in examples/traces/>"` it is replayed from that saved trace
(`Trace.from_json`) and its models are never loaded: a walkthrough of a pair too big to download in class.
"""

from __future__ import annotations

from pathlib import Path

from app.views import words
from app.views.numbers import headline, plural, speed_text
from app.views.render import shown_round
from core.analysis.metrics import summarize
from core.config import LOOKUP_PRESET, DecodeConfig
from core.errors import ConfigError
from core.trace import Trace

PRESETS = {"lookup": LOOKUP_PRESET}
"""Presets a walkthrough's config may start from (`{"preset": "lookup", ...}`): the constant is read, never copied."""
TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
"""Where a walkthrough's `recorded_trace` lives."""


def walkthrough_config(walkthrough: dict, fixed: bool = False) -> DecodeConfig | None:
    """The validated config a walkthrough runs, or (`fixed`) the one its "Run the fix" step runs; None if it has none.

    A config is DecodeConfig fields over the engine's defaults, or over a preset named by "preset".
    """
    spec = walkthrough.get("fixed_config" if fixed else "config")
    if spec is None:
        return None
    spec = dict(spec)
    preset = spec.pop("preset", None)
    if preset is not None and preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}' in a walkthrough: use {', '.join(PRESETS)}")
    return (PRESETS[preset] if preset else DecodeConfig()).with_(**spec).validate()


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
        same += (f"; {m['expectations_met']} of {m['expectations_total']} task checks met (they test only the "
                 "listed words: read the answer too)")
    return same


def _setting(trace: Trace) -> str:
    """A run's settings in a few words, read from its trace (its policy says whether it copied)."""
    config = trace.config
    copies = f"copies {words.name('copy_evidence', config.copy_evidence)}, " if trace.policy.makes_copies else ""
    return f"{copies}γ {config.gamma}, τ_accept {config.tau_accept:g}, τ_slim {config.tau_slim:g}"


def fix_notes(walkthrough: dict, before: Trace, after: Trace, cut_rounds: list[int]) -> str:
    """Markdown below the fix's replay: what the fix changed, measured on the two runs, then its talking points.
    `cut_rounds`: indexes of the rounds whose audit cut tokens in `after` (recorded per cut token)."""
    b, a = summarize(before), summarize(after)
    copies = headline(after, a).trust
    audit = ""
    if copies is not None:
        audit = (f"; {plural(copies.trusted, copies.kind)} kept on trust and checked by the full model, of which "
                 f"the audit cut {copies.cut}")
        audit += (f" in round{'s' * (len(cut_rounds) != 1)} {', '.join(str(shown_round(r)) for r in cut_rounds)} "
                  "(step there to see them struck through)" if cut_rounds else " (no copy it checked was wrong)")
    measured = (f"**Measured on these two runs.** Before the fix ({_setting(before)}): {_fidelity(b)}; "
                f"modelled speed-up {speed_text(b['modelled_speedup'])}. The fix ({_setting(after)}): "
                f"{_fidelity(a)}; modelled speed-up {speed_text(a['modelled_speedup'])}{audit}.")
    parts = [measured]
    points = walkthrough.get("fix_talking_points") or []
    if points:
        parts.append("**Talking points: the fix**\n\n" + "\n".join(f"- {p}" for p in points))
    parts.append(f"*Ran on {after.models.get('verifier', '?')} · drafter: {after.models.get('drafter', '?')}.*")
    return "\n\n".join(parts)


def walkthrough_heading(walkthrough: dict, limit: int = 110) -> str:
    """Markdown above the replay: the title and the prompt's start (short, so the replay stays above the fold;
    the whole prompt is in the notes below)."""
    prompt = " ".join(str(walkthrough.get("prompt", "")).split())
    shown = prompt if len(prompt) <= limit else prompt[:limit].rsplit(" ", 1)[0] + " …"
    return f"**{walkthrough.get('title', 'Walkthrough')}** · Prompt: {shown}"


def walkthrough_notes(walkthrough: dict, trace: Trace | None = None) -> str:
    """Markdown below the replay: intro, the whole prompt, the models it ran on, and the talking points."""
    parts = [walkthrough.get("intro", ""), f"**Prompt:** {walkthrough.get('prompt', '')}"]
    if trace is not None:
        recorded = " (replayed from a saved run)" if walkthrough.get("recorded_trace") else ""
        parts.append(f"*Ran on {trace.models.get('verifier', '?')} · drafter: {trace.models.get('drafter', '?')} · "
                     f"slim verifier: {trace.models.get('slim_route', '?')}{recorded}.*")
    points = walkthrough.get("talking_points") or []
    if points:
        parts.append("**Talking points**\n\n" + "\n".join(f"- {p}" for p in points))
    return "\n\n".join(p for p in parts if p)
