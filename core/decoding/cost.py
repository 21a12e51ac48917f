"""The cost model: what a forward pass costs, in full-verifier one-token passes, under a cost profile.

A call is priced from (model, layers it runs, tokens it processes) by a profile (core/decoding/cost_profiles.py):
the default is the modelled memory-bound accelerator, where a pass costs the weights it reads and
scoring k tokens adds k/295 of that; a measured profile (e.g. this CPU's) prices passes as timed.
Either way 1 unit = one full-verifier pass over one token, so plain decoding costs 1 unit per token
after its prefill, and a predicted speed-up is plain's cost over the run's cost for the same tokens.
"""

from __future__ import annotations

import torch

from core.decoding.cost_profiles import CostProfile, ModelCosts, accelerator_costs, device_profile, load_profile
from core.models.layer_routes import LayerRoute
from core.models.routed_layers import decoder_layers
from core.trace import Trace


class CostModel:
    """Prices calls for one verifier (and optionally a separate drafter) under one profile.

    `profile_note` is empty when the profile holds laws for these models; otherwise the profile
    lacks them (a measured profile of other models, or of these models in another dtype: a bf16 pass
    and an fp32 pass cost differently) and the modelled accelerator stands in."""

    def __init__(self, verifier: torch.nn.Module, profile: CostProfile | str | None = None) -> None:
        self.profile = load_profile(profile)
        self.verifier = verifier
        self.profile_note = ""
        self._costs: dict[int, ModelCosts] = {}
        self.unit = self.costs(verifier).time(len(decoder_layers(verifier)), 1)

    @classmethod
    def for_model(cls, verifier: torch.nn.Module, requested: CostProfile | str | None = None) -> CostModel:
        """A cost model under the shipped profile of the verifier's own device, dtype and thread count
        (`core.decoding.cost_profiles.device_profile`), or `requested` when given."""
        if requested is not None:
            return cls(verifier, requested)
        weight = next(verifier.parameters())
        return cls(verifier, device_profile(weight.device, None, weight.dtype))

    @property
    def label(self) -> str:
        """One line naming the profile, for the app's modelled card and printed tables."""
        return self.profile.label + (f" ({self.profile_note})" if self.profile_note else "")

    def costs(self, model: torch.nn.Module) -> ModelCosts:
        key = id(model)
        if key not in self._costs:
            found = self.profile.costs_for(model)
            dtype = str(next(model.parameters()).dtype).replace("torch.", "")
            if found is not None and self.profile.kind == "measured" and self.profile.dtype != dtype:
                found = None
                self.profile_note = (f"measured in {self.profile.dtype}, this model runs in {dtype}: priced as the "
                                     "modelled accelerator")
            elif found is None:
                self.profile_note = "no laws for this model in it: priced as the modelled accelerator"
            if found is None:
                found = accelerator_costs(model)
            self._costs[key] = found
        return self._costs[key]

    def cost_units(self, model: torch.nn.Module, route: LayerRoute | int, tokens_processed: int) -> float:
        """Units for one pass of `model` running `route` (or that many layers) over `tokens_processed` tokens."""
        layers = route if isinstance(route, int) else len(route.layers)
        return self.costs(model).time(layers, tokens_processed) / self.unit

    def call_cost(self, model: torch.nn.Module, route: LayerRoute) -> float:
        """Units for a one-token pass of `model` under `route` (the engine's price before tokens counted)."""
        return self.cost_units(model, route, 1)

    def plain_cost(self, prompt_tokens: int, new_tokens: int) -> float:
        """Units plain decoding spends on `new_tokens` tokens: one prefill pass, then one pass per token."""
        if new_tokens <= 0:
            return 0.0
        full = len(decoder_layers(self.verifier))
        return self.cost_units(self.verifier, full, prompt_tokens) + (new_tokens - 1)

    def calls_cost(self, trace: Trace, drafter: torch.nn.Module | None = None) -> float:
        """Units of every call in a trace under THIS profile, which may differ from the run's: the engine prices
        each call once, by the run's profile (`CallRecord.cost_units`), and everything that shows a run reads
        that; this is only for comparing profiles side by side (the benchmark's pred. and accel. columns).

        `drafter` is the separate drafter model when the run used one (else calls price as the verifier)."""
        total = 0.0
        for round_ in trace.rounds:
            for call in round_.calls:
                model = drafter if call.role == "drafter" and drafter is not None else self.verifier
                total += self.cost_units(model, call.layers, call.tokens_processed)
        return total

    def predicted_speedup(self, trace: Trace, drafter: torch.nn.Module | None = None) -> float:
        """Speed-up over plain decoding that this profile predicts for the trace's calls (see `calls_cost`)."""
        cost = self.calls_cost(trace, drafter)
        plain = self.plain_cost(trace.prompt_token_count, len(trace.tokens))
        return plain / cost if cost else float("inf")
