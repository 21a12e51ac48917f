"""Hostile input against every public endpoint of the launched app, typed from the app's own API description.

Each endpoint's parameters are read from `Client.view_api(return_format="dict")`, so the fuzzer follows
the app when its widgets change. One parameter at a time gets a hostile value of its declared type (the
others stay at short, valid settings). Each call must return a value or a Gradio error whose message is
one readable line, never a traceback or an "internal error"; and afterwards the app must still answer
a normal /generate. Two answers belong to Gradio, not the app, and are counted apart: a value of the
wrong JSON type for a slider (None, "abc") fails inside Gradio's own preprocessing with its generic
"has not enabled verbose error reporting" notice, and Gradio's "not in the list of choices" message
echoes the value it refused, however long. Gradio's notice for a *well-typed* value is a failure: then
it was the app's own code that raised. The quick form (CI) sends one hostile value
per parameter; VIASD_FUZZ_FULL=1 sends every value of the type (the README's numbers).
"""

from __future__ import annotations

import math
import os

import pytest
from app_fixtures import app_client_fixture, app_url_fixture  # noqa: F401  (fixtures)

from app.tools.load_test import call_kwargs, find_trace

pytestmark = pytest.mark.embedded

FULL = os.environ.get("VIASD_FUZZ_FULL") == "1"

LONG = "x" * 100_000
HOSTILE = {
    "str": ["", LONG, "\x00\x1b[2J\u202eevil\u202c", "\ud800", "שלום مرحبا 🙂" * 200, "<script>alert(1)</script>",
            "../../../etc/passwd", None, "{{7*7}}\n<|im_end|>"],
    "choice": ["bogus", "", "\u202e", LONG, None],
    "float": [math.nan, math.inf, -math.inf, -1e308, 1e308, 2**70, -1, None, "abc"],
    "int": [2**70, -(2**70), math.nan, 1.5, -1, None, "abc"],
    "bool": [None, "yes", 2],
    "other": [None, LONG, -1],
}
SAFE = {"prompt": "Name a colour.", "max_new_tokens": 4, "gamma": 2, "mode": "via", "values_text": "0.5, 1",
        "verifier": "", "drafter_id": "", "real_timing": False, "sampling": False}
UNHANDLED = "has not enabled verbose error reporting"
GRADIO_CHOICE_ERROR = "is not in the list of choices"


def kind_of(parameter: dict) -> str:
    declared = parameter["python_type"]["type"]
    if declared.startswith("Literal["):
        return "choice"
    return declared if declared in HOSTILE else "other"


def cases(api: dict) -> list[tuple[str, str, object]]:
    """(endpoint, parameter, hostile value) triples: all of them, or one per parameter (rotating)."""
    triples = []
    for endpoint, info in sorted(api["named_endpoints"].items()):
        for i, parameter in enumerate(info["parameters"]):
            values = HOSTILE[kind_of(parameter)]
            for value in values if FULL else [values[i % len(values)]]:
                triples.append((endpoint, parameter["parameter_name"], value))
        if not info["parameters"]:
            triples.append((endpoint, "", None))
    return triples


def wrong_json_type(kind: str, value: object) -> bool:
    """A value Gradio's own preprocessing refuses before any app code runs."""
    if kind in ("float", "int"):
        return value is None or isinstance(value, str)
    return kind == "bool" and not isinstance(value, bool)


def problem(text: str, refused_by_gradio: bool = False) -> str:
    """Why an answer is not one readable line from the app ('' when it is)."""
    if UNHANDLED in text and not refused_by_gradio:
        return "an unhandled exception in the app (Gradio's generic notice for a well-typed value)"
    if "Traceback" in text or "internal error" in text:
        return f"untyped error: {text[:200]}"
    return ""


def test_every_endpoint_survives_hostile_input(app_client: object) -> None:
    api = app_client.view_api(return_format="dict", print_info=False)
    assert {"/generate", "/reroute", "/compare", "/grid", "/load_models", "/walkthrough", "/stop"} <= \
        set(api["named_endpoints"]), "an endpoint the fuzzer should reach is missing"
    outcomes = {"returned": 0, "one-line error": 0, "refused by Gradio": 0}
    failures = []
    for endpoint, name, value in cases(api):
        parameters = api["named_endpoints"][endpoint]["parameters"]
        kind = next((kind_of(p) for p in parameters if p["parameter_name"] == name), "other")
        safe = {p["parameter_name"]: SAFE[p["parameter_name"]] for p in parameters if p["parameter_name"] in SAFE}
        kwargs = call_kwargs(parameters, {**safe, name: value} if name else safe)
        where = f"{endpoint} {name}={str(value)[:30]!r}"
        try:
            result = app_client.predict(api_name=endpoint, **kwargs)
        except Exception as exc:  # noqa: BLE001  (gradio_client raises AppError or ValueError for errors)
            message = str(exc).strip()
            by_gradio = (UNHANDLED in message and wrong_json_type(kind, value)) or GRADIO_CHOICE_ERROR in message
            outcomes["refused by Gradio" if by_gradio else "one-line error"] += 1
            if problem(message, by_gradio):
                failures.append(f"{where}: {problem(message, by_gradio)}")
            elif not by_gradio and (not message or "\n" in message or len(message) > 500):
                failures.append(f"{where}: not one short line: {message[:200]!r}")
            continue
        outcomes["returned"] += 1
        for text in result if isinstance(result, (tuple, list)) else [result]:
            if isinstance(text, str) and problem(text):
                failures.append(f"{where}: {problem(text)}")
    print(f"{sum(outcomes.values())} hostile calls: {outcomes}; {len(failures)} failed")
    normal = app_client.predict(api_name="/generate", **call_kwargs(api["named_endpoints"]["/generate"]["parameters"],
                                                                    {"prompt": "Name a fruit.", "max_new_tokens": 4}))
    trace = find_trace(normal)
    assert trace is not None and trace["prompt"] == "Name a fruit." and trace["tokens"], "the app stopped answering"
    assert not failures, "\n".join(failures)
