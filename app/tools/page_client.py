"""A browser tab's way of calling the app's events, for the events `gradio_client` cannot reach.

`gradio_client` calls the public endpoints only. A page also fires private events: on load it applies
a shared link's query string (`?prompt=...&run=1`) and then runs the chained event; the Classroom's
round slider replays a round from the session's state. The page's script does this over two plain
HTTP routes, and so does `Page`: POST `gradio_api/queue/join` (with the page's query string, which
is where `gr.Request.query_params` comes from) naming the event by its id in `/config`, then read
that event's messages from `gradio_api/queue/data` until `process_completed`. Component values are
kept as the page keeps them: each event's outputs update them, the next event sends them; a State
is kept on the server per session, so the page sends null for it. Like a browser tab, a `Page` holds
Gradio's heartbeat connection open while it lives and drops it on `close()`: that is how the app learns the
tab closed (its unload event, app/closed_tabs.py).
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
import uuid
from typing import Any

import httpx


class EventError(RuntimeError):
    """An event ended with Gradio's error message (the text a toast would show)."""


def _value(update: Any) -> Any:
    """The value an output sets: an update dict sets only what it names."""
    if isinstance(update, dict) and update.get("__type__") == "update":
        return update.get("value", _KEEP)
    return update


_KEEP = object()


class Page:
    """One browser tab: its own session, the app's config, and the values its components hold."""

    def __init__(self, url: str, query: str = "", timeout_s: float = 600.0) -> None:
        self.url = url if url.endswith("/") else url + "/"
        self.query = query.lstrip("?")
        self.session = uuid.uuid4().hex[:12]
        self.http = httpx.Client(timeout=timeout_s)
        self.http.get(self.url + (f"?{self.query}" if self.query else ""))  # the page itself, as a browser asks
        self.config = self.http.get(self.url + "config").json()
        self.components = {c["id"]: c for c in self.config["components"]}
        self.values: dict[int, Any] = {c["id"]: c.get("props", {}).get("value") for c in self.config["components"]}
        self.dependencies = {d["id"]: d for d in self.config["dependencies"]}
        self._heartbeat = self._open_heartbeat(timeout_s) if self.config.get("connect_heartbeat") else None

    def _open_heartbeat(self, timeout_s: float) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """The connection a browser tab keeps open to say it is still there (its first line is read: open)."""
        parts = urllib.parse.urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname, parts.port, timeout=timeout_s)
        connection.request("GET", f"{parts.path}gradio_api/heartbeat/{self.session}")
        response = connection.getresponse()
        response.readline()
        return connection, response

    def close(self) -> None:
        """Close the tab: the heartbeat connection ends (the app's unload event), then the page's client."""
        if self._heartbeat is not None:
            connection, response = self._heartbeat
            response.close()
            connection.close()
            self._heartbeat = None
        self.http.close()

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def element(self, elem_id: str) -> int:
        """A component's id from its elem_id."""
        return next(cid for cid, c in self.components.items() if c.get("props", {}).get("elem_id") == elem_id)

    def _stateful(self, component_id: int) -> bool:
        return self.components[component_id].get("type") == "state"

    def call(self, dependency: int, trigger: int | None = None) -> list[Any]:
        """Fire one event with the page's current input values; apply and return its outputs."""
        dep = self.dependencies[dependency]
        data = [None if self._stateful(i) else self.values.get(i) for i in dep["inputs"]]
        trigger = trigger if trigger is not None else (dep["targets"][0][0] if dep["targets"] else None)
        body = {"data": data, "fn_index": dependency, "session_hash": self.session, "event_data": None,
                "trigger_id": trigger}
        query = f"?{self.query}" if self.query else ""
        joined = self.http.post(self.url + "gradio_api/queue/join" + query, json=body)
        joined.raise_for_status()
        event = joined.json()["event_id"]
        outputs = self._wait(event)
        for component, update in zip(dep["outputs"], outputs, strict=False):
            value = _value(update)
            if value is not _KEEP and not self._stateful(component):
                self.values[component] = value
        return outputs

    def _wait(self, event: str) -> list[Any]:
        with self.http.stream("GET", self.url + "gradio_api/queue/data", params={"session_hash": self.session}) as s:
            for line in s.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") not in (None, event) or message.get("msg") != "process_completed":
                    continue
                output = message.get("output") or {}
                if not message.get("success", True):
                    raise EventError(str(output.get("error") or "the event failed"))
                return output.get("data") or []
        raise EventError("the event stream ended without a result")

    def load(self) -> list[tuple[int, list[Any]]]:
        """Fire the page-load events and every event chained after them with `.then`, as the page does;
        returns (event id, outputs) in the order they ran."""
        ran: list[tuple[int, list[Any]]] = []
        pending = [d["id"] for d in self.dependencies.values()
                   if any(t[1] == "load" for t in d.get("targets", [])) and d.get("backend_fn")]
        while pending:
            dependency = pending.pop(0)
            ran.append((dependency, self.call(dependency)))
            pending += [d["id"] for d in self.dependencies.values()
                        if d.get("trigger_after") == dependency and d.get("backend_fn")]
        return ran

    def file_text(self, file: Any) -> str:
        """The text of a file an event returned (downloaded through the app, as a browser does)."""
        url = file.get("url") if isinstance(file, dict) else None
        if not url:
            raise EventError(f"not a file: {str(file)[:80]}")
        return self.http.get(url).text
