"""A run's computed points as the page holds them, so a slider notch inside the grid is drawn in the browser.

The page gets, once per run, small tables (token text pieces, token kinds with their classes and tooltip
lines, the headline and legend with holes for their numbers) and then one short record per point: its
tokens as table indices with round and confidences, its headline numbers, legend counts, the why sentence
and the trade-off chart's numbers. `app/static/viasd.js` fills the holes: the text it draws is
`app.views.render.tokens_html` of the point's trace to the byte (tests/app/test_notch_browser.py), so a
notch shows exactly what a server re-route would. Points computed later stream as deltas against the same
tables (`PageGrid.payload(since=...)`).
"""

from __future__ import annotations

import html
import json
import threading
from collections import Counter
from dataclasses import dataclass

from app.grids import RunGrid
from app.views import words
from app.views.cards import contradiction, headline_from, headline_values, measured_here, measured_tag
from app.views.insight import why_html
from app.views.recording_line import source_line
from app.views.render import (
    OUTCOMES,
    REPLACED,
    TRUST,
    audit_counts,
    is_special,
    legend_from,
    outcome_class,
    trust_of,
    trusted_kind,
)
from core.analysis.metrics import summarize
from core.limits import MAX_SESSIONS
from core.round_policy import OFF
from core.trace import TokenRecord, Trace

HOLE = "@@{}@@"


def _hole(name: str) -> str:
    return HOLE.format(name)


def _confidence(value: float | None) -> int:
    """A confidence as the tooltip prints it (two decimals), as hundredths; -1 for none."""
    return -1 if value is None else round(float(f"{value:.2f}") * 100)


@dataclass(frozen=True)
class Cursor:
    """How much of a page grid a browser already holds."""

    grid: str
    points: int = 0
    texts: int = 0
    kinds: int = 0


class PageGrid:
    """One run grid encoded for the page; its tables only grow, so a delta is what was added since a cursor."""

    def __init__(self, grid: RunGrid) -> None:
        self.grid = grid
        self._lock = threading.Lock()
        self.texts: list[list[str]] = []
        self.kinds: list[list] = []
        self._index: dict[tuple, int] = {}
        self.points: dict[str, dict] = {}
        self.order: list[str] = []
        self._rows: dict[str, list[list]] = {}  # point key -> its token rows (what later points share a prefix of)
        self.trusted = trusted_kind(next(iter(grid.traces.values()))) if grid.traces else None

    def _text(self, t: TokenRecord) -> int:
        key = ("text", t.text)
        if key not in self._index:
            self._index[key] = len(self.texts)
            shown = "■ end" if is_special(t) else html.escape(t.text) or "&#8203;"
            self.texts.append([shown, repr(t.text)])
        return self._index[key]

    def _kind(self, t: TokenRecord) -> int:
        """Everything a token's span shares with others of its kind: classes, data attributes, tooltip lines."""
        trust, special = trust_of(t), is_special(t)
        key = ("kind", t.outcome, t.reason, t.verdict, t.tier, trust, special)
        if key not in self._index:
            self._index[key] = len(self.kinds)
            classes = " ".join(c for c in ("tok", outcome_class(t.outcome), "replaced" if t.outcome in REPLACED else "",
                                           "special" if special else "", "trusted" if trust else "",
                                           "awaiting" if trust == "awaiting" else "") if c)
            attrs = (f'data-tier="{t.tier}" data-outcome="{t.outcome}" data-reason="{t.reason}"'
                     + (f' data-trust="{trust}"' if trust else ""))
            middle = (f"{words.name('outcome', t.outcome)}: {words.meaning('reason', t.reason)}\n"
                      + (f"{TRUST[trust]}\n" if trust in TRUST else ""))
            details = f"details: outcome {t.outcome} · reason {t.reason}" + (f" · verdict {t.verdict}" if t.verdict
                                                                             else "")
            self.kinds.append([classes, attrs, middle, details])
        return self._index[key]

    def _tokens(self, key: str, trace: Trace) -> dict:
        """The point's token rows, as the longest prefix it shares with a point already encoded ("b": that
        point, "k": how many rows) and the rest ("t"): neighbouring points mostly differ only late in the text."""
        rows = [[self._text(t), t.round, self._kind(t), _confidence(t.draft_confidence),
                 _confidence(t.slim_confidence), _confidence(t.full_confidence)] for t in trace.tokens]
        best, shared = None, 0
        for other, their in self._rows.items():
            k = next((i for i, (x, y) in enumerate(zip(rows, their, strict=False)) if x != y), min(len(rows),
                                                                                                len(their)))
            if k > shared:
                best, shared = other, k
        self._rows[key] = rows
        return {"b": best, "k": shared, "t": rows[shared:]} if best is not None else {"t": rows}

    def _point(self, key: str, trace: Trace) -> dict:
        metrics = summarize(trace)
        counts = Counter(t.outcome for t in trace.tokens)
        speed, rejected, fidelity, _ = headline_values(metrics)
        speedup = metrics["modelled_speedup"]
        measured = measured_here(trace, self.grid.recorded)
        return {**self._tokens(key, trace), "stop": trace.stop_reason, "v": [speed, rejected, fidelity],
                "n": [None if speedup == float("inf") else round(speedup, 4),
                      None if trace.fidelity is None else round(trace.fidelity.words_differing, 4),
                      round(metrics["rejection_rate"], 4)],
                "c": [*(counts[o] for o in OUTCOMES), audit_counts(trace)[0], len(trace.rolled_back)],
                "why": why_html(trace), "h": measured_tag(trace, measured, self.grid.recorded is not None),
                "r": contradiction(metrics, trace, measured)}

    def _catch_up(self) -> None:
        for key, trace in self.grid.computed(len(self.order)):
            self.points[key] = self._point(key, trace)
            self.order.append(key)

    def first(self, count: int) -> list[str]:
        """The keys of the first `count` points in page order (what a page with that cursor holds)."""
        with self._lock:
            self._catch_up()
            return self.order[:count]

    def templates(self) -> dict[str, str]:
        headline = headline_from((_hole("speed"), _hole("rejected"), _hole("words"), "words_differing"),
                                 row=f'<div class="partial" title="{_hole("note")}">{_hole("row")}</div>',
                                 here=_hole("here"))
        headline = headline.replace('class="viasd-headline"', f'class="viasd-headline{_hole("classes")}"', 1)
        legend = legend_from({o: _hole(f"c{i}") for i, o in enumerate(OUTCOMES)}, _hole("standing"), _hole("cut"),
                             self.trusted)
        return {"headline": headline, "legend": legend}

    def payload(self, since: Cursor | None = None) -> tuple[dict, Cursor]:
        """Everything the page needs for this grid (`since` None), or what was added after `since`."""
        with self._lock:
            self._catch_up()
            start = since if since is not None and since.grid == self.grid.id else Cursor(self.grid.id)
            keys = self.order[start.points:]
            data = {"id": self.grid.id, "kind": "more" if start.points else "grid",
                    "texts_from": start.texts, "texts": self.texts[start.texts:],
                    "kinds_from": start.kinds, "kinds": self.kinds[start.kinds:],
                    "points": {k: self.points[k] for k in keys}, "order": keys,
                    "ready": len(self.order), "total": self.grid.total, "pace": round(self.grid.pace_s(), 2),
                    "ahead": self.grid.ahead}
            if not start.points:
                g = self.grid.grid
                data.update(axes={"a": list(g.tau_accept), "s": list(g.tau_slim), "g": list(g.gamma)},
                            base=self.order[0] if self.order else None, off=OFF, tpl=self.templates(),
                            source=source_line(self.grid), label=kind_of(self.grid),
                            recorded=self.grid.recorded is not None)
            return data, self._cursor()

    def cursor(self) -> Cursor:
        """Where a page holding all of this grid computed so far stands (no payload built)."""
        with self._lock:
            self._catch_up()
            return self._cursor()

    def _cursor(self) -> Cursor:
        return Cursor(self.grid.id, len(self.order), len(self.texts), len(self.kinds))


def kind_of(grid: RunGrid) -> str:
    """Which VIA-SD the sweep shows, read from its run's stamped policy: the paper's (tier 1 unaudited, so the
    thresholds trade fidelity for speed) or an exact one (what tier 1 keeps is audited by the full model)."""
    policy = next(iter(grid.traces.values())).policy if grid.traces else None
    if policy is None or policy.method != "via" or not policy.tier1_on:
        return ""
    if policy.audits:
        return "Exact: what tier 1 keeps is audited by the full model's next pass."
    return ("The paper's VIA-SD: tier 1 keeps drafts unchecked, trading fidelity for speed (exact: copy evidence "
            "\"audit\").")


_PAGE_LOCK = threading.Lock()  # one encoding per grid, however many visitors ask at once


def page_of(grid: RunGrid) -> PageGrid:
    """The one page encoding of `grid` (shared by every visitor). It is kept on the grid, so it goes when the grid
    store drops the grid: a table of encodings by grid id kept every grid a public app ever made (issue 23)."""
    with _PAGE_LOCK:
        if grid.page is None:
            grid.page = PageGrid(grid)
        return grid.page


def page_json(grid: RunGrid | None, since: Cursor | None = None, refresh: bool = False) -> tuple[str, Cursor | None]:
    """The page data as the hidden data component's value ("" for no grid) and the cursor it leaves; `refresh`: the
    whole grid for a page that holds it, drawn where its visitor looks (kind "refresh", not "grid")."""
    if grid is None:
        return "", None
    data, cursor = page_of(grid).payload(since)
    if refresh:
        data["kind"] = "refresh"
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False), cursor


class PageFeed:
    """What each browser session holds of which grid, so the timer sends only what is new."""

    MAX_SESSIONS = MAX_SESSIONS  # the sessions the app and Gradio keep: a forgotten one's page starts afresh

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cursors: dict[str, Cursor] = {}
        self._pages: dict[str, None] = {}  # sessions that are browser pages (an API client's session draws nothing)

    def full(self, session: str, grid: RunGrid | None, refresh: bool = False) -> str:
        """The whole grid for this session's page (it replaces whatever the page held; `refresh`: the same run's grid
        with new numbers, drawn where the visitor looks)."""
        text, cursor = page_json(grid, refresh=refresh)
        self._remember(session, cursor)
        return text

    def page_opened(self, session: str, grid: RunGrid | None) -> None:
        """A browser page of this session loaded, built holding the whole of `grid` (the opening screen, or
        None): from now on it draws the points it is sent itself."""
        with self._lock:
            self._pages[session] = None
            while len(self._pages) > self.MAX_SESSIONS:
                self._pages.pop(next(iter(self._pages)))
        self._remember(session, page_of(grid).cursor() if grid is not None else None)

    def _remember(self, session: str, cursor: Cursor | None) -> None:
        with self._lock:
            if cursor is None:
                self._cursors.pop(session, None)
            else:
                self._cursors[session] = cursor
                while len(self._cursors) > self.MAX_SESSIONS:
                    self._cursors.pop(next(iter(self._cursors)))

    def forget(self, session: str) -> None:
        """Drop what this session's page held (its tab closed: app.closed_tabs)."""
        with self._lock:
            self._pages.pop(session, None)
            self._cursors.pop(session, None)

    def is_page(self, session: str) -> bool:
        """Whether this session is a browser page (it polls; an API client reads a run's last update alone)."""
        with self._lock:
            return session in self._pages

    def holds(self, session: str, grid: RunGrid, point_key: str) -> bool:
        """Whether this session is a browser page that was sent `point_key` of `grid`, so it draws that point
        itself (an API client gets the grid's data too, but draws nothing)."""
        with self._lock:
            cursor = self._cursors.get(session) if session in self._pages else None
        return cursor is not None and cursor.grid == grid.id and point_key in page_of(grid).first(cursor.points)

    def __len__(self) -> int:
        """Sessions whose page holdings are remembered (at most MAX_SESSIONS)."""
        with self._lock:
            return len(self._cursors)

    def holds_grid(self, session: str, grid: RunGrid) -> bool:
        """Whether this session's page holds `grid` (then it needs only the points it lacks, never the whole again:
        a whole grid resets the page to the run's own point)."""
        with self._lock:
            cursor = self._cursors.get(session)
        return cursor is not None and cursor.grid == grid.id

    def more(self, session: str, grids: object) -> tuple[str | None, bool]:
        """(the points this session's page lacks as a delta, or None; whether more are still coming)."""
        with self._lock:
            cursor = self._cursors.get(session)
        grid = grids.by_id(cursor.grid) if cursor is not None else None
        if grid is None:
            return None, False
        coming = len(grid.traces) < grid.total
        if len(grid.traces) <= cursor.points:
            return None, coming
        text, after = page_json(grid, cursor)
        with self._lock:
            self._cursors[session] = after
        return text, len(grid.traces) < grid.total


FEED = PageFeed()
