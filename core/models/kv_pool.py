"""KV caches left by finished runs, lent to the next run of the same model and route.

A re-route (another threshold point of the same prompt) shares its text with earlier runs up to its first differing
decision. The memo (core.models.memo) holds the logits of every prefix computed, so the re-route costs nothing
until it branches; but to go past the branch a scorer needs the KV cache of everything before it, and a new run's
scorer starts empty: its first pass would read the prompt and the shared text again. That catch-up was two thirds of
a background grid point's time (docs/benchmarks.md, "A visitor's own prompt"). So a finished run's scorers leave
their caches here, and a scorer starting on a memo-allowed run borrows the one sharing the longest prefix with its
text (`Scorer.rollback_to` then crops it there): only the branch is computed. Runs timed honestly (`replay=False`)
neither borrow nor lend: their prefill is part of what they measure.

A cached row depends only on the model object, its route and the prefix, as a memo row does; the key is the memo's
(`memo_key`). Bounded by bytes, oldest out first; a borrower gets a copy, so one cache serves many runs.
"""

from __future__ import annotations

import copy
import threading
from collections import deque

from transformers import DynamicCache

PER_KEY = 3
"""Caches kept per model and route: the last few branches a grid's next point may share the most with."""


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def cache_bytes(cache: DynamicCache) -> int:
    """Bytes the cache's keys and values take (layers a route skips are empty)."""
    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if tensor is not None and hasattr(tensor, "numel"):
                total += tensor.numel() * tensor.element_size()
    return total


def _copy(cache: DynamicCache, length: int) -> DynamicCache:
    """The first `length` positions of every filled layer, in tensors of their own."""
    found = copy.copy(cache)
    found.layers = [copy.copy(layer) for layer in cache.layers]
    for layer in found.layers:
        if layer.get_seq_length() > 0:
            layer.keys, layer.values = layer.keys[..., :length, :].clone(), layer.values[..., :length, :].clone()
    return found


class KVPool:
    """(memo key) -> the last `PER_KEY` caches given back, each with the tokens it holds."""

    def __init__(self, max_bytes: int, per_key: int = PER_KEY) -> None:
        self.max_bytes = max_bytes
        self.per_key = per_key
        self._entries: deque[tuple[str, DynamicCache, list[int], int]] = deque()  # oldest first
        self._lock = threading.Lock()
        self.lent = 0  # caches lent so far (a test's count, as the memo's hits)

    def lend(self, key: str, tokens: list[int]) -> tuple[DynamicCache, list[int]] | None:
        """A copy of the cache of `key` sharing the longest prefix with `tokens`, cut to that prefix (None when none
        shares any): the cache stays, so the next grid point and words differing's reference both start from the
        run's."""
        with self._lock:
            best, shared = None, 0
            for entry in self._entries:
                if entry[0] == key and (n := common_prefix(entry[2], tokens)) > shared:
                    best, shared = entry, n
            if best is None:
                return None
            self._entries.remove(best)
            self._entries.append(best)  # the most recently useful goes out last
            self.lent += 1
        return _copy(best[1], shared), best[2][:shared]

    def give(self, key: str, cache: DynamicCache, tokens: list[int]) -> None:
        """Keep a finished scorer's cache (the oldest go first past `per_key` for its key or past `max_bytes`)."""
        size = cache_bytes(cache)
        if not tokens or size > self.max_bytes:
            return
        with self._lock:
            self._entries.append((key, cache, list(tokens), size))
            while sum(1 for e in self._entries if e[0] == key) > self.per_key:
                self._entries.remove(next(e for e in self._entries if e[0] == key))
            while sum(e[3] for e in self._entries) > self.max_bytes:
                self._entries.popleft()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(e[3] for e in self._entries)
