"""Reliability, measured cheaply: how often each tier's confident verdict agrees with the full model.

For a text (prompt + output tokens), one teacher-forced pass each of the drafter, the slim verifier
and the full model gives, per output position, every confidence signal (`prob`, `margin`,
`entropy`; core.decoding.confidence) and whether that model's choice equals the full model's. Everything
else here is arithmetic on those arrays, with no model call: reliability diagrams (agreement per
confidence bin) and coverage / precision against a threshold. The predicted share of tokens per
tier, replaying the engine's own tier rule on these arrays, is core.analysis.prediction.
Greedy only: the choice of every model is its argmax. Prompt lookup has no distribution; its
confidence is its own statistic (core.decoding.drafters.PromptLookupDrafter), stored under every signal
name, and positions where it finds no match (or only one scoring under `draft_stop_below`) draft nothing
(`drafted` is False). A hybrid drafter copies where the text offers a confident copy and asks its model
elsewhere, position by position as core.decoding.drafters.HybridDrafter does with one token (`copy` says which).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from core.config import DecodeConfig
from core.decoding.confidence import confidences
from core.decoding.cost import CostModel
from core.decoding.drafters import COPY_FLOOR, PromptLookupDrafter
from core.decoding.engine import generate
from core.models.layer_routes import LayerRoute, resolve_route
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt, stop_token_ids, template_positions
from core.models.routed_layers import routed
from core.round_policy import switched_off
from core.vocabulary import SIGNALS, DraftKind

PREDICTED_LABEL = "predicted, teacher-forced on the current text"
"""The caption every predicted number carries (the app shows it beside measured numbers)."""


@dataclass
class ModelSignals:
    """One model's teacher-forced view of a text, one entry per output position."""

    choice: np.ndarray  # int: its top token (the drafter's: what it would draft)
    confidence: dict[str, np.ndarray]  # signal name -> float in [0, 1]
    agree: np.ndarray  # bool: choice == the full model's choice
    drafted: np.ndarray  # bool: it proposed something here (False only for prompt lookup without a match)
    copy: np.ndarray  # bool: what it proposed here is a prompt-lookup copy (no distribution behind it)

    @staticmethod
    def concat(parts: list[ModelSignals]) -> ModelSignals:
        return ModelSignals(
            choice=np.concatenate([p.choice for p in parts]),
            confidence={s: np.concatenate([p.confidence[s] for p in parts]) for s in parts[0].confidence},
            agree=np.concatenate([p.agree for p in parts]),
            drafted=np.concatenate([p.drafted for p in parts]), copy=np.concatenate([p.copy for p in parts]))

    def where(self, mask: np.ndarray, other: ModelSignals) -> ModelSignals:
        """These signals where `mask` holds, `other`'s elsewhere (a hybrid drafter's copies and model drafts)."""
        return ModelSignals(
            choice=np.where(mask, self.choice, other.choice),
            confidence={s: np.where(mask, self.confidence[s], other.confidence[s]) for s in self.confidence},
            agree=np.where(mask, self.agree, other.agree), drafted=np.where(mask, self.drafted, other.drafted),
            copy=np.where(mask, self.copy, other.copy))


@dataclass
class ReliabilityData:
    """Per-position signals of the drafter and the slim verifier against the full model, for one or more texts."""

    drafter: ModelSignals
    slim: ModelSignals
    full_choice: np.ndarray
    stop: np.ndarray  # bool: the drafter's choice is a stop token (tier 1 never takes those)
    drafter_name: str = ""
    slim_route: str = ""
    costs: dict[str, float] = field(default_factory=dict)  # role -> modelled units per call (core.decoding.cost)
    slim_agreement: np.ndarray | None = None  # the slim verifier's probability of the drafter's choice (copy evidence)
    config: DecodeConfig | None = None  # the settings it was measured with (drafter, copy evidence, audit, gate)
    full_model_text: bool = False  # the text is the full model's own greedy output (every token its argmax)

    def __len__(self) -> int:
        return len(self.full_choice)

    @staticmethod
    def concat(parts: list[ReliabilityData]) -> ReliabilityData:
        first = parts[0]
        return ReliabilityData(
            drafter=ModelSignals.concat([p.drafter for p in parts]), slim=ModelSignals.concat([p.slim for p in parts]),
            full_choice=np.concatenate([p.full_choice for p in parts]), stop=np.concatenate([p.stop for p in parts]),
            drafter_name=first.drafter_name, slim_route=first.slim_route, costs=dict(first.costs),
            slim_agreement=None if any(p.slim_agreement is None for p in parts)
            else np.concatenate([p.slim_agreement for p in parts]), config=first.config,
            full_model_text=all(p.full_model_text for p in parts))


# ---------------------------------------------------------------- signals from logits (vectorised)

def signals_from_logits(logits: torch.Tensor) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(argmax, {signal: confidence}) for each row of `logits` [n, vocab]; the same numbers as
    core.decoding.confidence.confidence(softmax(row), argmax(row), signal), computed for all rows at once."""
    probs = torch.softmax(logits.float(), dim=-1)
    choice = probs.argmax(-1)
    return choice.cpu().numpy(), {s: confidences(probs, choice, s).cpu().numpy() for s in SIGNALS}


@torch.inference_mode()
def teacher_forced_logits(model: torch.nn.Module, sequence: list[int], first: int,
                          route: LayerRoute | None = None) -> torch.Tensor:
    """Logits predicting sequence[k] from sequence[:k] for k = first .. len - 1, in one pass under `route`."""
    device = next(model.parameters()).device
    with routed(route):
        logits = model(input_ids=torch.tensor([sequence], device=device), use_cache=False).logits[0]
    return logits[first - 1:len(sequence) - 1]


def _signals(choice: np.ndarray, confidence: dict[str, np.ndarray], full_choice: np.ndarray,
             drafted: np.ndarray | None = None, copy: bool = False) -> ModelSignals:
    return ModelSignals(choice=choice, confidence=confidence, agree=choice == full_choice,
                        drafted=np.ones(len(choice), bool) if drafted is None else drafted,
                        copy=np.full(len(choice), copy))


def _prompt_lookup_signals(sequence: list[int], first: int, drafter: PromptLookupDrafter,
                           full_choice: np.ndarray) -> ModelSignals:
    choice, stat, drafted = [], [], []
    for k in range(first, len(sequence)):
        draft = drafter.propose(sequence[:k], 1)
        drafted.append(bool(draft.tokens))
        choice.append(draft.tokens[0] if draft.tokens else -1)
        stat.append(draft.confidences[0] if draft.tokens else 0.0)
    values = np.array(stat, dtype=np.float64)
    return _signals(np.array(choice), {s: values for s in SIGNALS}, full_choice, np.array(drafted, bool), copy=True)


def _drafter_signals(bundle: ModelBundle, config: DecodeConfig, sequence: list[int], first: int,
                     full_choice: np.ndarray, cost: CostModel, template: tuple[range, ...] = ()
                     ) -> tuple[ModelSignals, str, float]:
    """(the drafter's signals, its name, its modelled cost per call) for the run's kind of drafter; prompt lookup
    masks the chat template's positions (`template`), as the engine's does."""
    model, drafts = bundle.verifier.model, config.policy.drafts
    lookup = PromptLookupDrafter(config.ngram_size, config.draft_stop_below, template)
    if drafts is DraftKind.COPY:
        return _prompt_lookup_signals(sequence, first, lookup, full_choice), lookup.describe(), 0.0
    if config.drafter != "self" and bundle.drafter is not None:  # a separate model drafts (alone or in a hybrid)
        draft_model, draft_route, name = bundle.drafter.model, None, bundle.drafter.name
        unit = CostModel(draft_model).unit / cost.unit
    else:
        draft_model, draft_route = model, resolve_route(config.draft_route, model.config)
        name, unit = f"self ({draft_route.describe()})", cost.call_cost(model, draft_route)
    drafted = _signals(*signals_from_logits(teacher_forced_logits(draft_model, sequence, first, draft_route)),
                       full_choice)
    if drafts is not DraftKind.HYBRID:
        return drafted, name, unit
    plain_lookup = PromptLookupDrafter(config.ngram_size, template=template)  # hybrid copies: no stop floor
    copies = _prompt_lookup_signals(sequence, first, plain_lookup, full_choice)
    confident = copies.drafted & (copies.confidence["prob"] >= COPY_FLOOR)  # one token a round: one copied suffices
    return copies.where(confident, drafted), f"{plain_lookup.describe()} or {name}", unit


def measure(bundle: ModelBundle, prompt: str, config: DecodeConfig, output_ids: list[int] | None = None
            ) -> ReliabilityData:
    """Teacher-forced signals for one text: `output_ids` after `prompt` (default: the full model's own
    greedy output under `config`, from the memo when it was generated before)."""
    config = config.validate()
    verifier = bundle.verifier
    model = verifier.model
    if output_ids is None:
        output_ids = generate(bundle, prompt, config.with_(mode="plain", temperature=0.0)).token_ids
    prompt_ids = encode_prompt(verifier.tokenizer, prompt, config.chat_template)
    sequence, first = prompt_ids + list(output_ids), len(prompt_ids)
    cost = CostModel(model)
    slim_route = resolve_route(config.slim_route, model.config)
    full_choice, _ = signals_from_logits(teacher_forced_logits(model, sequence, first))
    slim_logits = teacher_forced_logits(model, sequence, first, slim_route)
    slim = _signals(*signals_from_logits(slim_logits), full_choice)
    costs = {"slim": cost.call_cost(model, slim_route), "full": 1.0}
    template = template_positions(verifier.tokenizer, prompt_ids, config.chat_template)
    drafter, name, costs["drafter"] = _drafter_signals(bundle, config, sequence, first, full_choice, cost, template)
    stop = np.isin(drafter.choice, sorted(stop_token_ids(model, verifier.tokenizer)))
    return ReliabilityData(drafter=drafter, slim=slim, full_choice=full_choice, stop=stop, drafter_name=name,
                           slim_route=slim_route.describe(), costs=costs,
                           slim_agreement=_probability_of(slim_logits, drafter.choice), config=config,
                           full_model_text=bool(np.array_equal(full_choice, np.asarray(output_ids))))


def _probability_of(logits: torch.Tensor, choice: np.ndarray) -> np.ndarray:
    """Per row, the probability `logits` give to `choice` (0 where nothing was chosen, choice -1)."""
    probs = torch.softmax(logits.float(), dim=-1)
    index = torch.as_tensor(np.clip(choice, 0, None), device=probs.device).long().unsqueeze(-1)
    picked = probs.gather(-1, index).squeeze(-1).cpu().numpy()
    return np.where(choice >= 0, picked, 0.0)


# ---------------------------------------------------------------- arithmetic on the arrays (no model)

def fires(confidence: np.ndarray, threshold: float) -> np.ndarray:
    """Vectorised core.round_policy.fires: confidence >= threshold, unless the threshold switches the tier off."""
    if switched_off(threshold):
        return np.zeros(np.shape(confidence), bool)
    return np.asarray(confidence) >= threshold


def reliability_bins(confidence: np.ndarray, agree: np.ndarray, bins: int = 10) -> pd.DataFrame:
    """Reliability diagram data: per confidence bin [lo, hi), its count, mean confidence and agreement
    with the full model (NaN for an empty bin). The last bin includes 1.0."""
    confidence, agree = np.asarray(confidence, float), np.asarray(agree, bool)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    rows = []
    for b in range(bins):
        inside = index == b
        count = int(inside.sum())
        rows.append({"bin_lo": edges[b], "bin_hi": edges[b + 1], "count": count,
                     "mean_confidence": float(confidence[inside].mean()) if count else math.nan,
                     "agreement": float(agree[inside].mean()) if count else math.nan})
    return pd.DataFrame(rows)


def coverage_precision(confidence: np.ndarray, agree: np.ndarray, taus: np.ndarray | list[float]) -> pd.DataFrame:
    """Per threshold: coverage = share of positions whose confidence clears it, precision = share of
    those where the model agrees with the full model (NaN when none clears)."""
    confidence, agree = np.asarray(confidence, float), np.asarray(agree, bool)
    rows = []
    for tau in taus:
        taken = fires(confidence, float(tau))
        count = int(taken.sum())
        rows.append({"tau": float(tau), "count": count,
                     "coverage": count / len(confidence) if len(confidence) else 0.0,
                     "precision": float(agree[taken].mean()) if count else math.nan})
    return pd.DataFrame(rows)


def lowest_threshold_for_precision(confidence: np.ndarray, agree: np.ndarray, target: float,
                                   min_count: int = 5) -> float:
    """The smallest threshold whose precision is >= target on at least `min_count` positions
    (1.0, i.e. the tier off, when none qualifies). Candidate thresholds are the observed confidences."""
    confidence, agree = np.asarray(confidence, float), np.asarray(agree, bool)
    order = np.argsort(-confidence, kind="stable")
    ranked, hits = confidence[order], np.cumsum(agree[order])
    best = 1.0
    for i in range(len(ranked)):
        # Ties: a threshold at ranked[i] takes every position with that confidence, so test at the last tie.
        if i + 1 < len(ranked) and ranked[i + 1] == ranked[i]:
            continue
        if i + 1 >= min_count and hits[i] / (i + 1) >= target and not switched_off(ranked[i]):
            best = float(ranked[i])
    return best
