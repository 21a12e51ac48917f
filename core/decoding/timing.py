"""Wall-clock timing that is honest on a GPU: CUDA work is asynchronous, so synchronise first."""

from __future__ import annotations

import time

import torch


class Stopwatch:
    """Context manager measuring seconds. On a CUDA device it synchronises *that* device (not every
    GPU in the process) before reading the clock, so queued kernels are counted where they belong."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        device = torch.device(device)
        self.device = device if device.type == "cuda" else None
        self.seconds = 0.0

    def _sync(self) -> None:
        if self.device is not None:
            torch.cuda.synchronize(self.device)

    def __enter__(self) -> Stopwatch:
        self._sync()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sync()
        self.seconds = time.perf_counter() - self._start
