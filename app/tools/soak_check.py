"""Checking a soak's answers after the soak: each against a fresh engine run of the same request.

The checker loads its own copy of each model in this process (never the app's, which is what is under
test) and runs the request alone: `replay=False`, so no memo is read and every pass runs for real,
as `app.tools.load_test` does. A request seen several times is run once. What each answer must show:

* a run, a re-route, a link: it is the answer to *this* request (its prompt, its settings, its model)
  and its tokens are the fresh run's, token for token; a bf16 replay may part from it only at a near-tie of
  the full model, measured (`near_tie`), and each such answer is listed;
* a stopped run: it ended early (or finished before Stop reached it), and its tokens up to the first
  copy still kept on trust are the fresh full run's first tokens (an audit may still cut a trusted copy);
* Compare: each mode's text is that mode's fresh text; the grid's table and the schemes' points are
  those the checker's own sweep computes (memo on, in the checker's bundle, as the app's sweep does);
* a Classroom walkthrough: as many rounds as the fresh run, each round's text of the length it had.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

import torch

from app.settings import Settings
from app.tabs.compare import parse_values
from app.tools.soak_actions import Answer
from app.tools.soak_pools import GRID_VALUES
from app.views import tables, walkthroughs
from app.views.render import is_special
from app.views.round_replay import visible_trace
from app.views.tradeoff_chart import tradeoff_chart
from core import EMBEDDED_ID, DecodeConfig, ModelBundle, generate, load_bundle
from core.analysis.tradeoffs import scheme_points, sweep_schemes, threshold_grid
from core.models.prompting import encode_prompt
from core.round_policy import in_order
from core.trace import Trace
from examples import load_walkthroughs

TAG = re.compile(r"<[^>]+>")


def visible_text(trace: Trace) -> str:
    return "".join(t.text for t in trace.tokens if not is_special(t))


def shown_text(box: str) -> str:
    """The text a Compare box shows, without what it marks as the full model's dropped words or its notes."""
    box = str(box).split('<div class="viasd-note">', 1)[0]
    box = re.sub(r"<del\b.*?</del>", "", box, flags=re.S)
    box = re.sub(r'<span class="tok special"[^>]*>.*?</span>', "", box, flags=re.S)
    return html.unescape(TAG.sub("", box)).strip()


class Checker:
    """Fresh bundles and fresh reference runs, each computed once."""

    def __init__(self, loader: Callable[..., ModelBundle] = load_bundle) -> None:
        self._loader = loader
        self._bundles: dict[tuple[str, str] | None, ModelBundle] = {}
        self._runs: dict[tuple, Trace] = {}
        self._sweeps: dict[tuple, Any] = {}
        self.ties: list[str] = []  # bf16 replays that part from the fresh run at a near-tie of the full model

    def bundle(self, models: tuple[str, str] | None) -> ModelBundle:
        if models not in self._bundles:
            self._bundles[models] = self._loader(*models) if models else self._loader()
        return self._bundles[models]

    def fresh(self, models: tuple[str, str] | None, prompt: str, config: DecodeConfig) -> Trace:
        key = (models, prompt, config)
        if key not in self._runs:
            self._runs[key] = generate(self.bundle(models), prompt, config, replay=False)
        return self._runs[key]

    def check(self, answer: Answer) -> str:
        """Why the answer is wrong ('' when it is right, or when there is nothing to check)."""
        spec = answer.check
        if spec is None or answer.error:
            return ""
        kind = spec["kind"]
        try:
            return {"tokens": self._tokens, "compare": self._compare, "grid": self._grid, "schemes": self._schemes,
                    "classroom": self._classroom}[kind](spec)
        except Exception as exc:  # noqa: BLE001  (a check that cannot run is a wrong answer, said why)
            return f"the check could not run: {type(exc).__name__}: {str(exc)[:200]}"

    def _tokens(self, spec: dict) -> str:
        asked: Settings = spec["asked"]
        trace, models = spec["trace"], spec["models"]
        config = _run_config(asked)
        if trace["prompt"] != asked.prompt:
            return f"someone else's answer: prompt {trace['prompt'][:50]!r}"
        ran = DecodeConfig.from_dict(trace["config"])
        if spec.get("snaps") and ran != config and _snapped(ran, config):
            config = ran  # a re-route inside the run's grid answers for the grid's nearest point, and says so
        if ran != config:
            return f"the answer ran other settings than asked ({_differing(trace['config'], config)})"
        verifier = models[0] if models else EMBEDDED_ID
        if trace["models"]["verifier"] != verifier:
            return f"the answer came from {trace['models']['verifier']}, not {verifier}"
        expected = self.fresh(models, asked.prompt, config).token_ids
        got = spec["token_ids"]
        stopped = spec["stopped"] and trace["stop_reason"] == "cancelled"
        if stopped:  # only the tokens it had settled before the Stop are compared
            settled = next((i for i, state in enumerate(spec["audit"]) if state == "trusted"), len(got))
            got, expected = got[:settled], expected[:settled]
        if got == expected:
            return ""
        first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                     min(len(got), len(expected)))
        differ = (f"the stopped run's first {settled} tokens are not the fresh run's (from token {first})" if stopped
                  else f"tokens differ from a fresh run from token {first} ({len(got)} vs {len(expected)} tokens)")
        bundle = self.bundle(models)
        if spec["replay"] and bundle.verifier.dtype != torch.float32 and first < min(len(got), len(expected)):
            tie = near_tie(bundle, asked.prompt, config, spec["token_ids"], expected, first)
            if tie:  # a stopped bf16 replay parts at a near-tie just as a finished one does
                self.ties.append(f"{answer_name(spec)}: {differ}, {tie}")
                return ""
        return differ

    def _compare(self, spec: dict) -> str:
        asked: Settings = spec["asked"]
        if not str(spec["status"]).startswith("**Done"):
            return f"Compare did not finish: {str(spec['status'])[:120]}"
        for mode, box in spec["html"].items():
            expected = visible_text(self.fresh(spec["models"], asked.prompt, asked.config().with_(mode=mode)))
            if shown_text(box) != expected.strip():
                return f"Compare's {mode} text is not the fresh run's"
        return ""

    def _grid(self, spec: dict) -> str:
        asked: Settings = spec["asked"]
        config = _run_config(asked)
        values = sorted({*parse_values(GRID_VALUES), config.tau_accept, config.tau_slim})  # as the Compare tab
        key = ("grid", spec["models"], asked.prompt, config)
        if key not in self._sweeps:
            self._sweeps[key] = tables.grid_table(threshold_grid(self.bundle(spec["models"]), asked.prompt, config,
                                                                 values)).astype(str).values.tolist()
        table = spec["table"]
        got = table.get("data") if isinstance(table, dict) else None
        return "" if got == self._sweeps[key] else "the grid's table is not the one a fresh sweep computes"

    def _schemes(self, spec: dict) -> str:
        asked: Settings = spec["asked"]
        config = _run_config(asked)
        key = ("schemes", spec["models"], asked.prompt, config)
        if key not in self._sweeps:
            rows = sweep_schemes(self.bundle(spec["models"]), [asked.prompt], config)
            self._sweeps[key] = _points(tradeoff_chart(scheme_points(rows)).to_plotly_json())
        plot = spec["plot"]
        got = _points(json.loads(plot["plot"])) if isinstance(plot, dict) and "plot" in plot else None
        return "" if got == self._sweeps[key] else "the schemes' points are not the ones a fresh sweep computes"

    def _classroom(self, spec: dict) -> str:
        walkthrough = next(w for w in load_walkthroughs() if w["title"] == spec["title"])
        trace = walkthroughs.recorded_trace(walkthrough) or self.fresh(
            None, walkthrough["prompt"], walkthroughs.walkthrough_config(walkthrough))
        if str(spec["heading"]).startswith("⚠"):
            return f"the walkthrough did not open: {str(spec['heading'])[:120]}"
        if spec["rounds"] != len(trace.rounds):
            return f"{spec['rounds']} rounds on the slider, the fresh run has {len(trace.rounds)}"
        for number, (tokens, _table, caption) in spec["steps"]:
            shown = re.search(r'data-tokens="(\d+)"', str(tokens))
            expected = len(visible_trace(trace, number - 1, False).tokens)
            if shown is None or int(shown.group(1)) != expected or "viasd-caption" not in str(caption):
                return f"round {number} shows {shown and shown.group(1)} tokens, the fresh run had {expected}"
        return ""


TIE_LOOKAHEAD = 8
"""Tokens appended for the second pass shape of `near_tie` (a verification pass scores about this many)."""


def near_tie(bundle: ModelBundle, prompt: str, config: DecodeConfig, got: list[int], expected: list[int],
             at: int) -> str:
    """Why a bf16 replay that parts from a fresh run at token `at` is still right ('' when it is not).

    A re-route replays logits the memo holds from passes of other shapes than a fresh run's, and bf16 rounds each
    shape differently (FINDINGS: "scoring several tokens in one pass gives slightly different logits"). So where
    the full model's two candidates are within that rounding of each other, either is its answer. Measured here:
    the full model's logits at the prefix in two pass shapes (the prefix alone, and with the next tokens after it);
    the two tokens must be its top two and their gap at most twice the shapes' own difference on them (or 4 bf16
    ulps of their size, where the shapes happen to agree)."""
    model, ids = bundle.verifier.model, encode_prompt(bundle.verifier.tokenizer, prompt, config.chat_template)
    ids = ids + list(got[:at])
    with torch.no_grad():
        alone = model(torch.tensor([ids], device=bundle.verifier.device)).logits[0, -1].float().cpu()
        longer = model(torch.tensor([ids + list(got[at:at + TIE_LOOKAHEAD])], device=bundle.verifier.device)
                       ).logits[0, len(ids) - 1].float().cpu()
    return tie_reason(alone, longer, [got[at], expected[at]])


def tie_reason(alone: torch.Tensor, longer: torch.Tensor, pair: list[int]) -> str:
    """`near_tie`'s rule on the two shapes' logits (one row each) for the two tokens in `pair`."""
    if set(alone.topk(2).indices.tolist()) != set(pair):
        return ""
    gap = float((alone[pair[0]] - alone[pair[1]]).abs())
    noise = float((alone[pair] - longer[pair]).abs().max())
    ulps = 4 * 2.0 ** -8 * float(alone[pair].abs().max())
    if gap > max(2 * noise, ulps):
        return ""
    return f"a bf16 near-tie of the full model (gap {gap:.3f}, the pass shapes differ by {noise:.3f})"


def answer_name(spec: dict) -> str:
    asked = spec["asked"]
    return f"{asked.mode} τ {asked.tau_accept:g}/{asked.tau_slim:g} γ {asked.gamma} on {asked.prompt[:30]!r}"


def _points(figure: dict) -> list[tuple]:
    """Each trace's name and (x, y) points of a plotly figure, rounded (the JSON round trip)."""
    def rounded(values: Any) -> tuple:
        return tuple(round(float(v), 6) if isinstance(v, (int, float)) else v for v in (values or ()))

    return [(t.get("name"), rounded(t.get("x")), rounded(t.get("y"))) for t in figure.get("data", [])]


SNAP = 0.3
"""How far a grid's nearest point may lie from a slider value (its τ_slim axis is off, the calibrated value and
one lower, so a value can be this far from the nearest one)."""


def _run_config(asked: Settings) -> DecodeConfig:
    """The settings the app runs for a request: out-of-range numbers clamped, as the sliders do."""
    return asked.clamped()[0].config()


def _snapped(ran: DecodeConfig, asked: DecodeConfig) -> bool:
    """Whether `ran` is `asked` with only the live sliders moved to a nearby grid point (in order)."""
    live = {"tau_accept": ran.tau_accept, "tau_slim": ran.tau_slim, "gamma": ran.gamma}
    near = all(abs(getattr(ran, k) - getattr(asked, k)) <= SNAP for k in ("tau_accept", "tau_slim"))
    return ran == asked.with_(**live) and near and in_order(ran.tau_accept, ran.tau_slim)


def _differing(got: dict, config: DecodeConfig) -> str:
    asked = DecodeConfig.from_dict(got).to_dict()
    names = [k for k, v in config.to_dict().items() if asked.get(k) != v]
    return ", ".join(names[:4]) or "unknown"
