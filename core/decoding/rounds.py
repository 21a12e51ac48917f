"""What one round returns (`RoundResult`) and the one place it is written into the trace (`Output.apply`).

The round decides; it never moves the output. Positions, text pieces, the cut back after an audit
refusal and the audit states of the tokens it judged are all written here, once, in this order:
1. the round's tokens are appended as written (with their positions and text), those it kept on trust
   marked "trusted";
2. if its audit refused a token kept on trust, the output from that token on (earlier rounds' tokens and the
   round's own) moves to `Trace.rolled_back`, the refused token marked "refused", the rest "cut";
3. the full model's correction is appended in the refused token's place;
4. every token kept on trust that the audit let stand is marked "audited", all with this round's index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.decoding.adaptive import Waiting
from core.trace import RoundRecord, TokenRecord, Trace
from core.vocabulary import Audit


@dataclass(frozen=True)
class AuditResult:
    """What the full pass said of the tokens waiting on trust (`_Decoder._audit`): those it let stand and, at the
    first it refused, where the output is cut back and what the full model writes there instead."""

    audited: list[TokenRecord]
    cut_at: int | None = None  # output index of the refused token
    correction: TokenRecord | None = None  # the full model's own token in its place
    kept: int = 0  # this round's draft tokens before the refused one (they stand)
    rolled_back: int = 0  # earlier rounds' tokens cut

    @property
    def refused(self) -> bool:
        return self.cut_at is not None


@dataclass
class RoundResult:
    """One round's decisions: its record (draft, counts, calls), the tokens it wrote and what its audit did."""

    record: RoundRecord
    waiting: Waiting = field(default_factory=list)  # kept on trust, not yet audited: earlier rounds' and this one's
    tokens: list[TokenRecord] = field(default_factory=list)  # written in order, before any cut
    trusted: list[TokenRecord] = field(default_factory=list)  # this round's tokens kept on trust
    audited: list[TokenRecord] = field(default_factory=list)  # tokens kept on trust that the audit let stand
    cut_at: int | None = None  # output index of the token the audit refused: the output is cut back to it
    correction: TokenRecord | None = None  # the full model's token written in the refused token's place

    @property
    def refused(self) -> bool:
        return self.cut_at is not None

    def take_audit(self, audit: AuditResult) -> bool:
        """Record an audit of everything that waited (nothing waits after it); True if it refused a token, which
        ends the round: its counts become the tokens before the refused one and the correction."""
        self.waiting = []
        self.audited.extend(audit.audited)
        if audit.refused:
            self.cut_at, self.correction = audit.cut_at, audit.correction
            self.record.accepted, self.record.emitted = audit.kept, audit.kept + 1
            self.record.rolled_back = audit.rolled_back
        return audit.refused

    def keep_on_trust(self, position: int, record: TokenRecord) -> None:
        """Token `record` (at sequence `position`) was kept by tier 1 or 2 and waits for the full model's audit."""
        self.trusted.append(record)
        self.waiting.append((position, record))


class Output:
    """The growing output of one run: the trace's tokens, their ids after the prompt, and their text."""

    def __init__(self, trace: Trace, prompt_ids: list[int], tokenizer: object) -> None:
        self.trace, self.ids, self.text = trace, list(prompt_ids), _TextPieces(tokenizer)

    def apply(self, result: RoundResult) -> None:
        """Write one round's result into the trace (see the module docstring for the order)."""
        result.record.draft_texts = self.text.spell(result.record.draft_tokens)
        for record in result.tokens:
            self._append(record)
        for record in result.trusted:
            record.audit = Audit.TRUSTED.value
        if result.cut_at is not None:
            cut = self.trace.tokens[result.cut_at:]
            for record in cut:
                record.audit, record.audit_round = Audit.CUT.value, result.record.index
            cut[0].audit = Audit.REFUSED.value
            self.trace.rolled_back.extend(cut)
            del self.trace.tokens[result.cut_at:], self.ids[len(self.ids) - len(cut):]
            self.text.truncate(len(cut))
            self._append(result.correction)
        for record in result.audited:
            record.audit, record.audit_round = Audit.AUDITED.value, result.record.index
        self.trace.rounds.append(result.record)

    def _append(self, record: TokenRecord) -> None:
        record.position, record.text = len(self.trace.tokens), self.text.add(record.token_id)
        self.trace.tokens.append(record)
        self.ids.append(record.token_id)


class _TextPieces:
    """Decodes token by token without breaking multi-byte characters: piece = new suffix of the text."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.text = ""

    def truncate(self, count: int) -> None:
        """Forget the last `count` tokens (an audit cut them)."""
        self.ids = self.ids[:len(self.ids) - count]
        self.text = self.tokenizer.decode(self.ids, skip_special_tokens=False) if self.ids else ""
        if self.text.endswith("\ufffd"):
            self.text = self.text.rstrip("\ufffd")

    def spell(self, draft: list[int]) -> list[str]:
        """Each token of a draft that continues the text, as text (a draft is spelled before any of it is kept)."""
        context = self.ids[-4:]
        before, pieces = self.tokenizer.decode(context, skip_special_tokens=False) if context else "", []
        for k in range(len(draft)):
            text = self.tokenizer.decode(context + draft[:k + 1], skip_special_tokens=False).rstrip("\ufffd")
            pieces.append(text[len(before):])
            before = max(before, text, key=len)
        return pieces

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=False)
        if text.endswith("\ufffd"):
            return ""  # an incomplete UTF-8 sequence: the next token completes it
        piece, self.text = text[len(self.text):], text
        return piece
