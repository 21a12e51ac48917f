"""Tiny random-weight models and a character tokenizer, built in-process: no download, seconds to run.

`VIASD_TEST_DEVICE=cuda` puts every tiny model on the GPU (tests/gpu_check.sh does), so the engine
tests run unchanged on CUDA; tiny models stay float32 there, so exactness still holds.
"""

from __future__ import annotations

import os

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from core.models.loading import LoadedModel, ModelBundle

CHARS = list("abcdefghijklmnopqrstuvwxyz .,!?0123456789")
VOCAB = len(CHARS) + 2  # <eos>, <unk> and the characters: 43
TEST_DEVICE = torch.device(os.environ.get("VIASD_TEST_DEVICE", "cpu"))
QUIET_MIDDLE = {"gemma3_text": 0.5}
"""`middle_scale` per family that gives routed models a mix of agreement and disagreement (default 0.1)."""


def quiet_scale(family: str) -> float:
    return QUIET_MIDDLE.get(family, 0.1)


def char_tokenizer(extra: str = "") -> PreTrainedTokenizerFast:
    """One token per character; `extra` adds characters, which makes a *different* vocabulary."""
    vocab = {"<eos>": 0, "<unk>": 1}
    for c in CHARS + list(extra):
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>")


def tiny_config(family: str = "llama", layers: int = 6, vocab: int = VOCAB, seed_scale: float = 0.3,
                sliding_window: int | None = None) -> object:
    """A 64-wide config of `family`. `sliding_window` turns the window on (Gemma-3 always has one: 8)."""
    from transformers import AutoConfig

    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  initializer_range=seed_scale, eos_token_id=0, bos_token_id=None, pad_token_id=None,
                  tie_word_embeddings=True)
    if family == "gemma3_text":
        common.update(head_dim=16, sliding_window=sliding_window or 8, layer_types=None, query_pre_attn_scalar=16)
    if family == "qwen2":
        common.update(use_sliding_window=sliding_window is not None, sliding_window=sliding_window)
    if family == "mistral":
        common.update(sliding_window=sliding_window)
    return AutoConfig.for_model(family, **common)


@torch.no_grad()
def _quiet_middle_layers(model: torch.nn.Module, scale: float) -> None:
    """Scale what every layer but the first and last adds to the residual stream by `scale`.

    Random models give every layer equal say, so a routed model (layers skipped) almost never agrees
    with the full one. Trained models have partly redundant middle layers; this imitates that, so a
    run has accepted drafts, bonus tokens *and* rejections, and the tests can assert all three.
    """
    layers = list(model.model.layers)
    for i, layer in enumerate(layers):
        middle = 0 < i < len(layers) - 1
        if hasattr(layer, "post_feedforward_layernorm"):
            # Gemma-style sandwich norms (output * (1 + w)) and embeddings scaled by sqrt(hidden): at
            # random init the layers barely move the residual, so every layer is made 8x louder first.
            gain = 8.0 * (scale if middle else 1.0)
            layer.post_attention_layernorm.weight.fill_(gain - 1.0)
            layer.post_feedforward_layernorm.weight.fill_(gain - 1.0)
        elif middle:
            layer.self_attn.o_proj.weight.mul_(scale)
            layer.mlp.down_proj.weight.mul_(scale)


def tiny_model(family: str = "llama", layers: int = 6, seed: int = 0, *, middle_scale: float | None = None,
               avoid_eos: bool = False, **kwargs: object) -> torch.nn.Module:
    """A random tiny causal LM. `middle_scale` quiets the middle layers (see `_quiet_middle_layers`);
    `avoid_eos` zeroes the EOS embedding (tied: its logit is 0), so long runs rarely stop early."""
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(family, layers, **kwargs))
    model.generation_config.eos_token_id = 0
    if middle_scale is not None:
        _quiet_middle_layers(model, middle_scale)
    if avoid_eos:
        with torch.no_grad():
            model.get_input_embeddings().weight[0].zero_()
    return model.eval()


def loaded(name: str, model: torch.nn.Module, tokenizer: object | None = None) -> LoadedModel:
    """Wrap a tiny model as the engine expects it, on the test device, in float32."""
    return LoadedModel(name, model.to(TEST_DEVICE), tokenizer or char_tokenizer(), TEST_DEVICE, torch.float32)


def tiny_bundle(family: str = "llama", layers: int = 6, drafter_layers: int | None = None, *,
                middle_scale: float | None = None, avoid_eos: bool = False, drafter_vocab: int = VOCAB,
                sliding_window: int | None = None) -> ModelBundle:
    """A verifier (and optionally a separate drafter; `drafter_vocab` > 43 pads its embedding matrix,
    same tokenizer) ready for `generate`."""
    verifier = loaded(f"tiny-{family}", tiny_model(family, layers, middle_scale=middle_scale, avoid_eos=avoid_eos,
                                                   sliding_window=sliding_window))
    drafter = None
    if drafter_layers:
        drafter = loaded("tiny-drafter", tiny_model(family, drafter_layers, seed=1, vocab=drafter_vocab,
                                                    sliding_window=sliding_window))
    return ModelBundle(verifier=verifier, drafter=drafter)


def save_tiny_pair(root: object) -> tuple[object, object]:
    """A 4-layer verifier and a 2-layer drafter of one family, same tokenizer, saved with save_pretrained
    under `root` (a pathlib.Path): the folders (verifier, drafter), loadable by path as a real pair."""
    folders = []
    for name, layers, seed in (("verifier", 4, 0), ("drafter", 2, 1)):
        folder = root / name
        tiny_model("llama", layers, seed=seed).save_pretrained(folder)
        char_tokenizer().save_pretrained(folder)
        folders.append(folder)
    return folders[0], folders[1]
