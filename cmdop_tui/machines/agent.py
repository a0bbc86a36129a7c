"""Where this project's agent lives on another machine, how to start it there, and which version
it is (shell snippets run over ssh; nothing is needed there beyond a POSIX shell).

`cmdop-tui machines install` puts it in a venv in the remote user's data dir
(`${XDG_DATA_HOME:-~/.local/share}/cmdop-tui/agent`, `~/Library/Application Support/cmdop-tui/agent`
on macOS), which a non-interactive ssh session's PATH does not reach: with the default command the
agent there is preferred (it is the one `install` checked), then `cmdop-tui` on the PATH. A
command configured for the machine (`[machines.NAME] cmdop = ...`) is used as it is.
"""

from __future__ import annotations

import shlex

from cmdop_tui.support.version import VERSION

DEFAULT_CMDOP = "cmdop-tui"
PROJECT = "cmdop-tui"
DIST_INFO_PREFIX = "cmdop_tui-"  # the installed distribution's metadata folder: cmdop_tui-VERSION.dist-info

# Sets $d to the remote user's data dir for this project (what platformdirs' user_data_dir says).
# Remote commands run in bash, whose $OSTYPE saves a `uname`.
DATA_DIR_SH = (
    'case "$OSTYPE" in darwin*) d="$HOME/Library/Application Support/cmdop-tui";; '
    '*) d="${XDG_DATA_HOME:-$HOME/.local/share}/cmdop-tui";; esac'
)
VENV = "agent"  # the venv's folder in the data dir
# The machine's workspace, beside the data dir (not in it: the agent there hides its own data dir
# from its commands): where commands, file tools and the agent work there, what they may write.
WORKSPACE_NAME = "cmdop-tui-workspace"
IN_WORKSPACE_SH = f'{DATA_DIR_SH}; w="${{d%/*}}/{WORKSPACE_NAME}"; mkdir -p -m 700 -- "$w" && cd -- "$w" || exit 1'

# pip (distlib) writes this header when the interpreter's path cannot be a shebang (it has a
# space, or is too long): `#!/bin/sh`, then `'''exec' PYTHON "$0" "$@"`, PYTHON in double quotes
# when it has a space. Sets $py to PYTHON when the script's second line ($l2) is such a line.
WRAPPER_EXEC = "'''exec' "
SH_WRAPPER_SH = (
    f'case "$l2" in "{WRAPPER_EXEC}"*) py=${{l2#"{WRAPPER_EXEC}"}}; '
    """case "$py" in '"'*) py=${py#'"'}; py=${py%%'"'*};; *) py=${py%% *};; esac;; esac; """
)
NO_AGENT = "none"
UNKNOWN_VERSION = "?"


def agent_command(cmdop: str, arguments: str, *, in_workspace: bool = False) -> str:
    """The shell command that runs the agent there with `arguments` (already quoted); in the
    machine's workspace when `in_workspace` (never the home: its sandbox would make that
    writable whole).

    Exit status 127 when there is none."""
    enter = f"{IN_WORKSPACE_SH}; " if in_workspace else ""
    if cmdop != DEFAULT_CMDOP:
        return f"{enter}{cmdop} {arguments}"
    return f'{enter}{DATA_DIR_SH}; a="$d/{VENV}/bin/{PROJECT}"; [ -x "$a" ] || a={PROJECT}; exec "$a" {arguments}'


def agent_probe(cmdop: str) -> str:
    """A snippet printing `agent:VERSION` for the agent `agent_command` would start (`agent:?`
    when its version cannot be told, `agent:none` when there is none).

    The version is read from the installed distribution's metadata folder beside the script's
    interpreter (a venv, pipx, `pip install --user`), with shell builtins: a probe starts no
    Python and no other process. The interpreter is the script's shebang or, when pip could not
    write one (its path has a space, as macOS's "Application Support", or is longer than the
    kernel takes), the one its `#!/bin/sh` header's second line execs; failing both, the folder
    beside the script's own (a venv's bin) is looked in."""
    if cmdop == DEFAULT_CMDOP:
        find = f'{DATA_DIR_SH}; a="$d/{VENV}/bin/{PROJECT}"; [ -x "$a" ] || a=$(command -v {PROJECT} 2>/dev/null)'
    elif len(shlex.split(cmdop)) == 1:
        find = f"a=$(command -v {cmdop} 2>/dev/null)"
    else:  # a command line of the user's: whatever it runs cannot be told from here
        return f"echo agent:{UNKNOWN_VERSION}"
    return (
        find + f'; if [ -z "$a" ]; then echo agent:{NO_AGENT}; else '
        '{ IFS= read -r py; IFS= read -r l2; } < "$a"; py=${py#\\#!}; py=${py# }; py=${py%% *}; '
        + SH_WRAPPER_SH
        + 'v=""; for b in "${py%/*}" "${a%/*}"; do for m in "$b"/../lib/python*/site-packages/'
        + DIST_INFO_PREFIX
        + "*.dist-info; do "
        '[ -d "$m" ] && { v=${m##*/' + DIST_INFO_PREFIX + "}; v=${v%.dist-info}; break 2; }; done; done; "
        f'echo "agent:${{v:-{UNKNOWN_VERSION}}}"; fi'
    )


def parse_agent(line: str) -> str:
    """The version an `agent:` line names ("none", "?" or a version)."""
    return line.removeprefix("agent:").strip() or UNKNOWN_VERSION


def agent_label(agent: str) -> str:
    """What a probe found, said in a few words: `agent ✓ 0.1.0` (this version), `agent 0.0.9
    (differs)`, `agent ?` (version unknown), `no agent`; "" when not known yet."""
    if not agent:
        return ""
    if agent == NO_AGENT:
        return "no agent"
    if agent == VERSION:
        return f"agent ✓ {VERSION}"
    return "agent ?" if agent == UNKNOWN_VERSION else f"agent {agent} (differs)"
