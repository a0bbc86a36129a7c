"""`cmdop-tui machines install`: put this version of the agent on other machines, over ssh.

Per machine: ask its `python3` what it is (version, ABI, platform, whether it can make a venv,
where the user's data dir is); make a venv in `<data dir>/agent`; install into it, from this
install's wheels when the ABI matches this interpreter's (no index needed there), else with pip
from the package index there (this project's own wheel, which is pure Python, is still sent);
then run `<venv>/bin/cmdop-tui --version` there and check it says this version. Wheels go over
the machine's ssh connection (its ControlMaster) as a tar stream, only those not there yet.
Machines are done a few at a time; each one's trouble is its own.
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

from cmdop_tui.machines.agent import PROJECT, VENV
from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SshOptions, SshTransport
from cmdop_tui.machines.wheels import Wheels, WheelsError, prepare_wheels
from cmdop_tui.support.version import VERSION

MIN_PYTHON = (3, 11)
DEFAULT_JOBS = 4
WHEELS = "agent-wheels"  # the wheels' folder in the remote data dir (kept: a reinstall sends only new ones)
PROBE_TIMEOUT_S = 30.0
INSTALL_TIMEOUT_S = 900.0
VENV_FAILED, PIP_FAILED = 5, 6

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
    ) -> None:
        self.options = options
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
        script = install_script(data, there.tag, wheels.project.name, offline=misfit is None)
        result = await transport.run(script, timeout_s=INSTALL_TIMEOUT_S)
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


async def send_wheels(transport: SshTransport, data: str, wheels: Sequence[Path], *, always: Sequence[Path]) -> int:
    """Copy the wheels not there yet (and `always` those) into `<data>/agent-wheels`, as one tar
    stream over the machine's ssh connection; how many were sent."""
    folder = shlex.quote(f"{data}/{WHEELS}")
    listed = await transport.run(f"ls -1 {folder} 2>/dev/null; true", timeout_s=PROBE_TIMEOUT_S)
    present = set(listed.stdout.decode("utf-8", "replace").split())
    missing = [w for w in wheels if w.name not in present or w in always]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for wheel in missing:
            tar.add(wheel, arcname=wheel.name)
    script = f"mkdir -p {folder} && tar -xf - -C {folder}"
    result = await transport.run(script, input=buffer.getvalue(), timeout_s=INSTALL_TIMEOUT_S)
    if result.status != 0:
        raise InstallError(f"the wheels could not be copied there: {result.stderr_text or result.status}")
    return len(missing)


def install_script(data: str, tag: str, project_wheel: str, offline: bool) -> str:
    """The venv (made again when missing or of another Python), then this version's wheel
    (always reinstalled: a working copy changes under one version) and what it needs."""
    venv, wheels = f"{data}/{VENV}", f"{data}/{WHEELS}"
    index = "--no-index " if offline else ""
    pip = (
        f'"$v/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --no-input {index}--find-links "$w"'
    )
    return (
        f"v={venv}; w={wheels}; "
        f'if [ "$("$v/bin/python" -c "import sys; print(sys.implementation.cache_tag)" 2>/dev/null)" != {shlex.quote(tag)} ]; '
        f'then python3 -m venv --clear "$v" >&2 || exit {VENV_FAILED}; fi; '
        f'{pip} --quiet --force-reinstall --no-deps "$w"/{shlex.quote(project_wheel)} >&2 || exit {PIP_FAILED}; '
        f"{pip} --quiet {shlex.quote(f'{PROJECT}=={VERSION}')} >&2 || exit {PIP_FAILED}"
    )


def install_failure(status: int, stderr: str, there: Python, misfit: str | None) -> str:
    tail = "\n".join(stderr.strip().splitlines()[-8:]) or f"exit {status}"
    if status == VENV_FAILED:
        return f"python3 there could not make the venv:\n{tail}"
    if status == PIP_FAILED and misfit is not None:
        return (
            f"pip there could not install {PROJECT} {VERSION}'s dependencies from its package index "
            f"(this install's wheels do not fit: {misfit}). Give it access to an index, or run this "
            f"from an install on {there.shown.removeprefix('Python ')}:\n{tail}"
        )
    return f"pip there failed:\n{tail}"


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
