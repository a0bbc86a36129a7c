"""Variables that make programs run commands: ``LESSOPEN='|cmd %s' less f``, ``GIT_PAGER``,
``EDITOR``, ``GIT_SSH_COMMAND``, ``BASH_ENV``, ``PROMPT_COMMAND``, ``PS4``, ``LD_PRELOAD``...

However a variable is set (``NAME=value cmd``, ``export``, ``declare``, ``env NAME=value``), a
value that is a command line is checked as one, a program path as a command, a file a shell
sources as sourced; a value that loads code the floor does not read (a library to preload,
options that make an interpreter run code) is a doubt: only a person may allow it.
"""

from __future__ import annotations

import re

from .context import Ctx, doubt
from .scanning import substitutions, words

# the value is a shell command line, run by the program that reads it
_COMMAND_LINES = words(
    "PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER BAT_PAGER DELTA_PAGER EDITOR VISUAL GIT_EDITOR "
    "GIT_SEQUENCE_EDITOR SYSTEMD_EDITOR SUDO_EDITOR SUDO_ASKPASS GIT_SSH_COMMAND GIT_EXTERNAL_DIFF "
    "GIT_PROXY_COMMAND GIT_ASKPASS SSH_ASKPASS GIT_SSH RSYNC_RSH CVS_RSH BROWSER DIFFPROG MERGEPROG "
    "FZF_DEFAULT_COMMAND LESSOPEN LESSCLOSE PROMPT_COMMAND"
)
# the value is a file the shell sources before it runs anything
_SOURCED_FILES = words("BASH_ENV ENV ZDOTDIR")
# prompts: the command substitutions in them run when the prompt is shown (PS4 with set -x)
_PROMPTS = words("PS0 PS1 PS2 PS3 PS4")
# the value loads code the floor does not read
_CODE_LOADERS = words(
    "LD_PRELOAD LD_AUDIT DYLD_INSERT_LIBRARIES PERL5OPT PERL5DB RUBYOPT NODE_OPTIONS PYTHONSTARTUP "
    "PYTHONWARNINGS GIT_CONFIG_PARAMETERS GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_TEMPLATE_DIR "
    "GIT_EXEC_PATH GCONV_PATH"
)
_GIT_CONFIG_VALUE = re.compile(r"GIT_CONFIG_VALUE_\d+")


def assignment_scripts(name: str, values: tuple[str, ...]) -> list[str]:
    """The shell code that setting `name` to one of `values` makes a program run later."""
    found: list[str] = []
    for value in values:
        if not value:
            continue
        if name in _COMMAND_LINES or _GIT_CONFIG_VALUE.fullmatch(name):
            found.append(re.sub(r"%[sS%]", "file", value.lstrip("|-")))
        elif name == "TAR_OPTIONS":  # options every tar of the line takes (--to-command=...)
            found.append("tar " + value)
        elif name in _SOURCED_FILES:
            found.append("source " + _quote(value.rstrip("/") + ("/.zshenv" if name == "ZDOTDIR" else "")))
        elif name in _PROMPTS:
            found.extend(substitutions(value))
    return found


def check_assignment(name: str, values: tuple[str, ...], ctx: Ctx, snippet: str) -> None:
    """A doubt when setting `name` loads code the floor does not read (LD_PRELOAD=x.so)."""
    if name in _CODE_LOADERS and any(value.strip() for value in values):
        doubt(ctx, snippet, f"sets {name}, which makes programs load code that cannot be checked before it runs")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
