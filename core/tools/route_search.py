"""Layer-subset search: rank layers by how little dropping each one alone hurts, then drop the least harmful.

Agreement = teacher-forced top-1 agreement of the routed model with the full model on the full
model's own greedy answers to a few example prompts. This is how the embedded model's named
routes in core.models.layer_routes were found:  python -m core.tools.route_search --skip 12 --prompts 3
"""

from __future__ import annotations

import argparse

import torch

from core.config import DecodeConfig
from core.decoding.engine import encode_prompt, generate
from core.models.layer_routes import LayerRoute
from core.models.loading import EMBEDDED_ID, ModelBundle, load_bundle
from core.models.routed_layers import routed


@torch.inference_mode()
def teacher_batches(bundle: ModelBundle, prompts: list[str], tokens: int,
                    chat_template: bool = True) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(ids, targets) per prompt: prompt + the full model's own greedy answer, and the full model's
    argmax at every position. Built on the model's device, so a CUDA model gets CUDA tensors."""
    model, tok, device = bundle.verifier.model, bundle.verifier.tokenizer, bundle.verifier.device
    batches = []
    for prompt in prompts:
        config = DecodeConfig(mode="plain", max_new_tokens=tokens, chat_template=chat_template)
        trace = generate(bundle, prompt, config)
        ids = torch.tensor([encode_prompt(tok, prompt, chat_template) + trace.token_ids], device=device)
        batches.append((ids, model(input_ids=ids).logits[0].argmax(-1)))
    return batches


@torch.inference_mode()
def agreement(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], layers: set[int],
              num_layers: int) -> float:
    """Share of positions where the model routed through `layers` has the same argmax as the full model."""
    route = LayerRoute(tuple(sorted(layers)), num_layers, "search")
    hits = total = 0
    for ids, targets in batches:
        with routed(route):
            logits = model(input_ids=ids).logits[0]
        hits += int((logits.argmax(-1) == targets).sum())
        total += targets.numel()
    return hits / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=EMBEDDED_ID)
    parser.add_argument("--skip", type=int, default=10, help="layers to drop in total")
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    from examples import load_prompts

    bundle = load_bundle(args.model)
    model = bundle.verifier.model
    batches = teacher_batches(bundle, [p.text for p in load_prompts()[: args.prompts]], args.tokens)
    n = bundle.verifier.num_layers
    # One pass of single-layer drops ranks the layers; then drop the k least harmful for each k.
    # (A full greedy search re-ranks after every drop: k times the cost, about the same answer here.)
    harm = {i: agreement(model, batches, set(range(n)) - {i}, n) for i in range(1, n)}
    order = sorted(harm, key=harm.get, reverse=True)
    print("single-layer drop agreement:", {i: round(harm[i], 3) for i in order}, flush=True)
    for k in range(1, args.skip + 1):
        skipped = sorted(order[:k])
        score = agreement(model, batches, set(range(n)) - set(skipped), n)
        print(f"skip {k:2d} layers {skipped} -> agreement {score:.3f}", flush=True)


if __name__ == "__main__":
    main()
