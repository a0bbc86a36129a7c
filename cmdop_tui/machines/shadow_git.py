"""Checkpoints of a working tree in a shadow git repository, on this machine or another.

The repository is the app's own: its GIT_DIR in the app's data dir on that machine, never in the
tree (the user's own `.git` is never read or written: git leaves every `.git` path alone), one
per working tree, so that only the first checkpoint of a tree hashes it whole. The tree's
`.gitignore` files are respected; a file larger than the cap is left out of the checkpoint (and
named). A checkpoint is a commit on a ref of the session (`refs/cmdop/SESSION`), so that git's
own garbage collection keeps what a session can still rewind to.

The same bash scripts run here and over a machine's ssh connection (`ScriptRunner`): git there
does the work, and only commit ids, counts and a bounded diff come back. They run outside the
sandbox (they are the app's, not the model's) and read nothing of the user's git settings, so a
tree cannot make git run a program (no hooks, filters, fsmonitor or includes: no config but ours).

    snapshot(ref, message) -> Snapshot     the tree as it is now, as a commit
    changes(a, b) -> [FileChange]          files and lines between two checkpoints
    patch(a, b, limit) -> str              a unified diff between two, bounded
    restore(ref, target) -> Snapshot       the tree as `target` (after a checkpoint of the present)
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from cmdop_tui.machines.spec import MachineError
from cmdop_tui.support.processes import kill_process_group

# (status, stdout, stderr) of a bash script run on the machine.
ScriptRunner = Callable[[str], Awaitable[tuple[int, bytes, bytes]]]
FileStatus = Literal["added", "modified", "deleted"]

DEFAULT_MAX_FILE_BYTES = 10_000_000
NO_GIT = 90  # the script's status when the machine has no git
_STATUS: dict[str, FileStatus] = {"A": "added", "M": "modified", "T": "modified", "D": "deleted"}

# What every script starts with: our repository and nothing of the user's git settings; the
# commit identity is the app's.
_ENVIRONMENT = r"""command -v git >/dev/null 2>&1 || exit 90
export GIT_DIR="$G" GIT_WORK_TREE="$WT" GIT_INDEX_FILE="$G/index" GIT_CONFIG_NOSYSTEM=1 \
  GIT_CONFIG_GLOBAL=/dev/null HOME="$G" XDG_CONFIG_HOME="$G" GIT_TERMINAL_PROMPT=0 GIT_LITERAL_PATHSPECS=1 \
  GIT_AUTHOR_NAME=cmdop-tui GIT_AUTHOR_EMAIL=checkpoints@cmdop-tui GIT_COMMITTER_NAME=cmdop-tui \
  GIT_COMMITTER_EMAIL=checkpoints@cmdop-tui GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
unset GIT_CONFIG_PARAMETERS GIT_NAMESPACE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_EXTERNAL_DIFF
cd -- "$WT" 2>/dev/null || { echo "no such folder: $WT" >&2; exit 91; }
if [ ! -f "$G/HEAD" ]; then
  mkdir -p -m 700 -- "$G" && git init -q && git config core.autocrlf false && git config gc.auto 0 &&
    git config core.hooksPath /dev/null && git config core.fsmonitor false && git config core.quotepath false &&
    git config core.symlinks true && git config core.fileMode true || exit 92
fi
"""

# The tree as a commit on refs/cmdop/$REF (the ref's last commit when nothing changed). One walk
# of the tree lists what changed since the index (new, modified, deleted files; the tree's
# .gitignore files respected); only those are hashed. A file over $CAP bytes is left out (and
# named after the commit id). A tree git has never seen is hashed whole, once.
_SNAPSHOT = r"""read -r p pt < <(git for-each-ref --format='%(objectname) %(tree)' "refs/cmdop/$REF")
git ls-files -z -o -m -d --exclude-per-directory=.gitignore > "$G/changed" || exit 93
: > "$G/big"
if [ -s "$G/changed" ]; then
  while IFS= read -r -d '' f; do printf './%s\0' "$f"; done < "$G/changed" > "$G/dotted"  # find takes no -path
  xargs -0 -r sh -c 'find "$@" -maxdepth 0 -type f -size +"$0"c -print0 2>/dev/null' "$CAP" < "$G/dotted" > "$G/big"
  if [ -s "$G/big" ]; then  # left out: out of the index, and off the list to hash
    declare -A big=()
    while IFS= read -r -d '' f; do printf '%s\0' "${f#./}"; done < "$G/big" |
      git update-index -z --force-remove --stdin 2>/dev/null
    while IFS= read -r -d '' f; do big[${f#./}]=1; done < "$G/big"
    while IFS= read -r -d '' f; do [ -n "${big[$f]:-}" ] || printf '%s\0' "$f"; done < "$G/changed" > "$G/small"
    mv -f -- "$G/small" "$G/changed"
  fi
  # A path under a folder a command swapped for a symlink (the link is new: it is listed) is
  # gone from the tree: git would refuse it as "beyond a symbolic link", and reads no link.
  xargs -0 -r sh -c 'find "$@" -maxdepth 0 -type l -print0 2>/dev/null' sh < "$G/dotted" > "$G/links"
  if [ -s "$G/links" ]; then
    declare -A link=()
    while IFS= read -r -d '' f; do link[${f#./}]=1; done < "$G/links"
    while IFS= read -r -d '' f; do
      d=$f; linked=
      while [ "${d%/*}" != "$d" ]; do d=${d%/*}; [ -z "${link[$d]:-}" ] || { linked=1; break; }; done
      if [ -n "$linked" ]; then printf '%s\0' "$f" >&3; else printf '%s\0' "$f"; fi
    done < "$G/changed" > "$G/present" 3> "$G/gone"
    git update-index -z --force-remove --stdin < "$G/gone" || exit 93
    mv -f -- "$G/present" "$G/changed"
  fi
  git update-index -z --add --remove --replace --stdin < "$G/changed" 2>"$G/add.err" || { cat "$G/add.err" >&2; exit 93; }
fi
t=$(git write-tree) || exit 94  # the index is every session's of this tree: never assume it is ours
if [ -n "$p" ] && [ "$pt" = "$t" ]; then
  c=$p
else
  c=$(git commit-tree "$t" ${p:+-p "$p"} -m "$MSG") && git update-ref "refs/cmdop/$REF" "$c" || exit 95
fi
printf '%s\n' "$c"
tr '\0' '\n' < "$G/big" | sed 's|^\./||'
"""

_CHANGES = r"""git diff --no-renames --numstat -z "$A" "$B" -- || exit 96
printf '\0--\0'
git diff --no-renames --name-status -z "$A" "$B" -- || exit 96
"""

_PATCH = r"""git diff --no-renames --no-color --no-ext-diff --no-textconv "$A" "$B" -- | head -c "$LIMIT"
"""

# The present as a checkpoint first (so that a rewind can be undone), then the tree as $TARGET:
# git writes and removes the files, and writes nothing through a symlink.
_RESTORE = (
    _SNAPSHOT
    + r"""git read-tree --reset -u "$TARGET" || exit 97
r=$(git commit-tree "$TARGET^{tree}" -p "$c" -m "$MSG (restored)") && git update-ref "refs/cmdop/$REF" "$r" || exit 95
"""
)


@dataclass(frozen=True)
class Snapshot:
    """A checkpoint: its commit, and the files left out of it (larger than the cap)."""

    commit: str
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileChange:
    """One file between two checkpoints; lines are None for a binary file."""

    path: str
    status: FileStatus
    added: int | None = 0
    removed: int | None = 0


class ShadowRepo:
    """The shadow repository of one working tree on one machine.

    `git_dir` and `work_tree` are shell words (a remote machine's data dir is `"$d"/...`, set by
    `prelude`); `run` runs a script there."""

    def __init__(
        self,
        run: ScriptRunner,
        git_dir: str,
        work_tree: str,
        *,
        prelude: str = "",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self._run = run
        self._head = f"{prelude}\nG={git_dir}; WT={work_tree}\n{_ENVIRONMENT}"
        self.max_file_bytes = max_file_bytes

    async def snapshot(self, ref: str, message: str) -> Snapshot:
        """The tree as it is now, as a commit on the session's ref."""
        out = await self._script(_SNAPSHOT, REF=ref, MSG=message, CAP=str(self.max_file_bytes))
        return _snapshot(out)

    async def changes(self, a: str, b: str) -> list[FileChange]:
        """What changed from checkpoint `a` to checkpoint `b`, file by file."""
        out = await self._script(_CHANGES, A=a, B=b)
        numstat, _, status = out.partition(b"\0--\0")
        return _changes(numstat, status)

    async def patch(self, a: str, b: str, limit: int = 200_000) -> str:
        """A unified diff from `a` to `b`, cut at `limit` bytes."""
        out = await self._script(_PATCH, A=a, B=b, LIMIT=str(limit))
        return out.decode("utf-8", "replace")

    async def restore(self, ref: str, target: str, message: str) -> Snapshot:
        """Take the present as a checkpoint, then make the tree `target`'s. Returns the present's
        checkpoint (what undoes this)."""
        out = await self._script(_RESTORE, REF=ref, MSG=message, CAP=str(self.max_file_bytes), TARGET=target)
        return _snapshot(out)

    async def _script(self, body: str, **values: str) -> bytes:
        assigned = "\n".join(f"{name}={shlex.quote(value)}" for name, value in values.items())
        status, out, err = await self._run(f"{self._head}{assigned}\n{body}")
        if status == NO_GIT:
            raise MachineError("git is not installed there")
        if status != 0:
            why = err.decode("utf-8", "replace").strip().splitlines()
            raise MachineError(f"the checkpoint failed ({why[-1] if why else f'status {status}'})")
        return out


async def run_here(script: str) -> tuple[int, bytes, bytes]:
    """A ScriptRunner for this machine: bash, with only the environment git needs (no secret)."""
    env = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TMPDIR") if name in os.environ}
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", script,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = await process.communicate()
    finally:
        if process.returncode is None:  # cancelled: nothing of it goes on
            kill_process_group(process.pid)
            await process.wait()
    return process.returncode or 0, out, err


def repository_name(work_tree: str) -> str:
    """The shadow repository's folder name for a working tree (one per tree and machine)."""
    return hashlib.sha256(work_tree.encode()).hexdigest()[:20] + ".git"


def _snapshot(out: bytes) -> Snapshot:
    lines = out.decode("utf-8", "replace").splitlines()
    if not lines or len(lines[0]) < 40:
        raise MachineError("the checkpoint failed (git said no commit)")
    return Snapshot(lines[0], tuple(line for line in lines[1:] if line))


def _changes(numstat: bytes, status: bytes) -> list[FileChange]:
    """`git diff --numstat -z` and `--name-status -z`, as changes."""
    kinds: dict[str, FileStatus] = {}
    parts = status.split(b"\0")
    for code, name in zip(parts[::2], parts[1::2], strict=False):
        if code:
            kinds[name.decode("utf-8", "replace")] = _STATUS.get(code.decode()[:1], "modified")
    result = []
    for entry in numstat.split(b"\0"):
        added, _, rest = entry.partition(b"\t")
        removed, _, name = rest.partition(b"\t")
        if not name:
            continue
        path = name.decode("utf-8", "replace")
        lines = (None, None) if added == b"-" else (int(added), int(removed))
        result.append(FileChange(path, kinds.get(path, "modified"), *lines))
    return result
