"""The machines of one session: inventory, one ssh transport per machine, health, the target.

A session may be scoped to one machine (`--machine NAME`, or picked in the machines panel): tools
then work there by default and the local machine is hidden from them.

Nothing runs on another machine before the app knows what sandbox it has there: the first tool
call waits for the machine's probe (one probe, shared by the calls that wait), and a machine whose
probe failed or said nothing of a sandbox gets no command. Each session has its own folder on
each machine it used (its private /tmp and /var/tmp): closing the fleet removes them.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from cmdop_tui.machines.health import probe_facts
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.local_load import local_health
from cmdop_tui.machines.machine import Machine
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.remote_sandbox import RemoteFacts, RemoteSandbox
from cmdop_tui.machines.sandbox import Sandbox
from cmdop_tui.machines.spec import Health, MachineError, MachineSpec, MachineUnreachable, State
from cmdop_tui.machines.ssh import SshOptions, SshTransport
from cmdop_tui.machines.ssh_config import Connection
from cmdop_tui.machines.ssh_resolve import SshResolver

HealthListener = Callable[[MachineSpec, Health], None]
CLEANUP_TIMEOUT_S = 5.0  # removing a session's folder on a machine at the end gets this long


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
        self._facts: dict[str, RemoteFacts] = {}  # what each machine's last probe said its sandbox needs
        self._probes: dict[str, asyncio.Future[Health]] = {}  # probes under way, shared by their callers
        self._used: dict[str, RemoteSandbox] = {}  # machines where this session's folder may exist
        self.session = secrets.token_hex(8)  # this session's folder on each machine
        self.connections = SshResolver(options.config_file)  # ssh -G's answers, kept for the session
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

    # --- what each connection will do ------------------------------------------------------------

    def connection(self, spec: MachineSpec) -> Connection | None:
        """What a connection to an ssh_config alias will do: ssh -G's answer once it has come,
        else the inventory's own reading (None: not an ssh_config alias). Never waits."""
        known = self.connections.known(spec.host) if spec.source == "ssh_config" else None
        if known is not None and known.connection is not None:
            return known.connection
        defined = self.inventory.ssh_host(spec)
        return defined.connection if defined else None

    async def resolve_connections(self) -> None:
        """Ask ssh -G about every ssh_config alias of the fleet (a few at a time, once a session)."""
        aliases = [spec.host for spec in self.inventory if spec.source == "ssh_config"]
        await self.connections.resolve_all(aliases)

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
        return RemoteMachine(
            spec,
            self.transport(spec),
            on_unreachable=partial(self.mark, spec, "offline"),
            sandbox_of=partial(self.remote_sandbox, spec),
        )

    async def remote_sandbox(self, spec: MachineSpec) -> RemoteSandbox:
        """This session's sandbox on `spec`, once a probe has said what the machine has (the
        first call waits for one). Raises MachineError when that cannot be known."""
        if spec.name not in self._facts:
            health = await self.probe(spec)
            if health.state == "offline":
                raise MachineUnreachable(health.error or f"cannot reach {spec.name}")
            if spec.name not in self._facts:
                raise MachineError(
                    f"nothing runs on {spec.name} until the app knows what sandbox it has there: its probe did not say"
                )
        policy = self.sandbox.policy
        sandbox = RemoteSandbox(
            self._facts[spec.name],
            spec.name,
            self.session,
            writable=spec.writable,
            mode=policy.mode,
            network=policy.network,
        )
        if sandbox.confines:
            self._used[spec.name] = sandbox
        return sandbox

    def check_reachable(self, spec: MachineSpec) -> None:
        """Fail fast for a machine the last probe found offline."""
        health = self.health.get(spec.name)
        if health is not None and health.state == "offline":
            ago = time.monotonic() - health.checked_at
            raise MachineUnreachable(f"{spec.name} is offline (checked {ago:.0f} s ago): {health.error}")

    # --- health --------------------------------------------------------------------------------

    async def probe(self, spec: MachineSpec) -> Health:
        """Probe `spec` now; a probe already under way is shared, not started again."""
        if spec.is_local:
            return self._heard(spec, local_health(), None)
        running = self._probes.get(spec.name)
        if running is None or running.done():
            running = self._probes[spec.name] = asyncio.ensure_future(self._probe_remote(spec))
        return await asyncio.shield(running)  # a caller that gives up does not stop it for the others

    async def _probe_remote(self, spec: MachineSpec) -> Health:
        health, facts = await probe_facts(self.transport(spec))
        return self._heard(spec, health, facts)

    def _heard(self, spec: MachineSpec, health: Health, facts: RemoteFacts | None) -> Health:
        self.health[spec.name] = health
        if facts is not None:
            self._facts[spec.name] = facts
        elif health.state != "offline":  # it answered, but not what sandbox it has: unknown
            self._facts.pop(spec.name, None)
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
        """Remove this session's folders on the machines it used, then stop the control masters
        this session started."""
        used, self._used = self._used, {}

        async def clean(name: str, sandbox: RemoteSandbox) -> None:
            await self._transports[name].run(sandbox.cleanup(), timeout_s=CLEANUP_TIMEOUT_S)

        await asyncio.gather(*(clean(n, s) for n, s in used.items() if n in self._transports), return_exceptions=True)
        await asyncio.gather(*(t.close() for t in self._transports.values()), return_exceptions=True)
