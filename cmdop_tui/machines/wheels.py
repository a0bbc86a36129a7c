"""Wheels of this install, for `cmdop-tui machines install`: the project's own, built from the
folder it was installed from (or repacked from its installed files when there is none), and its
dependencies at exactly the versions installed here.

Built once with pip (`pip wheel`, which takes a wheel the index already has and builds the rest)
into a cache folder on this machine and reused: the dependencies' folder is keyed by what they
depend on (the project's requirements, the versions installed here, the interpreter's ABI and
platform), so it changes only when one of those does. The project's wheel is rebuilt once a
run, since a working copy changes under the same version.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from cmdop_tui.machines.agent import DIST_INFO_PREFIX, PROJECT
from cmdop_tui.support.version import VERSION

DONE = "complete"  # written into a dependencies folder once every wheel is in it
PIP_TIMEOUT_S = 900


class WheelsError(Exception):
    """The wheels could not be made; the message says why and what to do."""


@dataclass(frozen=True)
class Wheels:
    project: Path  # cmdop_tui-VERSION-py3-none-any.whl
    dependencies: tuple[Path, ...]

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.project, *self.dependencies)

    @classmethod
    def from_folder(cls, folder: Path) -> Wheels:
        """A folder holding this version's wheel and its dependencies' (`--wheels DIR`)."""
        wheels = sorted(folder.glob("*.whl"))
        ours = [w for w in wheels if w.name.startswith(f"{DIST_INFO_PREFIX}{VERSION}-")]
        if not ours:
            raise WheelsError(f"{folder} holds no wheel of {PROJECT} {VERSION} ({DIST_INFO_PREFIX}{VERSION}-*.whl)")
        return cls(ours[0], tuple(w for w in wheels if not w.name.startswith(DIST_INFO_PREFIX)))


def installed() -> list[importlib.metadata.Distribution]:
    """This project's distributions on the import path, what an installer put there first:
    building a wheel from a source folder leaves an .egg-info in it, which the path may also find."""
    found = importlib.metadata.distributions(name=PROJECT)
    return sorted(found, key=lambda dist: dist.read_text("INSTALLER") is None)


def project_source() -> Path | None:
    """The folder this install was made from (an editable install, or `pip install PATH`);
    None when it was installed from a wheel or an index."""
    direct = next((text for dist in installed() if (text := dist.read_text("direct_url.json"))), None)
    url = urlparse(json.loads(direct).get("url", "")) if direct else None
    folder = Path(unquote(url.path)) if url is not None and url.scheme == "file" else None
    return folder if folder is not None and (folder / "pyproject.toml").is_file() else None


SKIPPED_METADATA = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})  # what installing added


def repack_installed(folder: Path) -> Path:
    """A wheel of this distribution made from its installed files (installed from a wheel or an
    index: no source folder), as pip would have unpacked it: the package and its metadata, a
    fresh RECORD. Scripts are left out; installing the wheel makes them again."""
    dist = next(iter(installed()), None)
    if dist is None:
        raise WheelsError(f"{PROJECT} is not installed as a distribution here: pass --wheels DIR")
    files = [f for f in dist.files or [] if not f.parts[0] == ".." and "__pycache__" not in f.parts]
    info = f"{DIST_INFO_PREFIX}{dist.version}.dist-info"
    tag = next(
        (
            line.split(":", 1)[1].strip()
            for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag:")
        ),
        "",
    )
    if not any(f.parts == ("cmdop_tui", "__init__.py") for f in files) or tag != "py3-none-any":
        raise WheelsError(
            f"this {PROJECT} cannot be repacked into a wheel (its installed files hold no package, or its tag is {tag!r}): pass --wheels DIR"
        )
    target = folder / f"{DIST_INFO_PREFIX}{dist.version}-{tag}.whl"
    records: list[str] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path in files:
            name = "/".join(path.parts)
            if path.parts[0] == info and path.name in SKIPPED_METADATA:
                continue
            data = Path(str(dist.locate_file(path))).read_bytes()
            wheel.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{name},sha256={digest},{len(data)}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*records, f"{info}/RECORD,,"]) + "\n")
    return target


def constraints() -> str:
    """`name==version` for every distribution installed here but this one: what pip must pick."""
    pins: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        if name and name.lower().replace("_", "-") != PROJECT:
            pins.setdefault(name.lower(), f"{name}=={dist.version}")
    return "".join(f"{pin}\n" for pin in sorted(pins.values()))


def dependencies_key(pins: str) -> str:
    requires = importlib.metadata.requires(PROJECT) or []
    facts = [sys.implementation.cache_tag or "", sysconfig.get_platform(), pins, *requires]
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def _pip(*args: str) -> None:
    """`python -m pip ARGS` with this interpreter; its last lines in the error when it fails."""
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    try:
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WheelsError(f"pip could not run here: {exc}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise WheelsError(f"`pip {args[0]}` failed here (exit {done.returncode}):\n{tail}")


def prepare_wheels(cache: Path) -> Wheels:
    """This install's wheels in `cache` (made with pip, or reused from an earlier run)."""
    project_dir = cache / "project"
    project_dir.mkdir(parents=True, exist_ok=True)
    for old in project_dir.glob(f"{DIST_INFO_PREFIX}*.whl"):
        old.unlink()  # a working copy changes under the same version: ours is always rebuilt
    source = project_source()
    if source is None:
        repack_installed(project_dir)
    else:
        _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(project_dir), str(source))
    project = Wheels.from_folder(project_dir).project
    pins = constraints()
    deps_dir = cache / f"deps-{dependencies_key(pins)}"
    if not (deps_dir / DONE).is_file():
        deps_dir.mkdir(parents=True, exist_ok=True)
        pins_file = deps_dir / "constraints.txt"
        pins_file.write_text(pins)
        _pip("wheel", "--quiet", "--wheel-dir", str(deps_dir), "--constraint", str(pins_file), str(project))
        (deps_dir / DONE).write_text("")
    deps = tuple(w for w in sorted(deps_dir.glob("*.whl")) if not w.name.startswith(DIST_INFO_PREFIX))
    return Wheels(project, deps)
