"""Teacher-forced scoring of slim routes: how a routed verifier's confident verdicts compare with the full model's.

A calibration text is a prompt followed by the full model's own greedy output; one teacher-forced pass of the
routed model over it gives, at every output position, the routed model's choice and confidence beside the full
model's choice. From those: agreement, and coverage / precision at a threshold (core.analysis.reliability).
`route_cost` prices a route by the weights it reads (a pass on a memory-bound device costs its weights read),
sub-layer skips and a restricted head included. `python -m core.tools.calibrate` (core/tools/calibrate.py) and the mask
search (core/analysis/mask_search.py, driven by core/tools/calibrate_pair.py) both score routes here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from core.analysis.reliability import fires, lowest_threshold_for_precision, signals_from_logits
from core.config import DecodeConfig
from core.decoding.engine import generate
from core.models.layer_routes import LayerRoute, resolve_route, route_to_dict, with_sublayer_skips
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt, stop_token_ids
from core.models.routed_layers import decoder_layers, routed

Block = tuple[int, str]
"""One routable unit: (layer index, "attention" | "mlp")."""


@dataclass
class Text:
    """One calibration or evaluation text: prompt + the full model's greedy output."""

    sequence: list[int]
    first: int  # index of the first output token


@dataclass
class RouteScore:
    """How a slim route (and head) does as tier 2 at the precision target."""

    route: str
    cost: float  # modelled units per slim call
    tau_slim: float  # lowest threshold meeting the precision target on the calibration text (1.0: none)
    coverage: float  # share of positions whose slim confidence clears tau_slim
    precision: float  # share of those where the slim choice equals the full model's
    agreement: float  # overall top-1 agreement with the full model
    net_saving: float  # coverage - cost: full passes saved per token reaching tier 2
    vocab_top: int | None = None  # restricted head size (None: the whole vocabulary)
    tokens: int = 0
    route_spec: dict | None = None  # core.models.layer_routes.route_to_dict of the route


def _params(module: torch.nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def block_params(model: torch.nn.Module) -> dict[Block, int]:
    """Weights of each layer's attention and MLP block (norms are negligible and left out)."""
    out: dict[Block, int] = {}
    for i, routed_layer in enumerate(decoder_layers(model)):
        layer = getattr(routed_layer, "layer", routed_layer)
        out[(i, "attention")] = _params(getattr(layer, "self_attn", None))
        out[(i, "mlp")] = _params(getattr(layer, "mlp", None))
    return out


def route_cost(model: torch.nn.Module, route: LayerRoute, vocab_share: float = 1.0) -> float:
    """Modelled cost of one pass under `route` (core.decoding.cost's rule, minus skipped blocks; head scaled)."""
    layers = decoder_layers(model)
    head = _params(model.get_output_embeddings())
    blocks = block_params(model)
    total = sum(_params(layer) for layer in layers) + head
    used = sum(_params(layers[i]) for i in route.layers) + head * vocab_share
    used -= sum(blocks[(i, "attention")] for i in route.skip_attention)
    used -= sum(blocks[(i, "mlp")] for i in route.skip_mlp)
    return used / total


def route_from_blocks(dropped: list[Block], config: object, name: str) -> LayerRoute:
    """A route skipping `dropped` blocks; a layer with both blocks dropped becomes a whole-layer skip."""
    n = int(config.get_text_config().num_hidden_layers if hasattr(config, "get_text_config")
            else config.num_hidden_layers)
    attention = {i for i, part in dropped if part == "attention"}
    mlp = {i for i, part in dropped if part == "mlp"}
    whole = attention & mlp
    base = resolve_route(sorted(set(range(n)) - whole), config)
    return with_sublayer_skips(base, attention - whole, mlp - whole, config, name)


class Calibrator:
    """Teacher-forced scoring of slim routes on a fixed set of texts (one pass over them per route)."""

    def __init__(self, bundle: ModelBundle, texts: list[Text]) -> None:
        self.model = bundle.verifier.model
        self.texts = texts
        self.stop_ids = sorted(stop_token_ids(self.model, bundle.verifier.tokenizer))
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.device = next(self.model.parameters()).device
        self.passes = 0
        self.full_hidden = self.final_hidden(None)
        self.full_choice = signals_from_logits(self.head(self.full_hidden))[0]

    @torch.inference_mode()
    def final_hidden(self, route: LayerRoute | None) -> torch.Tensor:
        """Final-norm hidden states at every output-predicting position of every text, stacked [N, width]."""
        rows = []
        with routed(route):
            for t in self.texts:  # one text at a time: no padding to pay for
                ids = torch.tensor([t.sequence], device=self.device)
                states = self.model.model(input_ids=ids, use_cache=False).last_hidden_state
                rows.append(states[0, t.first - 1:len(t.sequence) - 1].float().cpu())
        self.passes += 1
        return torch.cat(rows)

    @torch.inference_mode()
    def block_contributions(self) -> dict[Block, float]:
        """One full pass: each block's output norm relative to the residual stream entering its layer,
        averaged over positions. Small means dropping it changes little: a ranking from one pass
        instead of one pass per block."""
        residual: dict[int, torch.Tensor] = {}
        ratios: dict[Block, list[float]] = {}
        hooks = []

        def remember(index: int) -> Callable:
            def hook(_module: object, args: tuple, kwargs: dict) -> None:
                residual[index] = (args[0] if args else kwargs["hidden_states"]).norm(dim=-1)
            return hook

        def measure(index: int, part: str) -> Callable:
            def hook(_module: object, _args: object, out: object) -> None:
                value = out[0] if isinstance(out, tuple) else out
                ratios.setdefault((index, part), []).append(
                    float((value.norm(dim=-1) / residual[index].clamp(min=1e-6)).mean()))
            return hook

        for i, layer in enumerate(decoder_layers(self.model)):
            hooks.append(layer.register_forward_pre_hook(remember(i), with_kwargs=True))
            inner = getattr(layer, "layer", layer)
            for attribute, part in (("self_attn", "attention"), ("mlp", "mlp")):
                if getattr(inner, attribute, None) is not None:
                    hooks.append(getattr(inner, attribute).register_forward_hook(measure(i, part)))
        try:
            self.final_hidden(None)
        finally:
            for hook in hooks:
                hook.remove()
        return {block: float(np.mean(values)) for block, values in ratios.items()}

    def head(self, hidden: torch.Tensor, vocab: torch.Tensor | None = None) -> torch.Tensor:
        weight = self.model.get_output_embeddings().weight.detach().float().cpu()
        return hidden @ (weight if vocab is None else weight[vocab]).T

    def context_vocab(self, top: int) -> list[torch.Tensor]:
        """Per text: ids < top, the stop tokens and the prompt's tokens (not the output's: a head chosen before
        decoding cannot know them, and including them would flatter its precision)."""
        return [torch.tensor(sorted(set(range(min(top, self.vocab_size))) | set(t.sequence[:t.first])
                                    | set(self.stop_ids))) for t in self.texts]

    def score(self, route: LayerRoute, target: float, signal: str, vocab_tops: tuple[int | None, ...] = (None,),
              hidden: torch.Tensor | None = None, taus: dict[int | None, float] | None = None) -> list[RouteScore]:
        """Score `route` with each head size. With `taus` given (held-apart text) the thresholds are
        fixed, not re-fitted."""
        if hidden is None:
            hidden = self.full_hidden if route.is_full else self.final_hidden(route)
        scores = []
        for top in vocab_tops:
            choice, conf, share = self._choices(hidden, top)
            agree = choice == self.full_choice
            c = conf[signal]
            tau = taus[top] if taus is not None else lowest_threshold_for_precision(c, agree, target)
            taken = fires(c, tau)
            coverage = float(taken.mean())
            cost = route_cost(self.model, route, share)
            scores.append(RouteScore(route=route.describe(), cost=cost, tau_slim=tau, coverage=coverage,
                                     precision=float(agree[taken].mean()) if taken.any() else float("nan"),
                                     agreement=float(agree.mean()), net_saving=coverage - cost, vocab_top=top,
                                     tokens=len(c), route_spec=route_to_dict(route)))
        return scores

    def _choices(self, hidden: torch.Tensor, top: int | None) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
        if top is None:
            choice, conf = signals_from_logits(self.head(hidden))
            return choice, conf, 1.0
        choices, confs, sizes, start = [], [], [], 0
        for t, vocab in zip(self.texts, self.context_vocab(top), strict=True):
            n = len(t.sequence) - t.first
            local, conf = signals_from_logits(self.head(hidden[start:start + n], vocab))
            choices.append(vocab.numpy()[local])
            confs.append(conf)
            sizes.append(len(vocab))
            start += n
        merged = {s: np.concatenate([c[s] for c in confs]) for s in confs[0]}
        return np.concatenate(choices), merged, float(np.mean(sizes)) / self.vocab_size


def build_texts(bundle: ModelBundle, prompts: list[str], tokens: int) -> list[Text]:
    """The full model's own greedy output for each prompt (memoised), as teacher-forcing texts."""
    texts = []
    for prompt in prompts:
        config = DecodeConfig(mode="plain", max_new_tokens=tokens)
        output = generate(bundle, prompt, config).token_ids
        prompt_ids = encode_prompt(bundle.verifier.tokenizer, prompt)
        texts.append(Text(sequence=prompt_ids + output, first=len(prompt_ids)))
    return texts


