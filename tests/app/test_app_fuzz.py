"""Hostile input against every public endpoint of the launched app, typed from the app's own API description.

Each endpoint's parameters are read from `Client.view_api(return_format="dict")`, so the fuzzer follows
the app when its widgets change. One parameter at a time gets a hostile value of its declared type (the
others stay at short, valid settings). Each call must return a value or a Gradio error whose message is
one readable line, never a traceback or an "internal error"; and afterwards the app must still answer
a normal /generate. The values and what counts as Gradio's own refusal live in app/tools/hostile.py
(the soak sends them too). The quick form (CI) sends one hostile value per parameter;
VIASD_FUZZ_FULL=1 sends every value of the type (the README's numbers).
"""

from __future__ import annotations

import os

import pytest
from app_fixtures import app_client_fixture, app_url_fixture  # noqa: F401  (fixtures)

from app.tools.hostile import (
    GRADIO_CHOICE_ERROR,
    HOSTILE,
    SAFE,
    UNHANDLED,
    error_problem,
    kind_of,
    problem,
    wrong_json_type,
)
from app.tools.load_test import call_kwargs, find_trace

pytestmark = pytest.mark.embedded

FULL = os.environ.get("VIASD_FUZZ_FULL") == "1"


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
            if error_problem(message, kind, value):
                failures.append(f"{where}: {error_problem(message, kind, value)}")
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
