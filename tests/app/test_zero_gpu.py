"""The ZeroGPU path with the real `spaces` package (requirements-dev.txt pins it; it needs no torch of its own).

Off a Space (`SPACES_ZERO_GPU` unset) `spaces.GPU` hands the function back unchanged, so the app's model
jobs run as they are; on a Space it asks for a lease of `duration(*job_args)` seconds. Both halves are
exercised here: the package's decorator on the app's real jobs, and each job's duration called the way
`spaces.zero.wrappers.static_duration` calls it (`duration(*args, **kwargs)` with the job's own arguments;
that module imports CUDA torch, so it cannot load here), so a duration function whose signature drifted
from its job fails here and not on the Space.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import spaces

from app import gpu
from app.settings import Settings
from app.tabs import classroom, compare, generate


def test_the_real_package_is_found_and_its_decorator_is_a_no_op_off_a_space() -> None:
    assert "SPACES_ZERO_GPU" not in os.environ, "this test describes a run off a Space"
    assert gpu.zero_gpu_available() and "site-packages" in Path(spaces.__file__).parts
    calls = []

    def job(settings: Settings) -> str:
        calls.append(settings)
        return "ran"

    def stream(settings: Settings):
        yield "a"
        yield "b"

    wrapped = gpu.on_gpu(gpu.settings_seconds)(job)
    assert wrapped is job and wrapped(Settings()) == "ran" and len(calls) == 1
    streamed = gpu.on_gpu(gpu.settings_seconds)(stream)
    assert inspect.isgeneratorfunction(streamed) and list(streamed(Settings())) == ["a", "b"]


def test_the_apps_model_jobs_are_plain_callables_off_a_space() -> None:
    for job in (generate._run, generate._reroute, compare._compare, classroom._run_walkthrough, classroom._run_fix):
        assert callable(job) and not hasattr(job, "zerogpu"), f"{job} was wrapped for a GPU lease off a Space"
    assert inspect.isgeneratorfunction(inspect.unwrap(compare._compare))


def _lease(job, duration, *args) -> float:
    """Seconds a Space would lease for `job(*args)`: the arguments must fit the job, then `duration(*args)`."""
    inspect.signature(inspect.unwrap(job)).bind(*args)
    return float(duration(*args))


def test_each_jobs_duration_resolves_on_its_own_arguments() -> None:
    settings = Settings(max_new_tokens=64)
    walkthrough = next(iter(classroom._walkthroughs()))
    asks = {
        "generate": _lease(generate._run, gpu.settings_seconds, settings, "session", True),
        "reroute": _lease(generate._reroute, gpu.settings_seconds, settings, "session", None, None),
        "compare": _lease(compare._compare, gpu.compare_seconds, settings, "session", True),
        "walkthrough": _lease(classroom._run_walkthrough, classroom._walkthrough_seconds, walkthrough, "session"),
        "fix": _lease(classroom._run_fix, classroom._walkthrough_seconds, walkthrough, "session"),
    }
    for name, seconds in asks.items():
        assert gpu.BASE_SECONDS <= seconds <= gpu.MAX_SECONDS, (name, seconds)
    assert asks["compare"] > asks["generate"]  # three modes ask for more than one
