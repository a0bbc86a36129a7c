"""`cmdop-tui machines install`: put this version of the agent on other machines, over ssh.

Per machine: ask its `python3` what it is (version, ABI, platform, whether it can make a venv,
where the user's data dir is); make a venv in `<data dir>/agent`; install into it, from this
install's wheels when the ABI matches this interpreter's (no index needed there), else with pip
from the package index there (this project's own wheel, which is pure Python, is still sent);
then run `<venv>/bin/cmdop-tui --version` there and check it says this version. Wheels go over
the machine's ssh connection (its ControlMaster) as a tar stream, only those not there yet at the
same size, unpacked into a temporary folder and moved into place once whole (a dropped
connection leaves no truncated wheel under a wheel's name); a pip failure there removes the
wheels, so the next run sends them all again. The venv is reused only when it was made for the
same Python ABI and platform (homes shared over NFS by machines of different kinds) and its pip
runs (an interrupted ensurepip leaves none); a lock folder in the data dir keeps two machines
sharing a home from installing into it at once. Machines are done a few at a time; each one's
trouble is its own.
"""

from __future__ import annotations

import asyncio
import io
import json
import platform
import shlex
import sys
import sysconfig
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmdop_tui.machines.agent import DEFAULT_CMDOP, PROJECT, VENV
from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SshOptions, SshTransport
from cmdop_tui.machines.wheels import Wheels, WheelsError, prepare_wheels
from cmdop_tui.support.version import VERSION

MIN_PYTHON = (3, 11)
DEFAULT_JOBS = 4
WHEELS = "agent-wheels"  # the wheels' folder in the remote data dir (kept: a reinstall sends only new ones)
LOCK = "agent.lock"  # a folder in the remote data dir, there while an install runs (mkdir is atomic, NFS too)
BUILT_FOR = "cmdop-tui-built-for"  # in the venv: the ABI and platform it was made for
PROBE_TIMEOUT_S = 30.0
INSTALL_TIMEOUT_S = 900.0
LOCK_WAIT_S = 300  # how long an install waits for another one into the same data dir
VENV_FAILED, PIP_FAILED, LOCKED = 5, 6, 7

# The wheels in a remote folder and their sizes, as JSON (python3 is there: the probe asked it).
LIST_PY = (
    "import json, os, sys; d = sys.argv[1]; "
    "print(json.dumps({n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) "
    "if n.endswith('.whl') and os.path.isfile(os.path.join(d, n))} if os.path.isdir(d) else {}))"
)

Progress = Callable[[str, str], None]  # (machine, what is happening)

PROBE_PY = r"""
import json, sys
info = {"version": list(sys.version_info[:3])}
if sys.version_info >= (3, 11):
    import importlib.util, os, platform, sysconfig
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        data = os.path.join(home, "Library", "Application Support", "cmdop-tui")
    else:
        data = os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "cmdop-tui")
    info.update(
        tag=sys.implementation.cache_tag, platform=sysconfig.get_platform(), libc=list(platform.libc_ver()),
        venv=bool(importlib.util.find_spec("venv") and importlib.util.find_spec("ensurepip")), data=data,
    )
print(json.dumps(info))
"""
PROBE_SCRIPT = (
    'command -v python3 >/dev/null 2>&1 || { echo "no python3 on the PATH of a non-interactive ssh session" >&2; '
    f"exit 3; }}; exec python3 -c {shlex.quote(PROBE_PY)}"
)


class InstallError(Exception):
    """One machine could not get the agent; the message says why and what to do."""


@dataclass(frozen=True)
class Python:
    """What a machine's python3 is (this one's: `Python.here()`)."""

    version: tuple[int, ...]
    tag: str = ""  # sys.implementation.cache_tag: cpython-311
    platform: str = ""  # sysconfig.get_platform(): linux-x86_64
    libc: tuple[str, str] = ("", "")  # platform.libc_ver(): ("glibc", "2.36")
    venv: bool = False
    data: str = ""  # the user's data dir for this project

    @classmethod
    def here(cls) -> Python:
        libc = platform.libc_ver()
        tag = sys.implementation.cache_tag or ""
        return cls(tuple(sys.version_info[:3]), tag, sysconfig.get_platform(), (libc[0], libc[1]), True)

    @classmethod
    def parse(cls, text: str) -> Python:
        try:
            info: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
            libc = info.get("libc") or ["", ""]
            return cls(
                tuple(int(part) for part in info["version"]),
                str(info.get("tag", "")),
                str(info.get("platform", "")),
                (str(libc[0]), str(libc[1])),
                bool(info.get("venv")),
                str(info.get("data", "")),
            )
        except (ValueError, KeyError, IndexError, TypeError):
            raise InstallError(f"python3 there did not answer as expected: {text.strip()[:200]!r}") from None

    @property
    def shown(self) -> str:
        return f"Python {'.'.join(map(str, self.version))}" + (f" ({self.tag}, {self.platform})" if self.tag else "")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def wheels_misfit(there: Python, here: Python) -> str | None:
    """Why this install's wheels would not run there (None: they would)."""
    if (there.tag, there.platform) != (here.tag, here.platform):
        return f"its {there.tag} on {there.platform} is not this {here.tag} on {here.platform}"
    if there.libc[0] != here.libc[0] or _version(there.libc[1]) < _version(here.libc[1]):
        return f"its C library ({' '.join(there.libc).strip() or 'unknown'}) is not {' '.join(here.libc)} or newer"
    return None


@dataclass(frozen=True)
class Outcome:
    name: str
    ok: bool
    message: str


def configured_agent_note(spec: MachineSpec) -> str | None:
    """What to say when the machine's settings name another agent command, which ask_machine
    keeps running there instead of the one just installed."""
    if spec.cmdop == DEFAULT_CMDOP:
        return None
    return f"note: ask_machine runs `{spec.cmdop}` there (cmdop in its settings), not this agent; remove that setting to use it"


class Installer:
    """Installs on machines through their ssh transports; the wheels are made once, when the
    first machine that can take them asks (or given, already made)."""

    def __init__(
        self,
        options: SshOptions,
        progress: Progress,
        *,
        cache: Path | None = None,
        wheels: Wheels | None = None,
        jobs: int = DEFAULT_JOBS,
        lock_wait_s: int = LOCK_WAIT_S,
    ) -> None:
        self.options = options
        self.lock_wait_s = lock_wait_s
        self.progress = progress
        self.cache = cache
        self._wheels = wheels
        self._wheels_error: WheelsError | None = None
        self._wheels_lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max(1, jobs))
        self.here = Python.here()

    async def install_all(self, specs: Sequence[MachineSpec]) -> list[Outcome]:
        """Each machine's outcome, in the order given."""
        return list(await asyncio.gather(*(self._one(spec) for spec in specs)))

    async def _one(self, spec: MachineSpec) -> Outcome:
        async with self._slots:
            transport = SshTransport(spec, self.options)
            try:
                version = await self.install(spec, transport)
            except (InstallError, MachineError, WheelsError) as exc:
                self.progress(spec.name, f"failed: {exc}")
                return Outcome(spec.name, False, str(exc))
            finally:
                await transport.close()
        self.progress(spec.name, f"ok: {PROJECT} {version}")
        if (note := configured_agent_note(spec)) is not None:
            self.progress(spec.name, note)
        return Outcome(spec.name, True, version)

    async def install(self, spec: MachineSpec, transport: SshTransport) -> str:
        """Install there; the version its `--version` printed. Raises InstallError, MachineError
        (unreachable) or WheelsError (this install's wheels could not be made)."""
        if spec.is_local:
            raise InstallError("this is the local machine: the agent here is this install")
        self.progress(spec.name, "asking its python3")
        there = await probe_python(transport)
        data = shlex.quote(there.data)
        misfit = wheels_misfit(there, self.here)
        wheels = await self.wheels()
        if misfit is None:
            self.progress(spec.name, f"{there.shown}: installing from this install's wheels")
            sent = wheels.all
        else:  # ours is pure Python, and so are some dependencies: the index gives the rest
            self.progress(spec.name, f"{there.shown}: {misfit}; installing from the package index there")
            sent = (wheels.project, *(w for w in wheels.dependencies if w.name.endswith("-none-any.whl")))
        count = await send_wheels(transport, there.data, sent, always=(wheels.project,))
        self.progress(spec.name, f"sent {count} wheel(s); installing into {there.data}/{VENV}")
        script = install_script(data, there, wheels.project.name, offline=misfit is None, lock_wait_s=self.lock_wait_s)
        result = await transport.run(script, timeout_s=INSTALL_TIMEOUT_S + self.lock_wait_s)
        if result.status != 0:
            raise InstallError(install_failure(result.status, result.stderr_text, there, misfit))
        return await check_version(transport, there.data)

    async def wheels(self) -> Wheels:
        """This install's wheels, made by the first machine that needs them; a failure to make
        them is remembered, so the other machines say it at once instead of trying again."""
        async with self._wheels_lock:
            if self._wheels is None and self._wheels_error is None:
                try:
                    if self.cache is None:
                        raise WheelsError("no folder to make this install's wheels in")
                    self.progress("local", f"making this install's wheels in {self.cache} (later runs reuse most)")
                    self._wheels = await asyncio.to_thread(prepare_wheels, self.cache)
                except WheelsError as exc:
                    self._wheels_error = exc
            if self._wheels is None:
                raise WheelsError(str(self._wheels_error))
            return self._wheels


async def probe_python(transport: SshTransport) -> Python:
    result = await transport.run(PROBE_SCRIPT, timeout_s=PROBE_TIMEOUT_S)
    if result.status != 0:
        raise InstallError(result.stderr_text or f"python3 there failed (exit {result.status})")
    there = Python.parse(result.stdout.decode("utf-8", "replace"))
    shown = ".".join(map(str, there.version))
    if there.version < MIN_PYTHON:
        raise InstallError(
            f"python3 there is {shown}; {PROJECT} needs Python {'.'.join(map(str, MIN_PYTHON))} or newer: "
            "install one there (first on the PATH as python3)"
        )
    if not there.venv:
        raise InstallError(
            f"python3 there ({shown}) cannot make a venv (no venv or ensurepip module): "
            "install its venv package there (Debian, Ubuntu: apt install python3-venv)"
        )
    if not there.data.startswith("/"):
        raise InstallError(f"python3 there named no usable data dir ({there.data!r})")
    return there


async def remote_wheels(transport: SshTransport, folder: str) -> dict[str, int]:
    """The wheels in `folder` there, with their sizes."""
    listed = await transport.run(f"python3 -c {shlex.quote(LIST_PY)} {shlex.quote(folder)}", timeout_s=PROBE_TIMEOUT_S)
    try:
        found = json.loads(listed.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        return {str(name): int(size) for name, size in found.items()}
    except (ValueError, IndexError, AttributeError, TypeError):
        raise InstallError(f"the wheels there could not be listed: {listed.stderr_text or listed.status}") from None


async def send_wheels(transport: SshTransport, data: str, wheels: Sequence[Path], *, always: Sequence[Path]) -> int:
    """Copy the wheels not there yet at the same size (and `always` those) into
    `<data>/agent-wheels`, as one tar stream over the machine's ssh connection; how many were sent.

    They are unpacked into a temporary folder beside and moved into place only once the stream
    was whole: a connection dropped midway must not leave a truncated wheel that later runs,
    seeing its name, would never send again."""
    folder = f"{data}/{WHEELS}"
    present = await remote_wheels(transport, folder)
    missing = [w for w in wheels if present.get(w.name) != w.stat().st_size or w in always]
    if not missing:
        return 0
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for wheel in missing:
            tar.add(wheel, arcname=wheel.name)
    script = (
        f'w={shlex.quote(folder)}; mkdir -p "$w" && t=$(mktemp -d "$w/.incoming.XXXXXX") || exit 1; '
        'tar -xf - -C "$t" && mv -f "$t"/*.whl "$w"/; s=$?; rm -f "$t"/*; rmdir "$t"; exit $s'
    )
    result = await transport.run(script, input=buffer.getvalue(), timeout_s=INSTALL_TIMEOUT_S)
    if result.status != 0:
        raise InstallError(f"the wheels could not be copied there: {result.stderr_text or result.status}")
    return len(missing)


def lock_script(lock: str, wait_s: int) -> str:
    """Take the lock folder (waiting up to `wait_s`), given back when the script ends however it
    ends; two machines sharing a home (NFS) must not build one venv at once."""
    return (
        f'l={lock}; i=0; until mkdir "$l" 2>/dev/null; do i=$((i+1)); if [ $i -gt {int(wait_s)} ]; then '
        f'echo "another install into this data dir has held its lock $l for over {int(wait_s)} s '
        '($(cat "$l/owner" 2>/dev/null)): wait for it to end, or remove that folder if none is running" >&2; '
        f"exit {LOCKED}; fi; sleep 1; done; "
        """trap 'rm -f "$l/owner"; rmdir "$l"' EXIT; trap 'exit 1' HUP INT TERM; """
        'echo "$(uname -n) pid $$" > "$l/owner"'
    )


def install_script(data: str, there: Python, project_wheel: str, offline: bool, lock_wait_s: int = LOCK_WAIT_S) -> str:
    """Under the data dir's lock: the venv (made again unless it was made for this ABI and
    platform and its pip runs), then this version's wheel (always reinstalled: a working copy
    changes under one version) and what it needs. When pip fails the wheels are removed: one
    may be damaged, and the next run then sends them all again."""
    venv, wheels = f"{data}/{VENV}", f"{data}/{WHEELS}"
    built_for = shlex.quote(f"{there.tag} {there.platform}")
    index = "--no-index " if offline else ""
    pip = (
        f'"$v/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --no-input {index}--find-links "$w"'
    )
    failed = f'{{ rm -f "$w"/*.whl; exit {PIP_FAILED}; }}'
    return (
        f"v={venv}; w={wheels}; mkdir -p {data} || exit {VENV_FAILED}; {lock_script(f'{data}/{LOCK}', lock_wait_s)}; "
        f'if [ "$(cat "$v/{BUILT_FOR}" 2>/dev/null)" != {built_for} ] '
        '|| ! "$v/bin/python" -m pip --version >/dev/null 2>&1; '
        f'then {{ python3 -m venv --clear "$v" >&2 && echo {built_for} > "$v/{BUILT_FOR}"; }} || exit {VENV_FAILED}; fi; '
        f'{pip} --quiet --force-reinstall --no-deps "$w"/{shlex.quote(project_wheel)} >&2 || {failed}; '
        f"{pip} --quiet {shlex.quote(f'{PROJECT}=={VERSION}')} >&2 || {failed}"
    )


def install_failure(status: int, stderr: str, there: Python, misfit: str | None) -> str:
    tail = "\n".join(stderr.strip().splitlines()[-8:]) or f"exit {status}"
    if status == VENV_FAILED:
        return f"python3 there could not make the venv:\n{tail}"
    if status == LOCKED:
        return tail
    resend = "the wheels there were removed, so the next install sends them all again"
    if status == PIP_FAILED and misfit is not None:
        return (
            f"pip there could not install {PROJECT} {VERSION}'s dependencies from its package index "
            f"(this install's wheels do not fit: {misfit}). Give it access to an index, or run this "
            f"from an install on {there.shown.removeprefix('Python ')} ({resend}):\n{tail}"
        )
    if status == PIP_FAILED:
        return f"pip there failed ({resend}):\n{tail}"
    return f"the install there failed:\n{tail}"


async def check_version(transport: SshTransport, data: str) -> str:
    """What the installed agent says to `--version` there; an error unless it is this version."""
    agent = shlex.quote(f"{data}/{VENV}/bin/{PROJECT}")
    result = await transport.run(f"{agent} --version", timeout_s=PROBE_TIMEOUT_S)
    said = result.stdout.decode("utf-8", "replace").strip()
    if result.status != 0 or said != f"{PROJECT} {VERSION}":
        raise InstallError(
            f"the installed agent does not run as expected: `{PROJECT} --version` said {said or result.stderr_text!r}"
        )
    return said.removeprefix(f"{PROJECT} ")
