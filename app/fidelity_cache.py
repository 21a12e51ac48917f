"""Fidelity measured once per answer, not once per slider move.

A re-route changes which tier decided each token, rarely the tokens themselves: under audited copies
the output is the full model's own on every threshold pair. Measuring fidelity again costs a greedy
reference (one memo lookup and an argmax over the vocabulary per token) and a teacher-forced pass —
most of the ~560 ms a re-route spent on the server (profiled with cProfile, `python -m app.tools.latency`).
Both depend only on the verifier, the prompt, the length cap and the output's token ids, so they are
kept here, keyed by exactly those, least recently used out first. The reference itself comes by the fastest exact
method (core.analysis.fast_reference): in float32, classic SD replaying what the run already computed.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict

from core import attach_fidelity
from core.analysis.fast_reference import classic_sd_twin, exact_arithmetic, exact_reference
from core.analysis.fidelity import measure_agreement
from core.analysis.plain_pace import PLAIN_PACES, Pace
from core.analysis.textdiff import word_diff
from core.models.loading import ModelBundle
from core.trace import Fidelity, Trace
from examples import expectations_for

MAX_ENTRIES = 256


class FidelityCache:
    """(verifier, prompt, cap, output ids) -> Fidelity; (verifier, prompt, cap) -> the greedy reference."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._lock = threading.Lock()
        self._fidelity: OrderedDict[tuple, Fidelity] = OrderedDict()
        self._reference: OrderedDict[tuple, list[int]] = OrderedDict()
        self.max_entries = max_entries
        self.hits = 0
        self._twins: OrderedDict[tuple, list[int]] = OrderedDict()  # answer key -> classic SD's tokens (bf16)

    @staticmethod
    def _answer_key(bundle: ModelBundle, trace: Trace) -> tuple:
        verifier = bundle.verifier
        return (verifier.name, str(getattr(verifier, "dtype", "")), trace.prompt,
                trace.config.chat_template, trace.config.max_new_tokens)

    @staticmethod
    def _twin_key(answer: tuple, trace: Trace) -> tuple:
        """Classic SD's twin depends on everything but the thresholds (its drafter, routes and γ among them)."""
        return (*answer, trace.config.with_(tau_accept=0.0, tau_slim=0.0))

    def _remember(self, table: OrderedDict, key: tuple, value: object) -> None:
        with self._lock:
            table[key] = value
            table.move_to_end(key)
            while len(table) > self.max_entries:
                table.popitem(last=False)

    def attach(self, bundle: ModelBundle, trace: Trace, agreement: bool = True) -> Fidelity:
        """`core.attach_fidelity`, answered from the cache when this answer was measured before. `agreement=False`
        leaves the teacher-forced pass out (a grid point before its line is on screen); a later call adds it."""
        answer = self._answer_key(bundle, trace)
        key = (*answer, tuple(trace.token_ids))
        with self._lock:
            found = self._fidelity.get(key)
            reference = self._reference.get(answer)
            if found is not None:
                self._fidelity.move_to_end(key)
                self.hits += 1
        if found is not None and agreement and found.full_agreement is None:
            found = copy.deepcopy(found)  # the cache's own copy, completed; the trace gets a copy of it below
            measure_agreement(bundle, found, trace)
            self._remember(self._fidelity, key, found)
        if found is not None:
            trace.fidelity = copy.deepcopy(found)
            return trace.fidelity
        if reference is None:
            started = time.perf_counter()
            found = exact_reference(bundle, trace)
            seconds = time.perf_counter() - started
            reference = found.tokens
            self._remember(self._reference, answer, reference)
            if found.plain and reference and seconds > 0:  # decoded plainly, every pass run: plain's own pace
                PLAIN_PACES.put(trace.models, Pace(seconds / len(reference), len(reference),
                                                   "the plain reference decode, its prompt's pass included"))
        fidelity = attach_fidelity(bundle, trace, reference, expectations=expectations_for(trace.prompt),
                                   agreement=agreement)
        with self._lock:
            twin = self._twins.get(self._twin_key(answer, trace))
        if twin is not None:  # numerics apart from tiers: classic SD's own distance from plain greedy
            tokenizer = bundle.verifier.tokenizer
            special = getattr(tokenizer, "all_special_tokens", ())
            fidelity.numerics_words = word_diff(tokenizer.decode(twin, skip_special_tokens=True),
                                                tokenizer.decode(reference, skip_special_tokens=True),
                                                special).words_differing
        self._remember(self._fidelity, key, copy.deepcopy(fidelity))
        return fidelity

    def tiers_first(self, bundle: ModelBundle, trace: Trace, agreement: bool = True) -> bool:
        """In reduced precision, where the plain reference costs a pass per token: attach first what the tiers
        changed, against the run's classic-SD twin (cheap: it replays what the run computed; `Fidelity.against`
        says so), and keep the twin so `attach` splits numerics from tiers. False (nothing attached) in exact
        arithmetic, for a run that is not VIA-SD, or when this answer's fidelity is known already. `agreement` as
        in `attach`."""
        answer = self._answer_key(bundle, trace)
        with self._lock:
            known = (*answer, tuple(trace.token_ids)) in self._fidelity or answer in self._reference
        if known or exact_arithmetic(bundle):
            return False
        with self._lock:
            twin = self._twins.get(self._twin_key(answer, trace))  # the points of one line share the run's twin
        if twin is None:
            twin = classic_sd_twin(bundle, trace)
        if twin is None:
            return False
        self._remember(self._twins, self._twin_key(answer, trace), twin)
        attach_fidelity(bundle, trace, twin, expectations=expectations_for(trace.prompt),
                        agreement=agreement).against = "classic SD"
        return True

    def __len__(self) -> int:
        """Answers and references held (each table is bounded by `max_entries`)."""
        with self._lock:
            return len(self._fidelity) + len(self._reference)

    def clear(self) -> None:
        with self._lock:
            self._fidelity.clear()
            self._reference.clear()
            self._twins.clear()


FIDELITY = FidelityCache()
