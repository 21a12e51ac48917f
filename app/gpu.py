"""Model work under ZeroGPU when the app runs on such a Space; a no-op everywhere else.

A ZeroGPU Space lends a GPU only inside functions decorated with `spaces.GPU`, for at most the
`duration` the decorator asks for; asking for less gets a visitor through the queue sooner. So
each model job asks for a duration fitted to its request (proportional to the tokens it may
write). Without the `spaces` package (local runs, CPU Spaces, tests) `on_gpu` returns the
function unchanged.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

BASE_SECONDS = 10
"""Fixed part of a GPU lease: moving the weights to the device and the prompt's prefill."""
SECONDS_PER_TOKEN = 0.25
"""Generous per-token allowance (several forward passes per token across drafter and verifiers)."""
MAX_SECONDS = 120
"""ZeroGPU's ceiling for a single call (longer requests are refused by the Space)."""


def seconds_for_tokens(max_new_tokens: int, runs: int = 1) -> int:
    """GPU seconds to ask for a job writing up to `max_new_tokens` tokens, `runs` times (e.g. compare's 3 modes)."""
    wanted = BASE_SECONDS + SECONDS_PER_TOKEN * max(1, int(max_new_tokens)) * max(1, runs)
    return int(min(MAX_SECONDS, max(BASE_SECONDS, round(wanted))))


def zero_gpu_available() -> bool:
    """True when the `spaces` package (Hugging Face ZeroGPU) can be imported."""
    return importlib.util.find_spec("spaces") is not None


def on_gpu(duration: Callable[..., int]) -> Callable[[F], F]:
    """Decorate a model job so it runs under `spaces.GPU(duration=duration)` when ZeroGPU is there.

    `duration` receives the job's own arguments and returns seconds (e.g. via `seconds_for_tokens`).
    Works for plain functions and generators (ZeroGPU supports both).
    """
    if not zero_gpu_available():
        return lambda fn: fn
    import spaces  # only on a Space

    return spaces.GPU(duration=duration)


def settings_seconds(settings: Any, *_: Any, **__: Any) -> int:
    """`duration` for jobs whose first argument is an `app.settings.Settings` (generate, re-route)."""
    return seconds_for_tokens(getattr(settings, "max_new_tokens", 64))


def compare_seconds(settings: Any, *_: Any, **__: Any) -> int:
    """`duration` for the compare job: three modes, each up to `max_new_tokens` tokens."""
    return seconds_for_tokens(getattr(settings, "max_new_tokens", 64), runs=3)
