"""A machine reached over ssh: the same operations as the local one, done with POSIX tools there.

Nothing needs installing there beyond bash and the usual utilities (awk, grep, ls, mktemp).
Nothing runs there before the app knows what sandbox the machine has (`sandbox_of` waits for its
probe); then every command and file tool runs inside it (machines/remote_sandbox.py), from the
machine's workspace, where relative paths start too. A machine without bubblewrap is held by the
floor and approval alone, and its results say so. Output is made inert and cut like local
output, so a remote file can no more take over the terminal than a local one.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from cmdop_tui.machines.agent import DEFAULT_CMDOP, agent_command
from cmdop_tui.machines.machine import (
    EDIT_MAX_BYTES,
    GLOB_MAX_RESULTS,
    GREP_MAX_MATCHES,
    LIST_MAX_ENTRIES,
    READ_MAX_CHARS,
    READ_MAX_LINES,
    FileBytes,
    MachineResult,
    OutputStream,
    ProgressSink,
)
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT, ExitLine, run_process
from cmdop_tui.machines.remote_sandbox import RemoteSandbox, Tags
from cmdop_tui.machines.remote_scripts import (
    EDIT_SCRIPT,
    FETCH_SCRIPT,
    GLOB_SCRIPT,
    GREP_SCRIPT,
    LIST_SCRIPT,
    NO_SUCH_FILE,
    READ_SCRIPT,
    REFUSED,
    WORKSPACE_FILES_SCRIPT,
    WRITE_SCRIPT,
)
from cmdop_tui.machines.spec import MachineError, MachineSpec, MachineUnreachable
from cmdop_tui.machines.ssh import SSH_FAILED, RemoteResult, SshTransport, ssh_failure
from cmdop_tui.support.diffs import apply_edit
from cmdop_tui.support.text import decode_output, inert_line, strip_terminal_sequences, truncate_middle

__all__ = ["RemoteMachine"]

AGENT_STOP_GRACE_S = 0.3  # a stopped remote agent gets this long after TERM
COMMAND_NOT_FOUND = 127
UNSCANNED = (
    "the sandbox there has not finished looking for the secrets it must hide (a very large home?); "
    "nothing runs there until it has. Try again in a moment."
)


async def _not_known() -> RemoteSandbox:
    raise MachineError("what sandbox this machine has is not known: nothing runs there")


@dataclass(frozen=True)
class RemoteMachine:
    """A machine of the inventory, reached through its ssh transport.

    `on_unreachable` hears why a connection failed, so the fleet can mark the machine offline.
    `sandbox_of` is the session's sandbox there, once its probe has said what the machine has
    (raises MachineError when that cannot be known: then nothing runs).
    """

    spec: MachineSpec
    transport: SshTransport
    on_unreachable: Callable[[str], None] = field(default=lambda reason: None, compare=False)
    sandbox_of: Callable[[], Awaitable[RemoteSandbox]] = field(default=_not_known, compare=False)

    @property
    def name(self) -> str:
        return self.spec.name

    async def run_command(
        self,
        command: str,
        *,
        cwd: str | None,
        timeout_ms: int,
        progress: ProgressSink,
        output_limit: int,
        sandboxed: bool = True,
        output_fd: int | None = None,
    ) -> MachineResult:
        """Run it there in its own process group, which Stop kills there too (killing the local
        ssh client alone would leave it running); inside the sandbox there, from the workspace
        (or `cwd`)."""

        said: list[str] = []  # anything the command printed: then it ran, and a 255 is a lost link

        def heard(text: str, stream: OutputStream) -> None:
            if stream != "info":  # our own notes are not the command's
                said.append(text)
            progress(text, stream)

        failure: list[MachineError] = []  # what ssh's own exit 255 meant

        def ssh_error(status: int | None, stderr: str) -> str | None:
            if status != SSH_FAILED:
                return None
            failure.append(ssh_failure(self.spec, stderr, ran=any(said)))
            return str(failure[-1])

        try:
            sandbox = await self.sandbox_of()
        except MachineError as exc:
            return MachineResult(str(exc), is_error=True, unreachable=isinstance(exc, MachineUnreachable))
        script = sandbox.script(command, cwd=cwd, confined=sandboxed)
        result = await self._run_stoppable(
            script,
            cwd=None,
            timeout_ms=timeout_ms,
            progress=heard,
            exit_line=ssh_error,
            output_limit=output_limit,
            login_bash=sandbox.facts.login_bash,
            output_fd=output_fd,
        )
        text, tags = sandbox.take_tags(result.text)
        judged = self._judge(replace(result, text=text), tags, sandbox, sandboxed)
        return replace(judged, unreachable=any(isinstance(error, MachineUnreachable) for error in failure))

    def _judge(self, result: MachineResult, tags: Tags, sandbox: RemoteSandbox, sandboxed: bool) -> MachineResult:
        """A command's result with what the sandbox there refused it (checked against its rules)."""
        if tags.failed:
            return MachineResult.error(f"{self.name}: {UNSCANNED if tags.failed == 'unscanned' else tags.failed}")
        if tags.created:
            paths = [path for path, _ in tags.created]
            held = "only a person may create these at the top of a writable root: they run code or instruct the next session"
            moved = ", ".join(inert_line(where) for _, where in tags.created)
            note = (
                f"\n[sandbox on {self.name}: the command created {', '.join(map(inert_line, paths))}; {held}. "
                f"It was moved to {moved}. Running the command outside the sandbox needs the user's approval.]"
            )
            return MachineResult.denied(result.text + note, sandbox.refusal("create", paths, held))
        confined = sandboxed and sandbox.confines
        if confined and (result.is_error or result.exit_code != 0):
            refusal = sandbox.refused_write(result.text)
            if refusal is not None:
                note = (
                    f"\n[sandbox on {self.name}: the command could not {refusal.needs.removesuffix(f' on {self.name}')}: "
                    f"{refusal.held}. Running it outside the sandbox needs the user's approval.]"
                )
                return MachineResult.denied(result.text + note, refusal)
        return _noted(result, sandbox, sandboxed)

    async def run_agent(self, prompt: str, *, timeout_ms: int, progress: ProgressSink) -> MachineResult:
        """Give `prompt` to this project's headless agent there, working in the machine's
        workspace; its stream-json lines go to `progress` as stdout. Stop ends it, TERM first so
        that it can end its turn cleanly."""

        def failure(status: int | None, stderr: str) -> str | None:
            if status == SSH_FAILED:
                self.on_unreachable(stderr.strip())
                return str(ssh_failure(self.spec, stderr))
            if status == COMMAND_NOT_FOUND:
                return not_installed(self.spec)
            return None

        arguments = f"-p {shlex.quote(prompt)} --output-format stream-json --yes"
        return await self._run_stoppable(
            agent_command(self.spec.cmdop, arguments, in_workspace=True),
            cwd=None,
            timeout_ms=timeout_ms,
            progress=progress,
            exit_line=failure,
            grace_s=AGENT_STOP_GRACE_S,
        )

    async def _run_stoppable(
        self,
        command: str,
        *,
        cwd: str | None,
        timeout_ms: int,
        progress: ProgressSink,
        exit_line: ExitLine,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        grace_s: float = 0.0,
        login_bash: bool = False,
        output_fd: int | None = None,
    ) -> MachineResult:
        """`command` there in a process group of its own, which a Stop (or the time-out) kills
        there, after `grace_s` of TERM when given; `login_bash`: the login shell there is bash."""
        remote_command, run_id = self.transport.stoppable(command, cwd, login_bash=login_bash)

        async def stop_remote() -> None:
            await self.transport.kill(run_id, grace_s=grace_s)

        return await run_process(
            self.transport.argv(remote_command),
            cwd=None,
            timeout_ms=timeout_ms,
            progress=progress,
            output_limit=output_limit,
            on_abort=stop_remote,
            exit_line=exit_line,
            output_fd=output_fd,
        )

    # --- the file tools ----------------------------------------------------------------------

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        script = READ_SCRIPT.format(path=_path(path), start=int(start), end=int(end or 0), limit=READ_MAX_LINES)
        result = await self._script(script, reads=path)
        if result.is_error:
            return result
        body, _, total = result.text.rpartition("lines in file: ")
        note = f"\n[{self.name}: {total.strip()} lines in the file; read more with start/end]" if body else ""
        return MachineResult((body.rstrip("\n") or "(no lines in that range)") + note)

    async def list_dir(self, path: str) -> MachineResult:
        return await self._script(LIST_SCRIPT.format(path=_path(path), limit=LIST_MAX_ENTRIES + 1), reads=path)

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        script = WRITE_SCRIPT.format(path=_path(path))
        return await self._write(path, script, content.encode("utf-8"), sandboxed)

    async def remove_file(self, path: str) -> MachineResult:
        """Remove a file there, outside the sandbox: a rewind putting back the absence of a file
        the session made (the user's own action, as the write it undoes was allowed)."""
        ran = await self._run(f"rm -f -- {_path(path)}", None, False)
        return ran if isinstance(ran, MachineResult) else _as_result(self.name, ran[1])

    async def absolute_path(self, path: str) -> str:
        """`path` as an absolute path there (`~` the remote home, relative: the workspace)."""
        return (await self.sandbox_of()).absolute(path)

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        """Read the file's bytes, replace here, write them back there (support/diffs.py)."""
        shown = inert_line(path)
        fetched = await self._fetch(path, EDIT_MAX_BYTES, "to edit", sandboxed)
        if isinstance(fetched, FileBytes):
            if not fetched.exists:
                return MachineResult.error(
                    f"no such file on {self.name}: {shown}; edit_file changes an existing file (write_file creates one)"
                )
            return MachineResult.error(fetched.error or "the file could not be read")
        checksum, data = fetched
        edit = apply_edit(data, old_string, new_string, replace_all=replace_all, name=shown)
        if edit.error is not None:
            return MachineResult.error(edit.error)
        script = EDIT_SCRIPT.format(path=_path(path), checksum=_q(checksum))
        written = await self._write(path, script, edit.data, sandboxed)
        return written if written.is_error else MachineResult(f"{edit.summary(shown)} on {self.name}")

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        fetched = await self._fetch(path, max_bytes, "to compare")
        return fetched if isinstance(fetched, FileBytes) else FileBytes(fetched[1])

    async def _fetch(
        self, path: str, limit: int, purpose: str, sandboxed: bool = True
    ) -> tuple[str, bytes] | FileBytes:
        """(its `cksum` line, its bytes), or a FileBytes saying it is missing or why it cannot be read."""
        ran = await self._run(FETCH_SCRIPT.format(path=_path(path), limit=int(limit), purpose=purpose), path, sandboxed)
        if isinstance(ran, MachineResult):
            return FileBytes.failed(ran.text)
        result = ran[1]
        if result.status == NO_SUCH_FILE:
            return FileBytes.missing()
        if result.status != 0:
            reason = strip_terminal_sequences(result.stderr_text).strip() or f"exit status {result.status}"
            return FileBytes.failed(f"{self.name}: {reason}")
        checksum, _, data = result.stdout.partition(b"\n")
        return checksum.decode("ascii", errors="replace"), data

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        include = f"--include={_q(glob)}" if glob else ""
        script = GREP_SCRIPT.format(include=include, pattern=_q(pattern), path=_path(path), limit=GREP_MAX_MATCHES)
        return _or_no_matches(await self._script(script, reads=path))

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        script = GLOB_SCRIPT.format(cwd=_path(cwd), pattern=_q(pattern), limit=GLOB_MAX_RESULTS)
        return _or_no_matches(await self._script(script, reads=cwd))

    async def workspace_files(self, limit: int) -> list[str] | MachineResult:
        """The files of the workspace there, relative to it, as `@NAME:` completes them: git's
        list where it is a git tree, else `find` without the heavy folders; at most `limit`.
        Inside the sandbox; an error result when it cannot run. Names only: nothing is read."""
        ran = await self._run(WORKSPACE_FILES_SCRIPT.format(limit=int(limit)), ".", True)
        if isinstance(ran, MachineResult):
            return ran
        if ran[1].status != 0:
            return _as_result(self.name, ran[1])
        names = ran[1].stdout.decode("utf-8", "replace").split("\0")
        return [name.removeprefix("./") for name in names if name and name != "."]

    async def _write(self, path: str, script: str, data: bytes, sandboxed: bool) -> MachineResult:
        """A write or an edit there; one the sandbox refuses (by its rules: before it runs for
        the path given, after it for the path that resolved to there) may be let out by the user."""
        ran = await self._run(script, None, sandboxed, input=data, writes=path)
        if isinstance(ran, MachineResult):
            return ran
        sandbox, result = ran
        if result.status != REFUSED:
            return _noted(_as_result(self.name, result), sandbox, sandboxed)
        target = sandbox.absolute(result.stderr_text.rpartition("refused:")[2].strip() or path)
        if sandboxed and sandbox.confines and not sandbox.may_write(target):
            return self._refused(sandbox, target)
        return MachineResult.error(f"{self.name}: cannot write {inert_line(target)}")

    def _refused(self, sandbox: RemoteSandbox, target: str) -> MachineResult:
        refusal = sandbox.refusal("write", [target])
        return MachineResult.denied(
            f"{self.name}: the sandbox there refused to {refusal.needs}; {refusal.held}", refusal
        )

    async def _script(self, script: str, *, reads: str) -> MachineResult:
        """Run a short script there; its stdout (inert, cut) or its stderr as an error."""
        ran = await self._run(script, reads, True)
        return ran if isinstance(ran, MachineResult) else _as_result(self.name, ran[1])

    async def _run(
        self, body: str, reads: str | None, sandboxed: bool, *, input: bytes | None = None, writes: str | None = None
    ) -> tuple[RemoteSandbox, RemoteResult] | MachineResult:
        """`body` there, inside the sandbox unless `sandboxed` is False; an error result for a
        path it hides (`reads`), a refusal for one it hides or protects (`writes`), for an
        unknown sandbox, a failed connection or set-up."""
        try:
            sandbox = await self.sandbox_of()
        except MachineError as exc:
            return MachineResult.error(str(exc))
        confined = sandboxed and sandbox.confines
        if confined and reads is not None and sandbox.hides(sandbox.absolute(reads)):
            return MachineResult.error(f"{inert_line(reads)} on {self.name} is hidden by the sandbox (a secret)")
        if confined and writes is not None:
            target = sandbox.absolute(writes)
            if sandbox.hides(target) or sandbox.protects(target):
                return self._refused(sandbox, target)
        listing = sandbox.hidden_list() if confined else ""
        try:
            result = await self.transport.run(sandbox.script(f"{listing}\n{body}", confined=sandboxed), input=input)
        except MachineError as exc:
            return MachineResult.error(str(exc))
        stderr, tags = sandbox.take_tags(result.stderr.decode("utf-8", "replace"))
        if tags.failed:
            return MachineResult.error(f"{self.name}: {UNSCANNED if tags.failed == 'unscanned' else tags.failed}")
        return sandbox, replace(result, stderr=stderr.encode())


def not_installed(spec: MachineSpec) -> str:
    """Why ask_machine found no agent there, and how to put one there."""
    if spec.cmdop != DEFAULT_CMDOP:
        return (
            f"cmdop-tui is not installed on {spec.name}: the configured command `{spec.cmdop}` was not found there. "
            f"Fix [machines.{spec.name}] cmdop, or remove it and run `cmdop-tui machines install {spec.name}`."
        )
    return (
        f"cmdop-tui is not installed on {spec.name} (neither in its data dir nor on the PATH of a "
        f"non-interactive ssh session there). Run `cmdop-tui machines install {spec.name}` to put a "
        "matching one there."
    )


def _as_result(name: str, result: RemoteResult) -> MachineResult:
    """A script's stdout (inert, cut), or its stderr as an error."""
    if result.status != 0:
        reason = strip_terminal_sequences(result.stderr_text) or f"exit status {result.status}"
        return MachineResult.error(f"{name}: {reason}")
    return MachineResult(truncate_middle(strip_terminal_sequences(decode_output(result.stdout)), READ_MAX_CHARS))


def _noted(result: MachineResult, sandbox: RemoteSandbox, sandboxed: bool) -> MachineResult:
    """The result, saying that no sandbox held it where the machine has none."""
    if not sandboxed or sandbox.facts.bubblewrap or sandbox.mode == "off":
        return result
    note = f"\n[no sandbox on {sandbox.machine}: it has no usable bubblewrap; only the floor and approval held this]"
    return replace(result, text=result.text + note)


def _or_no_matches(result: MachineResult) -> MachineResult:
    """`no matches` instead of an empty answer."""
    return result if result.text.strip() or result.is_error else MachineResult("no matches")


def _q(text: str) -> str:
    return shlex.quote(str(text))


def _path(path: str) -> str:
    """A path for a script there, quoted, with a leading `~` (or `~/`) meaning the remote home,
    as the local tools read it."""
    text = str(path)
    if text == "~":
        return '"$HOME"'
    if text.startswith("~/"):
        return '"$HOME"/' + _q(text[2:]) if text[2:] else '"$HOME"/'
    return _q(text)
