"""A machine reached over ssh: the same operations as the local one, done with POSIX tools there.

Nothing needs installing there beyond bash and the usual utilities (awk, grep, ls, mktemp).
Output is made inert and cut like local output, so a remote file can no more take over the
terminal than a local one.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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
    ProgressSink,
    SandboxRefusal,
)
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT, ExitLine, run_process
from cmdop_tui.machines.remote_sandbox import remote_script
from cmdop_tui.machines.sandbox import denied_path
from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SSH_FAILED, SshTransport, ssh_failure
from cmdop_tui.support.diffs import apply_edit
from cmdop_tui.support.text import decode_output, inert_line, strip_terminal_sequences, truncate_middle

__all__ = ["RemoteMachine"]

AGENT_STOP_GRACE_S = 0.3  # a stopped remote agent gets this long after TERM
COMMAND_NOT_FOUND = 127

READ_SCRIPT = r"""
f={path}
[ -e "$f" ] || {{ echo "no such file: $f" >&2; exit 3; }}
[ -d "$f" ] && {{ echo "$f is a directory (use list_dir)" >&2; exit 3; }}
size=$(wc -c < "$f") || exit 3
if [ "$(head -c 8192 "$f" | tr -d '\000' | wc -c)" -ne "$(head -c 8192 "$f" | wc -c)" ]; then
  echo "$f is a binary file ($size bytes)" >&2; exit 3
fi
total=$(wc -l < "$f")
awk -v s={start} -v e={end} 'NR>=s && (e==0 || NR<=e) {{printf "%6d\t%s\n", NR, substr($0, 1, 2000)}} e>0 && NR>e {{exit}}' "$f" | head -n {limit}
echo "lines in file: $total"
"""

LIST_SCRIPT = r"""
d={path}
[ -d "$d" ] || {{ echo "not a directory: $d" >&2; exit 3; }}
ls -la -- "$d" | head -n {limit}
"""

WRITE_SCRIPT = r"""
f={path}
[ -L "$f" ] && f=$(readlink -f -- "$f")  # write through a symlink, as the local tool does
dir=$(dirname -- "$f")
mkdir -p -- "$dir" || exit 3
if [ -e "$f" ]; then
  mode=$(stat -c %a -- "$f" 2>/dev/null || stat -f %Lp -- "$f" 2>/dev/null)  # GNU, then BSD
else
  mode=$(printf '%o' $((0666 & ~0$(umask))))  # what a plain new file would get
fi
tmp=$(mktemp "$dir/.cmdop-write.XXXXXX") || exit 3
cat > "$tmp" || {{ rm -f "$tmp"; exit 3; }}
[ -n "$mode" ] && chmod "$mode" "$tmp"
mv -f -- "$tmp" "$f" || {{ rm -f "$tmp"; exit 3; }}
echo "wrote $(wc -c < "$f") bytes to $f"
"""

NO_SUCH_FILE = 4  # FETCH_SCRIPT's exit status for a missing file

# The file's bytes after a line with its `cksum`, which EDIT_SCRIPT checks before replacing it.
FETCH_SCRIPT = r"""
f={path}
[ -L "$f" ] && f=$(readlink -f -- "$f")
[ -e "$f" ] || exit 4
[ -d "$f" ] && {{ echo "$f is a directory" >&2; exit 3; }}
[ -f "$f" ] || {{ echo "$f is not a regular file" >&2; exit 3; }}
size=$(($(wc -c < "$f"))) || exit 3
[ "$size" -le {limit} ] || {{ echo "$f is too large {purpose} ($size bytes)" >&2; exit 3; }}
cksum < "$f" || exit 3
exec cat -- "$f"
"""

# New content on stdin, written atomically with the old file's mode and (where allowed) owner,
# unless the file changed since FETCH_SCRIPT read it.
EDIT_SCRIPT = r"""
f={path}
[ -L "$f" ] && f=$(readlink -f -- "$f")
[ -f "$f" ] || {{ echo "no such file: $f" >&2; exit 3; }}
[ "$(cksum < "$f")" = {checksum} ] || {{ echo "$f changed while it was being edited; it was left as it is now" >&2; exit 3; }}
dir=$(dirname -- "$f")
mode=$(stat -c %a -- "$f" 2>/dev/null || stat -f %Lp -- "$f" 2>/dev/null)  # GNU, then BSD
owner=$(stat -c %u:%g -- "$f" 2>/dev/null || stat -f %u:%g -- "$f" 2>/dev/null)
tmp=$(mktemp "$dir/.cmdop-edit.XXXXXX") || exit 3
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp" || exit 3
[ -n "$owner" ] && chown "$owner" "$tmp" 2>/dev/null
[ -n "$mode" ] && chmod "$mode" "$tmp"
mv -f -- "$tmp" "$f" || exit 3
"""

GREP_SCRIPT = r"""
grep -rnIE --exclude-dir=.git {include} -e {pattern} -- {path} | head -n {limit} | cut -c1-500
status=${{PIPESTATUS[0]}}
[ "$status" -le 1 ] || exit "$status"
"""

GLOB_SCRIPT = r"""
cd -- {cwd} || exit 3
shopt -s globstar nullglob
IFS=$'\n'
pattern={pattern}
# An unquoted variable is only split and globbed, never run: no command substitution happens.
for match in $pattern; do printf '%s\n' "$match"; done | head -n {limit}
"""


@dataclass(frozen=True)
class RemoteMachine:
    """A machine of the inventory, reached through its ssh transport.

    `on_unreachable` hears why a connection failed, so the fleet can mark the machine offline.
    """

    spec: MachineSpec
    transport: SshTransport
    on_unreachable: Callable[[str], None] = field(default=lambda reason: None, compare=False)
    sandbox: bool = False  # bubblewrap there (the health probe found it): commands run inside

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
    ) -> MachineResult:
        """Run it there in its own process group, which Stop kills there too (killing the local
        ssh client alone would leave it running); inside bubblewrap where the machine has it,
        else held by the floor and approval alone."""

        def ssh_error(status: int | None, stderr: str) -> str | None:
            return str(ssh_failure(self.spec, stderr)) if status == SSH_FAILED else None

        confined = sandboxed and self.sandbox
        script = remote_script(command, self.spec.writable) if confined else command
        result = await self._run_stoppable(
            script, cwd=cwd, timeout_ms=timeout_ms, progress=progress, exit_line=ssh_error, output_limit=output_limit
        )
        if confined and not result.text.startswith("exit code: 0"):
            roots = [Path("/tmp"), *(Path(w) for w in self.spec.writable if not w.startswith("~"))]
            path = denied_path(result.text, roots)
            if path is not None:
                refusal = SandboxRefusal(
                    "write", (path,), "only its working directory and /tmp are writable", self.name
                )
                note = f"\n[sandbox on {self.name}: the command could not write {path}; outside it needs the user's approval]"
                return MachineResult.denied(result.text + note, refusal)
        return result

    async def run_agent(self, prompt: str, *, timeout_ms: int, progress: ProgressSink) -> MachineResult:
        """Give `prompt` to this project's headless agent there; its stream-json lines go to
        `progress` as stdout. Stop ends it, TERM first so that it can end its turn cleanly."""

        def failure(status: int | None, stderr: str) -> str | None:
            if status == SSH_FAILED:
                self.on_unreachable(stderr.strip())
                return str(ssh_failure(self.spec, stderr))
            if status == COMMAND_NOT_FOUND:
                return not_installed(self.spec)
            return None

        command = agent_command(self.spec.cmdop, f"-p {shlex.quote(prompt)} --output-format stream-json --yes")
        return await self._run_stoppable(
            command, cwd=None, timeout_ms=timeout_ms, progress=progress, exit_line=failure, grace_s=AGENT_STOP_GRACE_S
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
    ) -> MachineResult:
        """`command` there in a process group of its own, which a Stop (or the time-out) kills
        there, after `grace_s` of TERM when given."""
        remote_command, run_id = self.transport.stoppable(command, cwd)

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
        )

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        script = READ_SCRIPT.format(path=_path(path), start=int(start), end=int(end or 0), limit=READ_MAX_LINES)
        result = await self._script(script)
        if result.is_error:
            return result
        body, _, total = result.text.rpartition("lines in file: ")
        note = f"\n[{self.name}: {total.strip()} lines in the file; read more with start/end]" if body else ""
        return MachineResult((body.rstrip("\n") or "(no lines in that range)") + note)

    async def list_dir(self, path: str) -> MachineResult:
        return await self._script(LIST_SCRIPT.format(path=_path(path), limit=LIST_MAX_ENTRIES + 1))

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        return await self._script(WRITE_SCRIPT.format(path=_path(path)), input=content.encode("utf-8"))

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        """Read the file's bytes, replace here, write them back there (support/diffs.py)."""
        shown = inert_line(path)
        fetched = await self._fetch(path, EDIT_MAX_BYTES, "to edit")
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
        written = await self._script(EDIT_SCRIPT.format(path=_path(path), checksum=_q(checksum)), input=edit.data)
        return written if written.is_error else MachineResult(f"{edit.summary(shown)} on {self.name}")

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        fetched = await self._fetch(path, max_bytes, "to compare")
        return fetched if isinstance(fetched, FileBytes) else FileBytes(fetched[1])

    async def _fetch(self, path: str, limit: int, purpose: str) -> tuple[str, bytes] | FileBytes:
        """(its `cksum` line, its bytes), or a FileBytes saying it is missing or why it cannot be read."""
        try:
            result = await self.transport.run(FETCH_SCRIPT.format(path=_path(path), limit=int(limit), purpose=purpose))
        except MachineError as exc:
            return FileBytes.failed(str(exc))
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
        return _or_no_matches(await self._script(script))

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        script = GLOB_SCRIPT.format(cwd=_path(cwd), pattern=_q(pattern), limit=GLOB_MAX_RESULTS)
        return _or_no_matches(await self._script(script))

    async def _script(self, script: str, *, input: bytes | None = None) -> MachineResult:
        """Run a short script there; its stdout (inert, cut) or its stderr as an error."""
        try:
            result = await self.transport.run(script, input=input)
        except MachineError as exc:
            return MachineResult.error(str(exc))
        text = truncate_middle(strip_terminal_sequences(decode_output(result.stdout)), READ_MAX_CHARS)
        if result.status != 0:
            reason = strip_terminal_sequences(result.stderr_text) or f"exit status {result.status}"
            return MachineResult.error(f"{self.name}: {reason}")
        return MachineResult(text)


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
