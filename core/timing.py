"""Wall-clock timing that is honest on a GPU: CUDA work is asynchronous, so synchronise first."""

from __future__ import annotations

import time

import torch


class Stopwatch:
    """Context manager measuring seconds; on CUDA it synchronises before reading the clock."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.cuda = torch.device(device).type == "cuda"
        self.seconds = 0.0

    def __enter__(self) -> Stopwatch:
        if self.cuda:
            torch.cuda.synchronize()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self._start
