"""The import graph points only down: vocabulary at the bottom, then settings, traces and models, then decoding,
then analysis, then the command-line tools and the examples' readers, then the app.

A module may import its own layer or any layer below it, never one above; within a layer there are no cycles.
Read from the source (ast), so the test needs no model and fails on the first import that points up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: list[tuple[str, ...]] = [
    ("core.errors", "core.vocabulary", "core.limits", "core.round_policy"),  # the vocabulary: value types and names
    ("core.config", "core.trace", "core.models"),  # settings, the trace format, loading and routing models
    ("core.decoding",),  # the engine: drafters, tiers, rounds, costs
    ("core.analysis",),  # metrics, fidelity, prediction, sweeps: they run the engine, the engine never calls them
    ("examples",),  # example prompts and walkthroughs: data, read by tools and the app only
    ("core.tools", "core"),  # command-line tools (`python -m core.tools.<name>`) and the `core` package's own CLI
    ("app",),  # the Gradio app
]


def layer_of(module: str) -> int:
    """The layer of a module: the longest matching prefix wins (core.decoding before core)."""
    best, depth = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    if best is None:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module the file imports, at any depth of the file (a function-level import counts too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def project_imports(path: Path) -> set[str]:
    return {n for n in imports(path) if n.split(".")[0] in ("core", "app", "examples")}


def graph() -> dict[str, set[str]]:
    files = [p for top in ("core", "app", "examples") for p in (ROOT / top).rglob("*.py")]
    return {module_name(p): project_imports(p) for p in files}


def test_every_import_points_down_or_sideways():
    upward = [f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
              for m, deps in sorted(graph().items()) for d in sorted(deps) if layer_of(d) > layer_of(m)]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_no_import_cycles():
    edges = graph()
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(edges.get(module, ())):
            if dep not in edges:
                continue
            if state.get(dep) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(dep):] + [dep]))
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])


def test_core_never_imports_the_ui():
    for path in (ROOT / "core").rglob("*.py"):
        tops = {n.split(".")[0] for n in imports(path)}
        assert not tops & {"app", "gradio"}, path


def test_the_layer_rule_catches_an_upward_import():
    assert layer_of("core.trace") < layer_of("core.decoding.engine") < layer_of("core.analysis.fidelity")
    assert layer_of("core.models.loading") < layer_of("core.decoding.scorer")
    assert layer_of("core.tools.cli") > layer_of("examples") > layer_of("core.analysis.tradeoffs")
