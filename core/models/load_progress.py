"""Progress through transformers' own weight loading, tensor by tensor, for the load stage's progress bar.

`from_pretrained` loads the converted weights one tensor at a time behind a tqdm bar ("Loading weights", about
300 tensors for the Qwen pair's models); with no hook the app's bar sat at 0 % for the whole 20-second load.
`weights_progress(report)` routes that bar to `report(done, total)` while the block runs (transformers'
`set_tqdm_hook`; other bars pass through unchanged).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from transformers.utils import logging as hf_logging

WEIGHTS_BAR = "Loading weights"
_lock = threading.Lock()


class _Reported:
    """A stand-in for the weights bar: iterates what the bar wraps and reports each step."""

    def __init__(self, iterable: Any, total: int | None, report: Callable[[int, int], None]) -> None:
        self.iterable, self.report, self.n = iterable, report, 0
        self.total = total if total is not None else len(iterable) if hasattr(iterable, "__len__") else 0

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable:
            yield item
            self.update(1)

    def update(self, n: int = 1) -> None:
        self.n += n or 1
        self.report(self.n, max(self.total, self.n))

    def close(self) -> None:
        pass

    def __enter__(self) -> _Reported:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:  # set_postfix, refresh, ...: nothing to draw
        return lambda *args, **kwargs: None


@contextlib.contextmanager
def weights_progress(report: Callable[[int, int], None]) -> Iterator[None]:
    """Inside the block, transformers' weight-loading bar calls `report(tensors loaded, tensors in all)`."""
    def hook(factory: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if kwargs.get("desc") == WEIGHTS_BAR:
            return _Reported(args[0] if args else kwargs.get("iterable", ()), kwargs.get("total"), report)
        return factory(*args, **kwargs)

    with _lock:  # one load at a time owns the hook
        previous = hf_logging.set_tqdm_hook(hook)
        try:
            yield
        finally:
            hf_logging.set_tqdm_hook(previous)
