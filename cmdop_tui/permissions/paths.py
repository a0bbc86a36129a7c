"""The floor's map of the file system: what is critical to keep, what is a secret, what a disk.

Paths are judged after :func:`resolve` (``..`` folded, relative paths joined to a known
directory, ``/proc/<pid>/root`` taken off). ``~`` and ``$HOME`` become :data:`HOME`, a home
directory whose name is not known; homes come from the password database too (:mod:`.homes`),
secrets from the credential stores of every kind (:mod:`.stores`), disks from every name a
block device goes by (:mod:`.devices`). A value that cannot be known before the command runs
is :data:`UNKNOWN` (the environment's), :data:`RUNTIME` (what a command substitution prints)
or :data:`OPAQUE` (what the command computes in a way the floor does not follow). A path may
still hold glob characters (``rm -rf /*``): it is then judged by what it could match.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Literal

from cmdop_tui.support.secret_kinds import is_env_file

from .devices import block_device, block_device_here
from .globs import glob_matches, glob_path_matches, has_glob
from .homes import UNKNOWN_HOME, home_containing, home_of, is_password_home, password_homes
from .scanning import words
from .stores import (
    STORE_MARK,
    environment_generation,
    environment_home,
    environment_store,
    marked_store,
    store_below_home,
)

__all__ = ["block_device", "block_device_here", "glob_matches", "has_glob"]

HOME = UNKNOWN_HOME  # where ~ and $HOME point: a home directory whose name we do not know
UNKNOWN = "\x00"  # a non-empty value that cannot be known before the command runs
RUNTIME = "\x01"  # what a command substitution prints, when that cannot be known before it runs
OPAQUE = "\x03"  # what the command computes in a way the floor does not follow (it may choose it)
FLOOR_NOTE = "(safety floor: no rule, mode or approval can allow this)"
# what a command substitution may print, for a path built from one
_RUNTIME_SAMPLES = ("/", HOME, "/etc", "/usr", "..", "/dev/sda")
# /proc/<pid>/root/...: the same file system, seen through a process; /proc/<pid>/cwd/...: a
# directory that is not known
_PROC_ROOT = re.compile(r"^/proc/[^/]+/root(?=/|$)")
# stores' names a project also uses for its own files (`.vercel/project.json`): a relative path
# in a folder that is not known is not taken for the home's store
_PROJECT_FOLDERS = frozenset({".vercel", ".netlify", ".wrangler", ".fly", ".heroku", ".history", ".azure", ".docker"})
_PROC_CWD = re.compile(r"^/proc/[^/]+/cwd(?:/|$)")

_SYSTEM_TOP = words(
    "bin boot dev etc home lib lib32 lib64 libx32 mnt media opt proc root sbin snap srv sys usr "
    "var Users System Library Applications Volumes private"
)
_SYSTEM_SECOND = words(
    "usr/bin usr/sbin usr/lib usr/lib32 usr/lib64 usr/libexec usr/local usr/share usr/include "
    "var/lib boot/efi System/Library private/etc private/var"
)
# names most directories hold: a glob matching several of them matches "everything"
_BROAD_SAMPLES = (
    "bin",
    "lib",
    "etc",
    "share",
    "local",
    "passwd",
    "hosts",
    "Documents",
    "src",
    ".ssh",
    ".config",
    ".bashrc",
    ".profile",
    ".local",
)
KEY_SAMPLES = ("id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk", "id_ecdsa_sk")
HOST_KEY_SAMPLES = ("ssh_host_rsa_key", "ssh_host_ed25519_key", "ssh_host_ecdsa_key")
_ENV_SAMPLES = (".env", ".env.local", ".env.production")
_SHADOW_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/master.passwd")
_SUDOERS_FILES = ("/etc/sudoers", "/etc/sudoers.d", "/etc/sudoers.d/x", "/private/etc/sudoers")

# files that run code later (persistence): written, they are refused; read, they pass
_SSH_PERSIST = words("authorized_keys authorized_keys2 config rc environment")
_STARTUP_FILES = words(
    ".bashrc .bash_profile .bash_login .bash_logout .bash_aliases .profile .zshrc .zshenv .zprofile .zlogin .zlogout "
    ".kshrc .mkshrc .cshrc .tcshrc .login .logout .xprofile .xinitrc .xsession .xsessionrc"
)
_HOME_PERSIST_DIRS = (
    ".config/systemd/user",
    ".config/autostart",
    ".config/fish",
    ".config/environment.d",
    "Library/LaunchAgents",
)
_SYSTEM_PERSIST = words(
    "/etc/profile /etc/bash.bashrc /etc/bashrc /etc/environment /etc/ld.so.preload /etc/zshrc /etc/zshenv "
    "/etc/zprofile /etc/zlogin /etc/csh.cshrc /etc/csh.login /etc/crontab /etc/anacrontab /etc/rc.local "
    "/etc/ssh/sshd_config /private/etc/profile /private/etc/bashrc /private/etc/zshrc"
)
_SYSTEM_PERSIST_DIRS = (
    "/etc/profile.d",
    "/etc/zsh",
    "/etc/cron.d",
    "/etc/cron.hourly",
    "/etc/cron.daily",
    "/etc/cron.weekly",
    "/etc/cron.monthly",
    "/var/spool/cron",
    "/var/at/tabs",
    "/usr/lib/cron/tabs",
    "/etc/ssh/sshd_config.d",
)


def broad(glob: str) -> bool:
    """A glob that matches most names in a directory (`*`, `.*`, `?*`, `[a-z]*`...)."""
    return sum(glob_matches(glob, name) for name in _BROAD_SAMPLES) >= 3


def show(path: str) -> str:
    """A resolved path as the user wrote it, near enough."""
    if path == HOME or path.startswith(HOME + "/"):
        path = "~" + path[len(HOME) :]
    store = marked_store(path)
    if store is not None:
        path = "$" + store
    for mark in (UNKNOWN, RUNTIME, OPAQUE):
        path = path.replace(mark, "…")
    return path or "''"


def unknowable(value: str) -> bool:
    """Does `value` hold a part that cannot be known before the command runs?"""
    return UNKNOWN in value or RUNTIME in value or OPAQUE in value


def chosen_by_command(value: str) -> bool:
    """Does `value` hold a part the command itself computes (a substitution's output, or what
    the floor does not follow), rather than the environment's?"""
    return RUNTIME in value or OPAQUE in value


def resolve(value: str, cwd: str | None) -> str:
    """`value` as a normalised path: relative paths joined to `cwd` when it is known.

    A leading `~` that bash did not expand (quoted, or from a variable) is still taken for the
    home directory: a model that wrote it meant that, and the floor fails closed.
    """
    if value == "":
        return ""
    path = expand_tilde(value) if value.startswith("~") else value
    if not path.startswith("/") and cwd:
        path = cwd.rstrip("/") + "/" + path
    path = re.sub(r"/{2,}", "/", path)
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    while normal.startswith("/proc/"):
        through_root = _PROC_ROOT.sub("", normal, count=1)
        if through_root != normal:
            normal = through_root or "/"
            continue
        if _PROC_CWD.match(normal):  # somewhere a process is: a directory that is not known
            normal = normal.split("/", 4)[4] if normal.count("/") > 3 else "."
        break
    return normal


def expand_tilde(path: str) -> str:
    """`~`, `~user` and `$HOME` at the start of a path, as the floor spells them."""
    if path == "~" or path.startswith("~/"):
        return HOME + path[1:]
    match = re.match(r"~([A-Za-z_][\w.-]*)(/.*)?$", path)
    if match:
        return home_of(match.group(1)) + (match.group(2) or "")
    for spelling in ("$HOME", "${HOME}"):
        if path == spelling or path.startswith(spelling + "/"):
            return HOME + path[len(spelling) :]
    return path


def runtime_samples(value: str, cwd: str | None) -> list[str]:
    """The paths `value` may be when a command substitution in it (RUNTIME) prints `/`, a home,
    a system directory, `..` or a disk; [] when it holds none."""
    if RUNTIME not in value:
        return []
    return [resolve(value.replace(RUNTIME, sample), cwd) for sample in _RUNTIME_SAMPLES]


def runtime_critical(value: str, cwd: str | None) -> str | None:
    """What `value` may destroy if a command substitution in it prints the wrong thing."""
    for sample in runtime_samples(value, cwd):
        what = critical(sample)
        if what:
            return f"{what} (the path comes from a command substitution that cannot be checked before it runs)"
    return None


def home_dir(path: str) -> bool:
    """Is the resolved `path` a home directory (by its place, the password database, $HOME)?"""
    parts = path.split("/")
    if path in ("/root", "/var/root") or is_password_home(path) or path == environment_home():
        return True
    return len(parts) == 3 and parts[0] == "" and parts[1] in ("home", "Users") and parts[2] != ""


def critical(path: str) -> str | None:
    """What deleting (or moving away, or chmod -R) `path` would destroy, or None."""
    if not path.startswith("/"):
        return None
    if path == "/":
        return "the whole file system"
    comps = path[1:].split("/")
    if len(comps) == 1:
        return _critical_top(path, comps[0])
    if len(comps) == 2:
        return _critical_second(path, comps)
    if len(comps) == 3 and comps[0] in ("home", "Users") and has_glob(comps[2]) and broad(comps[2]):
        return f"everything in a home directory ({show(path)})"
    return _critical_home(path)


def _critical_home(path: str) -> str | None:
    """A home of the password database or of $HOME, wherever it is (/var/lib/postgresql,
    /srv/alice), or everything in one."""
    if home_dir(path):
        return f"a home directory ({show(path)})"
    folder, leaf = posixpath.split(path)
    if has_glob(leaf) and broad(leaf) and home_dir(folder):
        return f"everything in a home directory ({show(path)})"
    if has_glob(path) and any(glob_path_matches(path, home) for home in password_homes()):
        return f"a home directory ({show(path)})"
    return None


def _critical_top(path: str, name: str) -> str | None:
    """`/name`: the root's own directories."""
    if has_glob(name) and any(glob_matches(name, top) for top in _SYSTEM_TOP):
        return f"everything in / ({path})"
    if name in ("root",):
        return "the home directory of root (/root)"
    if name in _SYSTEM_TOP:
        return f"the system directory {path}"
    return None


def _critical_second(path: str, comps: list[str]) -> str | None:
    """`/a/b`: home directories and the system's second level."""
    if comps[0] in ("home", "Users") or (has_glob(comps[0]) and glob_matches(comps[0], "home")):
        if has_glob(comps[1]):
            return f"every home directory ({show(path)})" if broad(comps[1]) or comps[1] == "*" else None
        return f"a home directory ({show(path)})"
    if path == "/var/root":
        return "a home directory (/var/root)"
    joined = "/".join(comps)
    if any(glob_path_matches(joined, sys2) for sys2 in _SYSTEM_SECOND):
        return f"the system directory {path}"
    if (comps[0] in _SYSTEM_TOP or comps[0] == "root") and has_glob(comps[1]) and broad(comps[1]):
        what = "the home directory of root" if comps[0] == "root" else f"/{comps[0]}"
        return f"everything in {what} ({path})"
    return None


PathClass = Literal["key", "env", "shadow", "sudoers", "keydir", "persist", "cred"]
#: The classes whose content may not be read.
SECRET_CLASSES = ("key", "env", "shadow", "cred")
#: The classes that may be written (the others may not).
WRITABLE_CLASSES = ("keydir", "cred")


def path_class(path: str) -> tuple[PathClass, str] | None:
    """Is `path` (resolved, possibly a glob) protected? (class, description).

    key, env, shadow: secrets, neither read nor written. cred: credential stores, not read
    (setting them up writes them). sudoers, persist: read freely, never written (persist: files
    that run code later, at login or on a schedule). keydir: a folder of keys or credentials,
    named freely but not copied or searched whole. Remembered for the paths seen lately (one
    command line asks of the same path many times), while the environment stays the same.
    """
    if not path:
        return None
    return _path_class(path, environment_generation())


@functools.lru_cache(maxsize=2048)
def _path_class(path: str, generation: int) -> tuple[PathClass, str] | None:
    comps = path.split("/")
    name = comps[-1]
    parent = comps[-2] if len(comps) > 1 else ""
    shown = show(path)
    found = _key_class(name, parent, shown) or _env_class(name, shown) or _persist_class(path, shown)
    if found is not None:
        return found
    # password hashes
    for shadow in _SHADOW_FILES:
        if glob_path_matches(path, shadow) if has_glob(path) else path == shadow:
            return "shadow", f"{shadow} (password hashes)"
    for sudoers in _SUDOERS_FILES:
        if (
            glob_path_matches(path, sudoers)
            if has_glob(path)
            else (path == sudoers or path.startswith("/etc/sudoers.d/"))
        ):
            return "sudoers", f"the sudo configuration ({shown})"
    # directories that hold private keys
    if glob_matches(name, ".ssh") or path == "/etc/ssh":
        return "keydir", f"the SSH key directory {shown}"
    return _credential_class(path, shown)


def _credential_class(path: str, shown: str) -> tuple[PathClass, str] | None:
    """Credential stores of every kind (:mod:`.stores`): in a home (~/.aws/credentials,
    ~/.config/rclone, ~/.bash_history...), where this machine's environment puts them, and
    named by the variable that relocates them ($KUBECONFIG); the folders of them themselves
    (~/.aws) may be named, not read whole."""
    if STORE_MARK in path:
        return "cred", f"the credential store {shown}"
    rest = _home_rest(path)
    if rest and not (not path.startswith("/") and rest[0] in _PROJECT_FOLDERS):
        found = store_below_home(rest)
        if found is not None:
            return ("cred", f"credentials ({shown})") if found else ("keydir", f"the credentials folder {shown}")
    if path.startswith("/") and environment_store(path):
        return "cred", f"credentials ({shown})"
    return None


def _key_class(name: str, parent: str, shown: str) -> tuple[PathClass, str] | None:
    """SSH private keys: .ssh/id_* (not *.pub), ssh_host_*_key."""
    if parent and glob_matches(parent, ".ssh"):
        if has_glob(name):
            if any(glob_matches(name, sample) for sample in KEY_SAMPLES):
                return "key", f"an SSH private key ({shown})"
        elif name.startswith("id_") and not name.endswith(".pub"):
            return "key", f"an SSH private key ({shown})"
    if has_glob(name):
        if any(glob_matches(name, sample) for sample in HOST_KEY_SAMPLES) and parent and glob_matches(parent, "ssh"):
            return "key", f"an SSH host key ({shown})"
    elif re.fullmatch(r"ssh_host_\w+_key", name):
        return "key", f"an SSH host key ({shown})"
    return None


def _env_class(name: str, shown: str) -> tuple[PathClass, str] | None:
    """.env files at any depth, but not .env.example and its kind."""
    if has_glob(name):
        if any(glob_matches(name, sample) for sample in _ENV_SAMPLES):
            return "env", f"a .env file ({shown})"
    elif is_env_file(name):
        return "env", f"a .env file ({shown})"
    return None


def _named(name: str, names: frozenset[str]) -> bool:
    """Is `name` (perhaps a glob) one of `names`, or a glob that may match one?"""
    return any(glob_matches(name, known) for known in names) if has_glob(name) else name in names


def _under(comps: list[str], folder: str) -> bool:
    """Are the path components `comps` (perhaps globs) the folder `folder` or inside it?"""
    wanted = folder.strip("/").split("/")
    return len(comps) >= len(wanted) and all(glob_matches(c, w) for c, w in zip(comps, wanted, strict=False))


def _home_rest(path: str) -> list[str] | None:
    """The components of `path` below a home directory, None when it is not in one. A relative
    path whose directory is unknown may be in one."""
    comps = path.split("/")
    if not path.startswith("/"):
        return [c for c in comps if c not in ("", ".")]
    home = home_containing(path)
    own = environment_home()
    if own and path.startswith(own + "/") and (home is None or len(own) > len(home)):
        home = own
    if home is not None and home.count("/") >= 2:  # deeper than /home/NAME: /home/groups/NAME
        return path[len(home) + 1 :].split("/")
    if len(comps) >= 4 and (comps[1] in ("home", "Users") or glob_matches(comps[1], "home")):
        return comps[3:]
    if comps[1] == "root":
        return comps[2:]
    if comps[1:3] == ["var", "root"]:
        return comps[3:]
    return path[len(home) + 1 :].split("/") if home is not None else None


def _persist_class(path: str, shown: str) -> tuple[PathClass, str] | None:
    """Files that run code later: SSH logins, shell start-up files, crontabs, autostart units."""
    comps = path.split("/")
    parent = comps[-2] if len(comps) > 1 else ""
    if parent and glob_matches(parent, ".ssh") and _named(comps[-1], _SSH_PERSIST):
        return "persist", f"the SSH login configuration ({shown}), which decides who logs in and what runs"
    rest = _home_rest(path)
    if rest is not None:
        if len(rest) == 1 and _named(rest[0], _STARTUP_FILES):
            return "persist", f"a shell start-up file ({shown}), run at every login"
        if any(_under(rest, folder) for folder in _HOME_PERSIST_DIRS):
            return "persist", f"a login or autostart file ({shown}), run at every login"
    if not path.startswith("/"):
        return None
    if any(glob_path_matches(path, known) if has_glob(path) else path == known for known in _SYSTEM_PERSIST):
        return "persist", f"{shown}, which runs code at every login, boot or on a schedule"
    if any(_under(comps[1:], folder) for folder in _SYSTEM_PERSIST_DIRS):
        return "persist", f"{shown}, which runs code at every login or on a schedule"
    return None
