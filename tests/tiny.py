"""Tiny random-weight models and a character tokenizer, built in-process: no download, seconds to run."""

from __future__ import annotations

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from core.models import LoadedModel, ModelBundle

CHARS = list("abcdefghijklmnopqrstuvwxyz .,!?0123456789")


def char_tokenizer(extra: str = "") -> PreTrainedTokenizerFast:
    """One token per character; `extra` adds characters, which makes a *different* vocabulary."""
    vocab = {"<eos>": 0, "<unk>": 1}
    for c in CHARS + list(extra):
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>")


def tiny_config(family: str = "llama", layers: int = 6, vocab: int = 43, seed_scale: float = 0.3) -> object:
    from transformers import AutoConfig

    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  initializer_range=seed_scale, eos_token_id=0, bos_token_id=None, pad_token_id=None,
                  tie_word_embeddings=True)
    if family == "gemma3_text":
        common.update(head_dim=16, sliding_window=8, layer_types=None, query_pre_attn_scalar=16)
    if family == "qwen2":
        common.update(use_sliding_window=False)
    if family == "mistral":
        common.update(sliding_window=None)
    return AutoConfig.for_model(family, **common)


def tiny_model(family: str = "llama", layers: int = 6, seed: int = 0, **kwargs: object) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(family, layers, **kwargs))
    model.generation_config.eos_token_id = 0
    return model.eval()


def tiny_bundle(family: str = "llama", layers: int = 6, drafter_layers: int | None = None) -> ModelBundle:
    tok = char_tokenizer()
    verifier = LoadedModel(f"tiny-{family}", tiny_model(family, layers), tok, torch.device("cpu"), torch.float32)
    drafter = None
    if drafter_layers:
        drafter = LoadedModel("tiny-drafter", tiny_model(family, drafter_layers, seed=1), char_tokenizer(),
                              torch.device("cpu"), torch.float32)
    return ModelBundle(verifier=verifier, drafter=drafter)
