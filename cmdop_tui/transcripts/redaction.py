"""Secret redaction on the way to disk, aware of the record shapes.

Every record is redacted (`cmdop_tui.support.secrets`) before it is written, so a resumed session
sees ``[REDACTED]`` where a secret was. A ``thinking`` block whose text would change under
redaction is dropped rather than stored with a signature that no longer matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cmdop_tui.agent.messages import OperationRecord, blocks_of, is_thinking
from cmdop_tui.support.secrets import Redactor
from cmdop_tui.transcripts.records import ROLES, json_default

_RECORD_LIMIT = 200  # characters of a malformed record quoted in its error


@dataclass(frozen=True)
class RecordRedactor:
    """Redacts transcript records with one `Redactor` (the patterns plus its literal secrets)."""

    redactor: Redactor

    def record(self, record: Mapping[str, Any]) -> OperationRecord | None:
        """The record to store; None for an append left with no blocks (nothing to replay).

        Raises ValueError for a record without a string ``op`` or a malformed append/replace.
        """
        op = record.get("op") if isinstance(record, Mapping) else None
        if not isinstance(op, str) or not op:
            raise ValueError(f"a transcript record needs an 'op': {record!r:.{_RECORD_LIMIT}}")
        if op == "append":
            return self._append(record)
        if op == "replace":
            return self._replace(record)
        return {"op": op, **self._json({k: v for k, v in record.items() if k != "op"})}

    def _append(self, record: Mapping[str, Any]) -> OperationRecord | None:
        role, blocks = record.get("role"), record.get("blocks")
        if role not in ROLES or not isinstance(blocks, list):
            raise ValueError(f"malformed append record: {record!r:.{_RECORD_LIMIT}}")
        kept = self._blocks(blocks)
        if not kept:
            return None
        extra = {k: self._json(v) for k, v in record.items() if k not in ("op", "role", "blocks")}
        return {"op": "append", "role": role, "blocks": kept, **extra}

    def _replace(self, record: Mapping[str, Any]) -> OperationRecord:
        messages = record.get("messages")
        if not isinstance(messages, list):
            raise ValueError(f"malformed replace record: {record!r:.{_RECORD_LIMIT}}")
        redacted = [self._message(m) if isinstance(m, Mapping) else self._json(m) for m in messages]
        extra = {k: self._json(v) for k, v in record.items() if k not in ("op", "messages")}
        return {"op": "replace", "messages": redacted, **extra}

    def _json(self, value: Any) -> Any:
        return self.redactor.json(value, json_default)

    def _message(self, message: Mapping[str, Any]) -> OperationRecord:
        others = self._json({k: v for k, v in message.items() if k != "content"})
        return {**others, "content": self._blocks(blocks_of(message))}

    def _blocks(self, blocks: Sequence[Any]) -> list[Any]:
        out = []
        for block in blocks:
            if not isinstance(block, Mapping):
                block = json_default(block)  # an SDK block object: its dict
            if is_thinking(block):
                text = block.get("thinking")
                if isinstance(text, str) and self.redactor.text(text) != text:
                    continue  # redacted thinking would no longer match its signature: drop it
                out.append(dict(block))
            else:
                out.append(self._json(block))
        return out
