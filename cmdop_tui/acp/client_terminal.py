"""The editor's terminal: execute_command on this machine run in a terminal the editor makes
(`terminal/create`), shown live in the tool call, when the editor offers `terminal` and our own
sandbox would not hold the command anyway.

Security first: a command in the editor's terminal runs outside our sandbox. So the terminal is
used only where the session's commands on this machine already run unconfined: the sandbox off
(`[sandbox] mode = "off"`, a profile's `sandbox = "off"`, `cmdop-tui acp --sandbox off`) or not
there at all. With the sandbox on, our own sandboxed tool runs as always, and so does a command
on another machine. The gate has decided before any of it (floor, rules, mode, hooks, the
person): only the running is the editor's. What stays ours: the app's credentials are taken out
of the command's environment (`env -u`, as our own unconfined commands have it), the output the
model sees is bounded as ours, the timeout and Stop kill the terminal, and every terminal is
released once its call ends. An editor that fails to make one leaves the call to our own tool.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from acp import Client
from acp.schema import TerminalExitStatus, TerminalOutputResponse

from cmdop_tui.acp.updates import Updates
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.local_fs import resolve_path
from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.session import Session
from cmdop_tui.support.secrets import CREDENTIAL_ENV
from cmdop_tui.support.text import strip_terminal_sequences, truncate_middle
from cmdop_tui.tools.base import ToolContext, ToolResult
from cmdop_tui.tools.shell import DEFAULT_TIMEOUT_MS


class EditorTerminal:
    """The editor's side of one session's commands: making, reading, killing its terminals."""

    def __init__(self, client: Client, session_id: Callable[[], str], updates: Updates) -> None:
        self._client = client
        self._session_id = session_id
        self._updates = updates

    async def run(
        self, call_id: str, command: str, cwd: str, timeout_ms: int, output_limit: int
    ) -> MachineResult | None:
        """Run `command` in `cwd` in a new terminal shown in call `call_id`, to its end, its
        timeout (killed) or Stop (killed, then cancelled as ever); None: the editor made none."""
        session = self._session_id()
        try:
            made = await self._client.create_terminal(
                session_id=session, command="/usr/bin/env", args=[*unset_credentials(), "/bin/bash", "-c", command],
                cwd=cwd, output_byte_limit=output_limit,
            )  # fmt: skip
        except Exception as exc:  # the editor's error: our own tool runs it
            _say(f"the editor made no terminal: {exc}")
            return None
        terminal = made.terminal_id
        self._updates.terminal(call_id, terminal)
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                status = await self._client.wait_for_terminal_exit(session_id=session, terminal_id=terminal)
        except TimeoutError:
            await self._kill(session, terminal)
            output = await self._client.terminal_output(session_id=session, terminal_id=terminal)
            header = f"error: the command timed out after {timeout_ms} ms and was killed"
            return MachineResult(report(header, output, output_limit), is_error=True, timed_out_ms=timeout_ms)
        except BaseException:  # Stop (the turn cancelled) or the editor gone: the command goes too
            await asyncio.shield(self._kill(session, terminal))
            raise
        else:
            output = await self._client.terminal_output(session_id=session, terminal_id=terminal)
            return MachineResult(report(exit_line(status), output, output_limit), exit_code=status.exit_code)
        finally:
            await asyncio.shield(self._release(session, terminal))

    async def _kill(self, session: str, terminal: str) -> None:
        try:
            await self._client.kill_terminal(session_id=session, terminal_id=terminal)
        except Exception as exc:  # an editor that no longer answers: said
            _say(f"the editor's terminal {terminal} was not killed: {exc}")

    async def _release(self, session: str, terminal: str) -> None:
        try:
            await self._client.release_terminal(session_id=session, terminal_id=terminal)
        except Exception as exc:
            _say(f"the editor's terminal {terminal} was not released: {exc}")


def use_editor_terminal(session: Session, terminal: EditorTerminal) -> None:
    """Give `session` an execute_command that runs in the editor's terminal where our sandbox would
    not hold the command anyway (this machine, the sandbox off or absent); ours everywhere else."""
    tools = session.runner.tools
    ours = tools.get("execute_command")
    if ours is None:
        return

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            machine = ctx.machine(args)
        except MachineError:
            return await ours.run(args, ctx)  # ours says why
        if not isinstance(machine, LocalMachine) or machine.sandbox.confines:
            return await ours.run(args, ctx)
        cwd = str(resolve_path(str(args.get("cwd") or "."), machine.workspace))
        timeout_ms = int(args.get("timeout_ms", DEFAULT_TIMEOUT_MS))
        result = await terminal.run(ctx.call_id, str(args["command"]), cwd, timeout_ms, DEFAULT_OUTPUT_LIMIT)
        return await ours.run(args, ctx) if result is None else ToolResult.of(result)

    tools.remove(ours.name)
    tools.add(replace(ours, run=run))


def unset_credentials() -> list[str]:
    """`env`'s arguments that take the app's credentials out of the command's environment."""
    return [arg for name in CREDENTIAL_ENV for arg in ("-u", name)]


def exit_line(status: TerminalExitStatus | Any) -> str:
    """`exit code: N`, or the signal that ended it."""
    if status.exit_code is not None:
        return f"exit code: {status.exit_code}"
    return f"exit code: unknown (killed by {status.signal})" if status.signal else "exit code: unknown"


def report(header: str, output: TerminalOutputResponse, output_limit: int) -> str:
    """Header, then the terminal's output (stdout and stderr as one, as a terminal has them),
    within `output_limit` characters however much the editor sent."""
    text = strip_terminal_sequences(output.output).rstrip("\n")
    cut = " (the editor kept only its end)" if output.truncated else ""
    body = f"output{cut}:\n{truncate_middle(text, output_limit)}" if text else "(no output)"
    return f"{header}\n\n{body}"


def _say(text: str) -> None:
    sys.stderr.write(f"cmdop-tui acp: {text}\n")
