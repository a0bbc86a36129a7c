"""What the floor says of a call it does not let through as it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class FloorVerdict:
    """`deny`: refused outright, whatever rules, modes or approvals say (the floor can tell the
    call is catastrophic or leaks a secret). `ask`: the floor cannot tell what the call does and
    it could reach a protected target, so only a person may allow it (`person_only`)."""

    verdict: Literal["deny", "ask"]
    reason: str

    @property
    def person_only(self) -> bool:
        return self.verdict == "ask"


def worst(verdicts: list[FloorVerdict | None]) -> FloorVerdict | None:
    """A refusal if there is one, else the first question, else None."""
    found = [v for v in verdicts if v is not None]
    return next((v for v in found if v.verdict == "deny"), found[0] if found else None)
