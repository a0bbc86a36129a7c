"""Where one tool call runs, as a value: the machines, and the selectors that named each.

Computed once, where the loop builds the call (:func:`place`), and carried on it; permission
decisions read the machines and the selectors, never `label`, which is for people only. A
machine that happens to be called ``3 machines`` is thus one machine, judged by its own rules,
and a call over ``tag:web`` is judged on every machine the tag chooses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.spec import MachineError

# the arguments naming the one machine a call runs on, the first that is a string
_ONE_MACHINE_ARGUMENTS = ("machine", "hostname")
# the arguments naming the machines of a call that runs on many (run_on_machines, ask_machines)
FANOUT_ARGUMENTS = ("machines", "hostnames")


def _frozen(mapping: Mapping[str, Sequence[str]]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({name: tuple(selectors) for name, selectors in mapping.items()})


@dataclass(frozen=True)
class Placement:
    """The machines a call runs on (resolved names, in order), the selectors that chose each
    (``{"db1": ("tag:db",)}``; rules scoped to them apply there), the selectors as the call
    wrote them (`named`), and whether the call fans out (runs once on each machine)."""

    machines: tuple[str, ...]
    selectors: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _frozen({}), hash=False)
    named: tuple[str, ...] = ()
    fans_out: bool = False

    @classmethod
    def one(cls, name: str, selectors: Sequence[str] = ()) -> Placement:
        """A call on machine `name` (`selectors`: other names whose rules apply to it)."""
        return cls((name,), _frozen({name: tuple(dict.fromkeys([name, *selectors]))}), (name,))

    @classmethod
    def fanout(
        cls, chosen: Sequence[str], selectors: Mapping[str, Sequence[str]] | None = None, named: Sequence[str] = ()
    ) -> Placement:
        """A call run on each of `chosen`; a machine `selectors` leaves out was named by itself.
        `named`: the call's own selectors (by default `chosen`)."""
        machines = tuple(dict.fromkeys(chosen))
        given = selectors or {}
        return cls(
            machines,
            _frozen({name: given.get(name, (name,)) for name in machines}),
            tuple(dict.fromkeys(named or machines)),
            fans_out=True,
        )

    @property
    def label(self) -> str:
        """For people only ("web1", "3 machines"): no decision reads it."""
        if len(self.machines) == 1:
            return self.machines[0]
        return f"{len(self.machines)} machines"

    @property
    def single(self) -> str | None:
        """The one machine a call that does not fan out runs on; None for a fan-out."""
        return self.machines[0] if not self.fans_out and len(self.machines) == 1 else None

    def widened(self, extra: Mapping[str, Sequence[str]]) -> Placement:
        """The same machines, each also named by `extra[machine]` (its tags and groups)."""
        merged = {m: tuple(dict.fromkeys([*self.selectors.get(m, ()), *extra.get(m, ())])) for m in self.machines}
        return Placement(self.machines, _frozen(merged), self.named, self.fans_out)


LOCAL = Placement.one("local")


def place(args: Mapping[str, Any], fleet: Fleet | None) -> Placement:
    """Where a call with these arguments runs: the machine it names (as the inventory calls it),
    else each machine its selectors choose (tags and groups resolved; when a selector names no
    machine, the selectors as given: the tool refuses the call), else the session's target."""
    for key in _ONE_MACHINE_ARGUMENTS:
        named = args.get(key)
        if isinstance(named, str) and named:
            return Placement.one(fleet.canonical(named) if fleet is not None else named)
    for key in FANOUT_ARGUMENTS:
        raw = args.get(key)
        selectors = [str(item).strip() for item in raw if str(item).strip()] if isinstance(raw, list) else []
        if selectors:
            return _fanout(selectors, fleet)
    target = fleet.target_name if fleet is not None else None
    return Placement.one(target or "local")


def _fanout(selectors: list[str], fleet: Fleet | None) -> Placement:
    named = list(dict.fromkeys(selectors))
    if fleet is None:
        return Placement.fanout(named, named=named)
    try:
        chosen = {selector: {spec.name for spec in fleet.inventory.select([selector])} for selector in named}
        machines = [spec.name for spec in fleet.inventory.select(named)]
    except MachineError:
        return Placement.fanout(named, named=named)  # the tool itself will say which is unknown
    return Placement.fanout(machines, {m: [s for s in named if m in chosen[s]] for m in machines}, named)
