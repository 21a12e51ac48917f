"""The Space's conditions: the front matter's Python is the one the tests run on, and the app generates.

A Space runs the Python named by `python_version` in the README front matter (3.10 when absent). CI
runs this suite on one interpreter; this test fails when the two disagree, and then runs one short
generation through the launched app. The code also stays 3.10-clean (ruff targets py310); the
pure-stdlib vocabulary module is imported under Python 3.10 when that interpreter is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from app_fixtures import PROMPT, SETTINGS, app_client_fixture, app_url_fixture  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


def front_matter() -> dict[str, str]:
    """The README's YAML front matter as flat key -> value strings (quotes removed)."""
    text = (ROOT / "README.md").read_text()
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md must start with Space front matter between --- lines"
    pairs = (line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    return {key.strip(): value.strip().strip("'\"") for key, value in pairs}


def test_front_matter_names_the_python_the_tests_run_on() -> None:
    meta = front_matter()
    assert "python_version" in meta, "without python_version a Space runs Python 3.10"
    assert meta["python_version"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert meta["app_file"] == "app.py" and (ROOT / meta["app_file"]).exists()
    import gradio

    assert meta["sdk_version"] == gradio.__version__


def _python310() -> str | None:
    """A working Python 3.10 (PATH, or a pyenv install whose shim is not active)."""
    installed = sorted(Path.home().glob(".pyenv/versions/3.10*/bin/python3.10"))
    candidates = [shutil.which("python3.10"), *map(str, installed)]
    for candidate in filter(None, candidates):
        try:
            if subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 10)"],
                              capture_output=True, timeout=30).returncode == 0:
                return candidate
        except OSError:
            continue
    return None


def test_tier_vocabulary_imports_on_python_3_10() -> None:
    python310 = _python310()
    if python310 is None:
        pytest.skip("no working python3.10")
    code = ("import importlib.util as u, sys, types; sys.modules['core'] = types.ModuleType('core')\n"  # no torch
            "def load(name):\n"
            "    s = u.spec_from_file_location(name, name.replace('.', '/') + '.py')\n"
            "    m = sys.modules[name] = u.module_from_spec(s); s.loader.exec_module(m); return m\n"
            "load('core.errors'); v = load('core.vocabulary'); print(v.Reason.FREE_VERDICT, v.Outcome.PLAIN)")
    done = subprocess.run([python310, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["free-verdict", "plain"]


@pytest.mark.embedded
def test_the_app_imports_and_generates_under_this_python(app_client: object) -> None:
    result = app_client.predict(PROMPT, *SETTINGS[:4], 2, 4, *SETTINGS[6:], api_name="/generate")
    assert "Done" in result[1] and 'data-outcome="' in result[0]
