"""Secrets loaded into the environment, then printed: ``set -a; . ./.env; env``.

Sourcing a .env file is allowed (commands that only *use* its values pass), but once a command
line has done so (``source``/``.`` of a .env file, in any nested script), printing the
environment is refused: ``env``, ``printenv``, bare ``set``, ``export``/``declare``/``typeset``
listings (``-p``, ``-x``), ``compgen -v``/``-e``, ``echo``/``printf`` of a variable the line did
not set or of ``${!name}``, ``/proc/*/environ``, and interpreter code that reads the
environment. ``docker run --env-file .env IMAGE env`` prints it from inside a container, and is
refused too.
"""

from __future__ import annotations

import re

from .context import Arg, Ctx, refuse
from .paths import path_class, resolve
from .scanning import words

# variables every shell sets, whose values are not secrets
_SHELL_VARS = words(
    "HOME PWD OLDPWD USER LOGNAME HOSTNAME SHELL PATH TERM LANG RANDOM UID EUID PPID SECONDS LINENO "
    "BASHPID BASH BASH_VERSION HOSTTYPE OSTYPE MACHTYPE IFS PS1 PS2 PS4 SHLVL"
)
_LISTERS = frozenset({"export", "declare", "typeset", "readonly"})
_ENV_CODE = re.compile(r"environ|process\.env|%ENV|\bENV\b|getenv|\$_ENV|\$_SERVER|Deno\.env|os\.Getenv", re.IGNORECASE)
_PROC_ENVIRON = re.compile(r"^/proc/[^/]+/environ$")
_PRINTERS = frozenset({"echo", "printf", "print"})


def note_sourcing(name: str, argv: list[Arg], ctx: Ctx) -> None:
    """`source FILE`, `. FILE`: remember that a .env file's secrets are now in the environment."""
    if name not in ("source", "."):
        return
    for arg in argv[1:2]:
        for value in arg.values:
            found = path_class(resolve(value, ctx.cwd))
            if found and found[0] == "env":
                ctx.facts.env_loaded = True


def check_env_print(name: str, argv: list[Arg], ctx: Ctx, snippet: str, *, wrapped: bool = False) -> None:
    """Printing the environment after a .env file was sourced; `docker --env-file` then env.

    `wrapped`: `env` ran a command (it prints nothing itself)."""
    if name in ("docker", "podman") and _container_prints_env(argv):
        raise refuse(snippet, "would print the secrets of a .env file (--env-file) from inside a container")
    if not ctx.facts.env_loaded:
        return
    texts = [a.text for a in argv[1:]]
    jq_env = name in ("jq", "gojq", "yq") and any(re.search(r"\$?\benv\b|\$ENV", t) for t in texts)
    if _prints_environment(name, texts, wrapped) or _prints_variables(name, argv, ctx) or jq_env:
        raise refuse(snippet, "would print the environment after a .env file was loaded into it, showing its secrets")
    if any(_PROC_ENVIRON.match(resolve(v, ctx.cwd)) for a in argv[1:] for v in a.values):
        raise refuse(snippet, "would print a process environment after a .env file was loaded into it")


def check_env_read(path: str, ctx: Ctx, snippet: str) -> None:
    """Reading `path` (a `<` redirection): a process environment, once a .env file is loaded."""
    if ctx.facts.env_loaded and _PROC_ENVIRON.match(path):
        raise refuse(snippet, "would print a process environment after a .env file was loaded into it")


def check_env_code(code: str, ctx: Ctx, snippet: str) -> None:
    """Interpreter code reading the environment after a .env file was loaded into it."""
    if ctx.facts.env_loaded and _ENV_CODE.search(code):
        raise refuse(snippet, "would read the environment after a .env file was loaded into it, showing its secrets")


def _prints_environment(name: str, texts: list[str], wrapped: bool) -> bool:
    options = [t for t in texts if t.startswith(("-", "+"))]
    operands = [t for t in texts if not t.startswith(("-", "+"))]
    if name == "env":
        return not wrapped
    if name == "printenv":
        return True
    if name == "set":
        return not texts
    if name in _LISTERS:
        return not operands or any(re.fullmatch(r"-[a-zA-Z]*p[a-zA-Z]*", o) for o in options)
    if name == "compgen":
        return any(re.fullmatch(r"-[a-zA-Z]*[ve][a-zA-Z]*", o) for o in options) or any(
            t in ("variable", "export") for t in texts
        )
    return False


def _prints_variables(name: str, argv: list[Arg], ctx: Ctx) -> bool:
    """echo/printf of `${!name}` or of a variable this command line did not set."""
    if name not in _PRINTERS:
        return False
    for arg in argv[1:]:
        if "${!" in arg.raw:
            return True
        used = re.findall(r"\$\{?([A-Za-z_]\w*)", arg.raw)
        if any(var not in ctx.vars and var not in _SHELL_VARS for var in used):
            return True
    return False


def _container_prints_env(argv: list[Arg]) -> bool:
    """docker/podman run --env-file F IMAGE env|printenv|set."""
    texts = [a.text for a in argv[1:]]
    if not any(t == "--env-file" or t.startswith("--env-file=") for t in texts):
        return False
    return any(t in ("env", "printenv", "set", "export") for t in texts)
