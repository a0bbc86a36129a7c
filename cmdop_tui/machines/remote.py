"""The tools on a remote machine: the same six, done with POSIX tools over ssh.

Nothing needs installing there beyond bash and the usual utilities (awk, grep, ls, mktemp).
Output is made inert and cut like local output, so a remote file can no more take over the
terminal than a local one.
"""

from __future__ import annotations

import shlex
from typing import Any

from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SSH_FAILED, SshTransport, ssh_failure
from cmdop_tui.support.text import decode_output, strip_terminal_sequences, truncate_middle
from cmdop_tui.tools.base import ToolContext, ToolResult
from cmdop_tui.tools.shell import DEFAULT_TIMEOUT_MS, run_process

OUTPUT_LIMIT = 100_000  # characters shown to the model from a remote file tool
READ_MAX_LINES = 2_000
LIST_MAX_ENTRIES = 1_000
GREP_MAX_MATCHES = 500
GLOB_MAX_RESULTS = 1_000

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


class RemoteMachine:
    """A machine reached over ssh, with the tools' remote implementations."""

    def __init__(self, spec: MachineSpec, transport: SshTransport) -> None:
        self.spec = spec
        self.transport = transport

    @property
    def name(self) -> str:
        return self.spec.name

    async def execute(self, args: dict[str, Any], ctx: ToolContext, output_limit: int) -> ToolResult:
        remote_command, run_id = self.transport.stoppable(args["command"], args.get("cwd"))

        async def stop_remote() -> None:
            await self.transport.kill(run_id)

        def ssh_error(status: int | None, stderr: str) -> str | None:
            return str(ssh_failure(self.spec, stderr)) if status == SSH_FAILED else None

        return await run_process(
            self.transport.argv(remote_command),
            cwd=None,
            timeout_ms=args.get("timeout_ms", DEFAULT_TIMEOUT_MS),
            progress=ctx.progress,
            output_limit=output_limit,
            on_abort=stop_remote,
            exit_line=ssh_error,
        )

    async def read_file(self, args: dict[str, Any]) -> ToolResult:
        start, end = args.get("start", 1), args.get("end", 0)
        script = READ_SCRIPT.format(path=_q(args["path"]), start=int(start), end=int(end), limit=READ_MAX_LINES)
        result = await self._script(script)
        if result.is_error:
            return result
        body, _, total = result.content.rpartition("lines in file: ")
        note = f"\n[{self.name}: {total.strip()} lines in the file; read more with start/end]" if body else ""
        return ToolResult((body.rstrip("\n") or "(no lines in that range)") + note)

    async def list_dir(self, args: dict[str, Any]) -> ToolResult:
        return await self._script(LIST_SCRIPT.format(path=_q(args.get("path", ".")), limit=LIST_MAX_ENTRIES + 1))

    async def write_file(self, args: dict[str, Any]) -> ToolResult:
        content = args["content"].encode("utf-8")
        return await self._script(WRITE_SCRIPT.format(path=_q(args["path"])), input=content)

    async def grep(self, args: dict[str, Any]) -> ToolResult:
        include = f"--include={_q(args['glob'])}" if args.get("glob") else ""
        script = GREP_SCRIPT.format(
            include=include, pattern=_q(args["pattern"]), path=_q(args.get("path", ".")), limit=GREP_MAX_MATCHES
        )
        result = await self._script(script)
        return result if result.content.strip() or result.is_error else ToolResult("no matches")

    async def glob(self, args: dict[str, Any]) -> ToolResult:
        script = GLOB_SCRIPT.format(cwd=_q(args.get("cwd", ".")), pattern=_q(args["pattern"]), limit=GLOB_MAX_RESULTS)
        result = await self._script(script)
        return result if result.content.strip() or result.is_error else ToolResult("no matches")

    async def _script(self, script: str, *, input: bytes | None = None) -> ToolResult:
        try:
            result = await self.transport.run(script, input=input)
        except MachineError as exc:
            return ToolResult.error(str(exc))
        text = truncate_middle(strip_terminal_sequences(decode_output(result.stdout)), OUTPUT_LIMIT)
        if result.status != 0:
            reason = strip_terminal_sequences(result.stderr_text) or f"exit status {result.status}"
            return ToolResult.error(f"{self.name}: {reason}")
        return ToolResult(text)


def _q(text: str) -> str:
    return shlex.quote(str(text))
