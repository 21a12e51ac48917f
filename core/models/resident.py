"""Read every page of a CPU model's weights once at load, so resident memory is flat from then on.

`from_pretrained` maps a safetensors file. Where the stored dtype is the one asked for, it keeps the weights as
views of that mapping. A page of a mapped file becomes resident only when it is first read. The first forward
pass reads every layer, but it reads an embedding row only when that row's token first appears. So in the one-hour
soak, resident memory climbed for the whole hour and looked like a leak. The pair's two embedding tables are
0.7 GB, and they were read a row at a time as new tokens came (measured on SmolLM2: touching its table added
107 MB of file pages). One strided read at load makes them resident before the first visitor, at the cost of
about 0.1 s per 0.5 GB. After that, no request waits on a page read from disk either.

The pages stay the file's. The kernel may drop them under memory pressure and read them again later, as it may
for any mapped file. A copy into the process's own memory would pin them, but it took 3 s per 0.5 GB, and the
pair's resident set would not shrink under pressure.

A quantised drafter is the exception (`release_file`). Its bf16 layers were read to be quantised and then
replaced, but their pages stay resident for as long as any tensor still views the file, and the embedding does.
Copying what is left (0.5 GB of the 0.5B, in 0.4 s) lets the file go: the pair then held 0.96 GB less
(5784 -> 4819 MB resident, measured 2026-12-03 with the int4 drafter).
"""

from __future__ import annotations

import torch

PAGE = 4096
"""Bytes a page holds on the machines here: reading one element per page maps the page in."""


def _cpu_tensors(model: torch.nn.Module) -> list[torch.Tensor]:
    """Every non-empty parameter and buffer on the CPU: other devices are left alone, since moving a model to a
    GPU already copies it."""
    return [t for t in [*model.parameters(), *model.buffers()] if t.device.type == "cpu" and t.numel()]


def make_resident(model: torch.nn.Module) -> int:
    """Read one element of every page of every CPU parameter and buffer; returns the bytes covered."""
    tensors = _cpu_tensors(model)
    with torch.no_grad():
        for tensor in tensors:
            tensor.detach().reshape(-1)[:: max(1, PAGE // tensor.element_size())].sum()
    return sum(t.numel() * t.element_size() for t in tensors)


def release_file(model: torch.nn.Module) -> int:
    """Copy every CPU parameter and buffer into this process's own memory, so no tensor views the file it was
    loaded from and the file's resident pages go with its mapping; returns the bytes copied. One tensor at a time
    (the peak grows by the largest); tied weights are one Parameter, so they stay tied."""
    tensors = _cpu_tensors(model)
    with torch.no_grad():
        for tensor in tensors:
            tensor.data = tensor.data.clone()
    return sum(t.numel() * t.element_size() for t in tensors)
