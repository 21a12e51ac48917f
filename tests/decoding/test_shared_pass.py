"""Grid points computed together (core.sweeps.together over core.decoding.shared_pass) on tiny random models.

The runs share their passes, never their decisions: every run computed together must be the run computed alone,
decision for decision (float64, so batching cannot even move a last bit into an argmax), passes must really be
shared (fewer model calls, batches wider than one), a text two runs both reach is computed once, and a stop
request ends every run cancelled.
"""

import pytest
import torch
from tiny import tiny_bundle

from core import DecodeConfig, generate
from core.decoding.shared_pass import SharedCache, can_share
from core.models.loading import ModelBundle
from core.sweeps.codec import same_run
from core.sweeps.together import generate_together

PROMPT = "the cat sat on the mat. the cat sat on the"
BASE = DecodeConfig(max_new_tokens=32, gamma=4, chat_template=False, draft_route="skip-middle-50",
                    slim_route="skip-middle-25")
POINTS = ((0.9, 1.0), (0.6, 1.0), (0.4, 1.0), (0.3, 0.3), (0.7, 0.5), (1.0, 1.0))
LINE = [BASE.with_(tau_accept=a, tau_slim=s) for a, s in POINTS]
PAIR_LINE = [c.with_(drafter="model") for c in LINE]  # the separate drafter drafts


def _bundle(family: str, drafter: bool) -> ModelBundle:
    made = tiny_bundle(family, layers=6, drafter_layers=3 if drafter else None, middle_scale=0.1, avoid_eos=True)
    for part in (made.verifier, made.drafter):
        if part is not None:
            part.model.double()
    return made


def _fresh(bundle: ModelBundle) -> ModelBundle:
    """The same models with an empty memo: every prediction computed for real."""
    return ModelBundle(verifier=bundle.verifier, drafter=bundle.drafter)


class _Calls:
    """Counts a model's forward calls and the runs the widest of them served."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.count, self.widest = 0, 0
        self.handle = model.register_forward_pre_hook(self._seen, with_kwargs=True)

    def _seen(self, _module: object, _args: tuple, kwargs: dict) -> None:
        self.count += 1
        cache = kwargs.get("cache")
        self.widest = max(self.widest, len(cache.runs) if isinstance(cache, SharedCache) else 1)


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "mistral"])
@pytest.mark.parametrize("drafter", [False, True], ids=["self-drafter", "separate-drafter"])
def test_runs_together_are_the_runs_alone(family: str, drafter: bool) -> None:
    bundle = _bundle(family, drafter)
    assert can_share(bundle.verifier.model)
    line = PAIR_LINE if drafter else LINE
    alone = [generate(_fresh(bundle), PROMPT, c) for c in line]
    calls = _Calls((bundle.drafter or bundle.verifier).model)
    together = generate_together(_fresh(bundle), PROMPT, line)
    calls.handle.remove()
    for a, b in zip(alone, together, strict=True):
        assert same_run(a, b, tolerance=1e-9), (a.config.tau_accept, a.text, b.text)
    assert len({t.text for t in alone}) > 1  # the points differ: each run was its own branch
    assert calls.widest > 1  # the passes were shared


def test_sharing_saves_passes_and_a_common_text_is_computed_once() -> None:
    bundle = _bundle("llama", drafter=True)
    alone = _Calls(bundle.drafter.model)
    for config in PAIR_LINE:
        generate(_fresh(bundle), PROMPT, config, replay=False)
    alone.handle.remove()
    together = _Calls(bundle.drafter.model)
    generate_together(_fresh(bundle), PROMPT, PAIR_LINE)
    together.handle.remove()
    assert together.count < alone.count / 2

    once = _Calls(bundle.drafter.model)
    generate(_fresh(bundle), PROMPT, PAIR_LINE[0])
    once.handle.remove()
    twice = _Calls(bundle.drafter.model)
    pair = generate_together(_fresh(bundle), PROMPT, [PAIR_LINE[0], PAIR_LINE[0]])
    twice.handle.remove()
    assert twice.count == once.count and twice.widest == 1  # the same text asked twice: one pass each time
    assert pair[0].text == pair[1].text


def test_a_family_not_checked_runs_its_passes_one_by_one() -> None:
    sliding = tiny_bundle("qwen2", layers=4, sliding_window=8).verifier.model
    sliding.config.layer_types = ["full_attention", "sliding_attention"] * 2
    assert not can_share(sliding), "a sliding window's mask is not built for a shared pass"
    assert not can_share(tiny_bundle("mistral", layers=4, sliding_window=8).verifier.model)
    bundle = _bundle("gemma3_text", drafter=False)
    assert not can_share(bundle.verifier.model)
    calls = _Calls(bundle.verifier.model)
    together = generate_together(_fresh(bundle), PROMPT, LINE[:3])
    calls.handle.remove()
    assert calls.widest == 1
    for config, trace in zip(LINE[:3], together, strict=True):
        assert same_run(generate(_fresh(bundle), PROMPT, config), trace, tolerance=1e-9)


def test_a_stop_request_ends_the_unfinished_runs_and_each_finished_run_is_heard() -> None:
    bundle = _bundle("llama", drafter=True)
    heard = []
    asked = iter(range(10_000))
    traces = generate_together(_fresh(bundle), PROMPT, LINE, should_stop=lambda: next(asked) > 3,
                               on_trace=lambda i, t: heard.append(i))
    assert traces.count(None) >= 1 and heard == [i for i, t in enumerate(traces) if t is not None]
    everything = generate_together(_fresh(bundle), PROMPT, LINE, on_trace=lambda i, t: heard.append(i))
    assert None not in everything and sorted(heard[-len(LINE):]) == list(range(len(LINE)))


class _Rows:
    """Counts the token rows a model's forward calls process."""

    def __init__(self, *models: torch.nn.Module) -> None:
        self.rows = 0
        self.handles = [m.register_forward_pre_hook(self._seen, with_kwargs=True) for m in models]

    def _seen(self, _module: object, _args: tuple, kwargs: dict) -> None:
        self.rows += kwargs["input_ids"].shape[1]


def _stopped_then_again(release: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list]:
    from core.sweeps import together

    bundle = _fresh(_bundle("llama", drafter=True))
    if not release:
        monkeypatch.setattr(together._Hub, "end", lambda self, run: run.throw(together.greenlet.GreenletExit))
    asked = iter(range(10_000))
    assert generate_together(bundle, PROMPT, PAIR_LINE[1:3], should_stop=lambda: next(asked) > 6) == [None, None]
    monkeypatch.undo()
    rows = _Rows(bundle.verifier.model, bundle.drafter.model)
    again = generate_together(bundle, PROMPT, PAIR_LINE[1:3])
    for handle in rows.handles:
        handle.remove()
    return rows.rows, again


def test_a_stopped_run_leaves_its_caches_so_computing_it_again_reads_only_what_it_had_not(monkeypatch) -> None:
    kept, again = _stopped_then_again(True, monkeypatch)
    lost, _ = _stopped_then_again(False, monkeypatch)
    assert kept < lost, (kept, lost)
    bundle = _bundle("llama", drafter=True)
    for config, trace in zip(PAIR_LINE[1:3], again, strict=True):
        assert same_run(generate(_fresh(bundle), PROMPT, config), trace, tolerance=1e-9)
