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
    ids = _ids(tokenizer, prompt, chat_template)
    if not ids:
        raise PromptError("the prompt encodes to no tokens: type some text")
    if len(ids) > MAX_PROMPT_TOKENS:
        raise PromptError(f"the prompt is {len(ids):,} tokens; the limit is {MAX_PROMPT_TOKENS:,}")
    return ids


def _templated(tokenizer: object, chat_template: bool) -> bool:
    return bool(chat_template and getattr(tokenizer, "chat_template", None))


def _ids(tokenizer: object, text: str, chat_template: bool) -> list[int]:
    if _templated(tokenizer, chat_template):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            tokenize=True, return_dict=False)
    else:
        ids = tokenizer(text)["input_ids"]
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def template_positions(tokenizer: object, prompt_ids: list[int], chat_template: bool = True) -> tuple[range, range]:
    """The prompt positions that belong to the chat template, not to the user's text: (before it, after it).

    Role markers, a system text and the opening of the answer are the template's words, not the user's, so
    prompt lookup must never copy them. Found as what the prompt shares with the same template around an
    empty message (common prefix and suffix); with no template, nothing."""
    n = len(prompt_ids)
    if not _templated(tokenizer, chat_template):
        return range(0), range(n, n)
    empty = _ids(tokenizer, "", chat_template)
    head = next((i for i, (a, b) in enumerate(zip(prompt_ids, empty, strict=False)) if a != b), min(n, len(empty)))
    tail = next((i for i, (a, b) in enumerate(zip(reversed(prompt_ids), reversed(empty), strict=False)) if a != b),
                min(n, len(empty)))
    tail = min(tail, n - head, len(empty) - head)
    return range(head), range(n - tail, n)


def stop_token_ids(model: object, tokenizer: object) -> set[int]:
    """EOS ids from the tokenizer and the generation config (chat models often have several)."""
    ids: set[int] = set()
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(tokenizer.eos_token_id)
    return ids
