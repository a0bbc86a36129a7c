"""The machines of one session: inventory, one ssh transport per machine, health, the target.

A session may be scoped to one machine (`--machine NAME`, or picked in the machines panel): tools
then work there by default and the local machine is hidden from them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from cmdop_tui.machines.health import local_health, probe
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.machine import Machine
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.sandbox import Sandbox
from cmdop_tui.machines.spec import Health, MachineError, MachineSpec, State
from cmdop_tui.machines.ssh import SshOptions, SshTransport

HealthListener = Callable[[MachineSpec, Health], None]


class Fleet:
    def __init__(
        self,
        inventory: Inventory,
        options: SshOptions = SshOptions(),
        target: str | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.inventory = inventory
        self.options = options
        self.sandbox = sandbox or Sandbox()  # what holds local commands (default: nothing)
        self.health: dict[str, Health] = {}
        self.listeners: list[HealthListener] = []
        self._transports: dict[str, SshTransport] = {}
        self.target: MachineSpec | None = None
        self.set_target(target)

    # --- target --------------------------------------------------------------------------------

    def set_target(self, name: str | None) -> MachineSpec | None:
        """Scope the session to a machine (None or the local machine: no scope)."""
        spec = self.inventory.resolve(name) if name else None
        self.target = None if spec is None or spec.is_local else spec
        return self.target

    @property
    def target_name(self) -> str | None:
        return self.target.name if self.target else None

    def canonical(self, name: str) -> str:
        """The inventory name for whatever the model called a machine (hostname, prefix...), so
        that rules scoped to a machine apply however it is named; unknown names stay as given
        (the tool call then fails as unknown, before anything runs)."""
        try:
            return self.inventory.resolve(name).name
        except MachineError:
            return name

    # --- tools ---------------------------------------------------------------------------------

    def transport(self, spec: MachineSpec) -> SshTransport:
        if spec.name not in self._transports:
            self._transports[spec.name] = SshTransport(spec, self.options)
        return self._transports[spec.name]

    def machine(self, name: str | None, *, cwd: Path | None = None) -> Machine:
        """Where a tool call with `machine=name` runs (no name: the target, else this machine).

        `cwd` is where relative paths start on the local machine (default: this process's
        directory). Raises MachineError for an unknown, ambiguous, offline or hidden machine.
        """
        spec = self.inventory.resolve(name) if name else self.target
        if spec is None or spec.is_local:
            if self.target is not None:
                raise MachineError(
                    f"this session is scoped to {self.target.name}: the local machine is hidden. "
                    f"Work on {self.target.name} (leave `machine` out)."
                )
            return LocalMachine(cwd or Path.cwd(), sandbox=self.sandbox)
        return self._remote(spec)

    def remote(self, name: str) -> RemoteMachine | None:
        """The machine `name` names when it is another one (None: this one).

        Raises MachineError for an unknown, ambiguous or offline machine.
        """
        spec = self.inventory.resolve(name)
        return None if spec.is_local else self._remote(spec)

    def _remote(self, spec: MachineSpec) -> RemoteMachine:
        self.check_reachable(spec)
        sandboxed = self.health.get(spec.name, Health()).sandbox == "bubblewrap" and self.sandbox.policy.mode != "off"
        return RemoteMachine(
            spec, self.transport(spec), on_unreachable=partial(self.mark, spec, "offline"), sandbox=sandboxed
        )

    def check_reachable(self, spec: MachineSpec) -> None:
        """Fail fast for a machine the last probe found offline."""
        health = self.health.get(spec.name)
        if health is not None and health.state == "offline":
            ago = time.monotonic() - health.checked_at
            raise MachineError(f"{spec.name} is offline (checked {ago:.0f} s ago): {health.error}")

    # --- health --------------------------------------------------------------------------------

    async def probe(self, spec: MachineSpec) -> Health:
        health = local_health() if spec.is_local else await probe(self.transport(spec))
        self.health[spec.name] = health
        for listener in self.listeners:
            listener(spec, health)
        return health

    async def probe_all(self) -> dict[str, Health]:
        """Probe every machine at once; one slow machine does not hold up the others."""
        await asyncio.gather(*(self.probe(spec) for spec in self.inventory))
        return dict(self.health)

    def mark(self, spec: MachineSpec, state: State, error: str = "") -> None:
        """Record what a tool learned (e.g. a failed connection) without waiting for a probe."""
        previous = self.health.get(spec.name, Health())
        self.health[spec.name] = replace(previous, state=state, error=error, checked_at=time.monotonic())

    async def close(self) -> None:
        """Stop the control masters this session started."""
        await asyncio.gather(*(t.close() for t in self._transports.values()), return_exceptions=True)
