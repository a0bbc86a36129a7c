"""Home directories as the password database names them, not as ``/home/NAME`` guesses them.

A user's home may be ``/root``, ``/var/lib/postgresql``, ``/srv/alice`` or ``/var/www``: the
floor takes every home from ``pwd.getpwall()`` (read once; the database rarely changes while
the app runs) and ``~user`` from ``pwd.getpwnam``. A ``~user`` the database does not know is
a home whose place is not known (:data:`UNKNOWN_HOME`), so the floor still protects it: the
command may run on another machine, where that user exists.
"""

from __future__ import annotations

import functools
import posixpath

#: Where ``~`` and ``$HOME`` point, and ``~user`` for a user the database does not know: a home
#: directory whose name is not known (the floor's own spelling; no real path looks like it).
UNKNOWN_HOME = "/home/~"

# homes the database gives system users that are no directory of theirs
_NOT_HOMES = frozenset({"", "/", "/nonexistent", "/dev/null", "/var/empty", "/usr/empty"})
# the most homes read from the database (a directory service may list many thousands)
_MAX_HOMES = 4096


@functools.cache
def password_homes() -> tuple[str, ...]:
    """Every home directory of the password database, normalised, longest first; () where
    there is no database."""
    try:
        import pwd

        entries = pwd.getpwall()[:_MAX_HOMES]
    except (ImportError, OSError, KeyError):  # pragma: no cover - Windows, a broken NSS
        return ()
    homes = {posixpath.normpath(entry.pw_dir) for entry in entries if entry.pw_dir.startswith("/")}
    return tuple(sorted(homes - _NOT_HOMES, key=len, reverse=True))


@functools.cache
def _home_set() -> frozenset[str]:
    return frozenset(password_homes())


def home_of(user: str) -> str:
    """The home of `user` (`~user`): the database's, else a home whose place is not known."""
    if user == "root":
        return "/root"
    try:
        import pwd

        home = pwd.getpwnam(user).pw_dir
    except (ImportError, KeyError, OSError):
        return UNKNOWN_HOME
    return posixpath.normpath(home) if home.startswith("/") and home not in _NOT_HOMES else UNKNOWN_HOME


def is_password_home(path: str) -> bool:
    """Is `path` (normalised) the home directory of a user of the password database?"""
    return path in _home_set()


def home_containing(path: str) -> str | None:
    """The deepest home of the password database that `path` is inside (not the home itself):
    each folder above `path` looked up, so the cost does not grow with the database."""
    homes = _home_set()
    end = path.rfind("/")
    while end > 0:
        folder = path[:end]
        if folder in homes:
            return folder
        end = path.rfind("/", 0, end)
    return None
