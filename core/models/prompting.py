"""From a user's prompt to token ids, and which ids end an answer. Shared by the engine and fidelity."""

from __future__ import annotations

from core.errors import PromptError
from core.limits import MAX_PROMPT_CHARS, MAX_PROMPT_TOKENS


def encode_prompt(tokenizer: object, prompt: str, chat_template: bool = True) -> list[int]:
    """Token ids of the prompt, with the model's chat template applied when it has one."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise PromptError("the prompt is empty: type something or pick an example")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise PromptError(f"the prompt has {len(prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PromptError(f"the prompt holds a character that is not valid text at position {exc.start} "
                          "(a lone UTF-16 surrogate): remove it and try again") from None
    if chat_template and getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            tokenize=True, return_dict=False)
    else:
        ids = tokenizer(prompt)["input_ids"]
    ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    if not ids:
        raise PromptError("the prompt encodes to no tokens: type some text")
    if len(ids) > MAX_PROMPT_TOKENS:
        raise PromptError(f"the prompt is {len(ids):,} tokens; the limit is {MAX_PROMPT_TOKENS:,}")
    return ids


def stop_token_ids(model: object, tokenizer: object) -> set[int]:
    """EOS ids from the tokenizer and the generation config (chat models often have several)."""
    ids: set[int] = set()
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(tokenizer.eos_token_id)
    return ids
