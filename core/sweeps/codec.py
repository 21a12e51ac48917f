"""A trace in a compact form and back: one short list per token, round and call, strings by table index.

A sweep holds about a hundred traces of one prompt, so the field names, the vocabularies (outcomes,
reasons, verdicts, audit states, roles) and the token text pieces are written once per file, and each
record is a list of numbers in `TOKEN_FIELDS` / `ROUND_FIELDS` / `CALL_FIELDS` order. Floats are rounded
(`PLACES`): confidences and costs to what a screen or a sum can tell apart, wall times to 0.1 ms. `decisions`
is what two runs must share to be the same run (everything but the wall clock, where predictions came from and
the fidelity measured afterwards).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from core.trace import CallRecord, Fidelity, RoundRecord, TokenRecord, Trace
from core.vocabulary import Audit, Outcome, Reason, Why

PLACES = {"confidence": 6, "cost": 9, "wall": 4}
VOCABULARIES: dict[str, list[str]] = {
    "outcome": [o.value for o in Outcome], "reason": [r.value for r in Reason], "verdict": [w.value for w in Why],
    "audit": [a.value for a in Audit], "role": ["drafter", "slim", "full"]}
"""Every code a record may hold, by table index (written into each file, so an old file reads as it was)."""
TOKEN_FIELDS = ("position", "token_id", "text", "round", "tier", "outcome", "reason", "verdict", "draft_confidence",
                "slim_confidence", "full_confidence", "audit", "audit_round")
ROUND_FIELDS = ("index", "draft_tokens", "accepted", "emitted", "rolled_back", "wall_s", "calls")
CALL_FIELDS = ("role", "tokens_processed", "layers", "cost_units", "wall_s", "from_memo", "prefill", "prefill_units")
RUN_FIELDS = ("prompt_token_count", "wall_s", "stop_reason", "plain_cost_units", "cost_profile", "cost_label",
              "prefill_units", "equals_full_greedy")


def _round(value: float | None, kind: str) -> float | None:
    return None if value is None else round(float(value), PLACES[kind])


class Writer:
    """Encodes the traces of one file, collecting the text pieces they use into one table."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._text_index: dict[str, int] = {}
        self._codes = {name: {code: i for i, code in enumerate(values)} for name, values in VOCABULARIES.items()}

    def _text(self, text: str) -> int:
        if text not in self._text_index:
            self._text_index[text] = len(self.texts)
            self.texts.append(text)
        return self._text_index[text]

    def token(self, t: TokenRecord) -> list:
        code = self._codes
        return [t.position, t.token_id, self._text(t.text), t.round, t.tier, code["outcome"][t.outcome],
                code["reason"][t.reason], code["verdict"][t.verdict], _round(t.draft_confidence, "confidence"),
                _round(t.slim_confidence, "confidence"), _round(t.full_confidence, "confidence"),
                code["audit"][t.audit], t.audit_round]

    def call(self, c: CallRecord) -> list:
        return [self._codes["role"][c.role], c.tokens_processed, c.layers, _round(c.cost_units, "cost"),
                _round(c.wall_s, "wall"), int(c.from_memo), int(c.prefill), _round(c.prefill_units, "cost")]

    def round(self, r: RoundRecord) -> list:
        return [r.index, list(r.draft_tokens), r.accepted, r.emitted, r.rolled_back, _round(r.wall_s, "wall"),
                [self.call(c) for c in r.calls]]

    def trace(self, trace: Trace) -> dict[str, Any]:
        """The run's records; the prompt, config and models are the file's, written once beside them."""
        run = {name: getattr(trace, name) for name in RUN_FIELDS}
        run["wall_s"] = _round(trace.wall_s, "wall")
        return {**run, "tokens": [self.token(t) for t in trace.tokens],
                "rolled_back": [self.token(t) for t in trace.rolled_back],
                "rounds": [self.round(r) for r in trace.rounds],
                "fidelity": asdict(trace.fidelity) if trace.fidelity is not None else None}


class Reader:
    """Decodes the traces of one file with that file's text table and vocabularies."""

    def __init__(self, texts: list[str], vocabularies: dict[str, list[str]]) -> None:
        self.texts, self.codes = texts, vocabularies

    def token(self, row: list) -> TokenRecord:
        values = dict(zip(TOKEN_FIELDS, row, strict=True))
        for name in ("outcome", "reason", "verdict", "audit"):
            values[name] = self.codes[name][values[name]]
        values["text"] = self.texts[values["text"]]
        return TokenRecord(**values)

    def call(self, row: list) -> CallRecord:
        values = dict(zip(CALL_FIELDS, row, strict=True))
        values.update(role=self.codes["role"][values["role"]], from_memo=bool(values["from_memo"]),
                      prefill=bool(values["prefill"]))
        return CallRecord(**values)

    def round(self, row: list) -> RoundRecord:
        values = dict(zip(ROUND_FIELDS, row, strict=True))
        values["calls"] = [self.call(c) for c in values["calls"]]
        return RoundRecord(**values)

    def trace(self, data: dict[str, Any], prompt: str, config: object, models: dict) -> Trace:
        tokens = [self.token(row) for row in data["tokens"]]
        rolled_back = [self.token(row) for row in data["rolled_back"]]
        fidelity = Fidelity.from_dict(data["fidelity"]) if data.get("fidelity") else None
        return Trace(prompt=prompt, config=config, models=dict(models), tokens=tokens, rolled_back=rolled_back,
                     rounds=[self.round(r) for r in data["rounds"]], fidelity=fidelity,
                     **{name: data[name] for name in RUN_FIELDS})


def decisions(trace: Trace) -> dict[str, Any]:
    """What makes two traces the same run: every token and round as decided, every call as priced, rounded as a
    file keeps them; not the wall clock, nor whether a prediction came from the memo."""
    writer = Writer()
    encoded = writer.trace(trace)
    wall = CALL_FIELDS.index("wall_s")
    for row in encoded["rounds"]:
        row[ROUND_FIELDS.index("wall_s")] = None
        for call in row[ROUND_FIELDS.index("calls")]:
            call[wall] = call[CALL_FIELDS.index("from_memo")] = None
    encoded["wall_s"] = None
    del encoded["fidelity"]  # measured afterwards, against a reference: compared apart
    texts = writer.texts
    for rows in (encoded["tokens"], encoded["rolled_back"]):
        for row in rows:
            row[2] = texts[row[2]]
    return encoded


def same_run(a: Trace, b: Trace, tolerance: float = 0.0) -> bool:
    """Whether two traces are the same run (`decisions`), confidences and costs within `tolerance`: in fp32 a
    memo row computed in another batch shape differs in its last bits (about 1e-6), never in a decision."""
    def close(x: Any, y: Any) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return abs(x - y) <= tolerance
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(close(u, v) for u, v in zip(x, y, strict=True))
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
        return x == y
    return close(decisions(a), decisions(b))
