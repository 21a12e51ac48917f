"""Per-prefix memo of model predictions, so changing thresholds re-routes instead of re-computing.

A prediction (next-token logits) depends only on the model, its route and the exact token prefix,
never on thresholds. Replaying a run under new thresholds therefore only runs the model for
prefixes it has never seen. Entries are exact copies in the dtype the model computed them in (a bf16
model's logits stay bf16: half the bytes of fp32, bit-identical once upcast), so a replay decides
exactly as a real run would. Bounded by bytes, least recently used out first; shared by all users of a model bundle.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import weakref
from collections import OrderedDict

import torch

from core.limits import MEMO_BYTES
from core.models.kv_pool import KVPool

_TAGS: weakref.WeakKeyDictionary[torch.nn.Module, int] = weakref.WeakKeyDictionary()
_NEXT_TAG = itertools.count(1)
_TAGS_LOCK = threading.Lock()


def weights_tag(model: torch.nn.Module) -> int:
    """A number that is this model object's for life (a copy gets its own): two loads of one name are two tags,
    so one memo may serve many bundles (the app keeps one for the whole process) and never hands one model's
    rows to another."""
    with _TAGS_LOCK:
        if model not in _TAGS:
            _TAGS[model] = next(_NEXT_TAG)
        return _TAGS[model]


def memo_key(model_name: str, model: torch.nn.Module, route: object) -> str:
    """The one spelling of "this model, at this precision, under this route": predictions are shared
    exactly between scorers with the same key. Every field of the route but its display name counts."""
    fields = tuple(getattr(route, f.name) for f in dataclasses.fields(route) if f.name != "name")
    dtype = next(model.parameters()).dtype
    return f"{model_name}#{weights_tag(model)}|{dtype}|{fields}"


class PredictionMemo:
    """LRU map from (scorer key, prefix) to next-token logits."""

    def __init__(self, max_bytes: int = MEMO_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.caches = KVPool(max_bytes // 4)  # the KV caches of finished runs, a quarter of the budget more

    def get(self, key: str, prefix: tuple[int, ...]) -> torch.Tensor | None:
        with self._lock:
            found = self._entries.get((key, prefix))
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end((key, prefix))
            self.hits += 1
            return found

    def put_rows(self, key: str, prefixes: list[tuple[int, ...]], logits: torch.Tensor) -> None:
        """Store one row of `logits` ([len(prefixes), vocab], any device, any dtype) per prefix on the host, in
        the dtype given (a 151,936-token vocabulary row is 297 KiB in bf16, 594 KiB in fp32: the pair's
        neighbouring threshold pairs fit the budget only in its own dtype). One device-to-host copy per block."""
        rows = [row.clone() for row in logits.detach().to("cpu").unbind(0)]
        with self._lock:
            for prefix, entry in zip(prefixes, rows, strict=True):
                old = self._entries.pop((key, prefix), None)
                if old is not None:
                    self._bytes -= old.numel() * old.element_size()
                self._entries[(key, prefix)] = entry
                self._bytes += entry.numel() * entry.element_size()
            while self._bytes > self.max_bytes and self._entries:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.numel() * dropped.element_size()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
        self.caches.clear()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """Bytes of logits held now (at most `max_bytes`)."""
        return self._bytes
