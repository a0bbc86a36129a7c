"""Custom commands: markdown files that become slash commands, in Claude Code's format.

The project's `.cmdop/commands/` and the user's `commands/` beside the settings file
(`~/.config/cmdop-tui/commands/`) hold them; a file's name is the command's (`review.md`:
`/review`), a subfolder a namespace (`git/commit.md`: `/git:commit`). A file may start with
YAML front matter:

    ---
    description: Review the changes on this branch
    argument-hint: [focus]
    allowed-tools: Bash(git diff:*), Read, Grep
    ---
    Review `git diff main...` with a focus on $ARGUMENTS.

The body is the prompt: `$ARGUMENTS` is what was typed after the command, `$1`..`$9` its words
(quotes group them); a body that uses neither gets the arguments on a line of their own at the
end. Without a description the body's first line stands for it.

`allowed-tools` restricts the tools of that one prompt (Claude Code's names are read as the
tools here that do the same: Bash is `execute_command`, Read `read_file`...; a pattern in
parentheses is not enforced, only the tool). It only ever takes tools away, so a project's file
cannot give itself more than the session has; a project's command cannot replace the user's
own of the same name, and a built-in command wins over both. A file that cannot be read or
parsed is skipped with a one-line note, never fatal. Claude Code's `!`command`` and `@file`
in bodies are not expanded: they reach the model as written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cmdop_tui.config.settings import config_path
from cmdop_tui.support.text import inert_line

if TYPE_CHECKING:  # the runner brings the model SDK: the TUI reads these before it loads
    from cmdop_tui.agent.runner import Runner

PROJECT_DIR = Path(".cmdop") / "commands"
MAX_FILE_BYTES = 100_000  # a larger file is skipped
MAX_COMMANDS = 200  # of each place
MAX_DESCRIPTION = 200
SEGMENT = re.compile(r"[a-z0-9][a-z0-9_.-]*")
PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")

# Claude Code's tool names, as the tools here that do the same.
CLAUDE_TOOLS = {
    "bash": "execute_command",
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "multiedit": "edit_file",
    "glob": "glob",
    "grep": "grep",
    "ls": "list_dir",
    "todowrite": "todo",
    "todoread": "todo",
    "skill": "skill",
    "bashoutput": "job_output",
    "killshell": "job_kill",
    "killbash": "job_kill",
}

Source = Literal["project", "user"]


@dataclass(frozen=True)
class CustomCommand:
    name: str  # "review", "git:commit"
    description: str
    body: str
    source: Source
    path: Path
    argument_hint: str = ""
    allowed_tools: frozenset[str] | None = None  # tool names here; None: the session's tools

    def expand(self, arguments: str) -> str:
        """The prompt: the body with `$ARGUMENTS` and `$1`..`$9` replaced (one pass: what an
        argument holds is never replaced again)."""
        arguments = arguments.strip()
        if not PLACEHOLDER.search(self.body):
            return f"{self.body}\n\nARGUMENTS: {arguments}" if arguments else self.body
        try:
            words = shlex.split(arguments)
        except ValueError:  # an unclosed quote: plain words
            words = arguments.split()

        def value(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == "ARGUMENTS":
                return arguments
            index = int(key) - 1
            return words[index] if index < len(words) else ""

        return PLACEHOLDER.sub(value, self.body)


@dataclass(frozen=True)
class FoundCommands:
    commands: tuple[CustomCommand, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what was skipped or shadowed, and why


def user_commands_dir() -> Path:
    return config_path().parent / "commands"


def find_commands(cwd: Path) -> FoundCommands:
    """The user's and the project's commands, sorted by name; the user's win a clash."""
    notes: list[str] = []
    found: dict[str, CustomCommand] = {}
    places: list[tuple[Path, Source]] = [(user_commands_dir(), "user"), (cwd / PROJECT_DIR, "project")]
    for folder, source in places:
        for command in _read_folder(folder, source, notes):
            kept = found.get(command.name)
            if kept is not None:
                notes.append(f"{command.path}: /{command.name} is already your own ({kept.path}); skipped")
                continue
            found[command.name] = command
    return FoundCommands(tuple(sorted(found.values(), key=lambda c: c.name)), tuple(notes))


def _read_folder(folder: Path, source: Source, notes: list[str]) -> list[CustomCommand]:
    try:
        files = sorted(folder.rglob("*.md")) if folder.is_dir() else []
    except OSError as exc:
        notes.append(f"{folder}: cannot be listed ({exc.strerror or exc}); its commands are skipped")
        return []
    if len(files) > MAX_COMMANDS:
        notes.append(f"{folder}: more than {MAX_COMMANDS} commands; only the first {MAX_COMMANDS} are read")
    commands = [_read_command(folder, path, source, notes) for path in files[:MAX_COMMANDS]]
    return [command for command in commands if command is not None]


def _read_command(folder: Path, path: Path, source: Source, notes: list[str]) -> CustomCommand | None:
    parts = [part.lower() for part in path.relative_to(folder).with_suffix("").parts]
    if not all(SEGMENT.fullmatch(part) for part in parts):
        notes.append(f"{path}: a command's name takes letters, digits, '-', '_' and '.'; skipped")
        return None
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            notes.append(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; skipped")
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        notes.append(f"{path}: cannot be read ({exc.strerror or exc}); skipped")
        return None
    from cmdop_tui.session.skills import split_front_matter  # with the tools, only when a command exists

    front, body = split_front_matter(text)
    meta = _front_matter(path, front, notes)
    if meta is None:
        return None
    body = body.strip()
    description = meta.get("description") or next((line for line in body.splitlines() if line.strip()), "")
    description = inert_line(" ".join(description.lstrip("# ").split()))  # a project's words: shown, inert
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return CustomCommand(
        name=":".join(parts),
        description=description or "(no description)",
        body=body,
        source=source,
        path=path,
        argument_hint=inert_line(" ".join(meta.get("argument-hint", "").split())),
        allowed_tools=_allowed_tools(meta.get("allowed-tools")),
    )


def _front_matter(path: Path, front: str | None, notes: list[str]) -> dict[str, str] | None:
    """The front matter's fields as text (lists of tools joined by commas); None after a note
    when it is not valid."""
    if front is None:
        return {}
    import yaml  # here, not at the top: a start without custom commands need not load it

    try:
        meta = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        meta = _plain_fields(front)  # `argument-hint: [pr] [priority]`, as Claude Code reads it
        if meta is None:
            notes.append(f"{path}: its front matter is not valid YAML ({str(exc).splitlines()[0]}); skipped")
            return None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        notes.append(f"{path}: its front matter is not a set of fields; skipped")
        return None
    hint = re.search(r"^argument-hint:[ \t]*(.*)$", front, re.MULTILINE)
    if hint is not None:  # as written: YAML would read `[pr]` as a list
        meta["argument-hint"] = hint.group(1).strip().strip("'\"")
    fields: dict[str, str] = {}
    for key in ("description", "argument-hint", "allowed-tools"):
        raw = meta.get(key)
        if isinstance(raw, list) and key == "allowed-tools" and all(isinstance(item, str) for item in raw):
            raw = ", ".join(raw)
        if raw is not None and not isinstance(raw, str | int | float):
            notes.append(f"{path}: `{key}` must be text; skipped")
            return None
        if raw is not None:
            fields[key] = str(raw)
    return fields


def _plain_fields(front: str) -> dict[str, str] | None:
    """`key: value` lines, as plain text (None: a line is not one)."""
    fields = {}
    for line in front.splitlines():
        if not line.strip():
            continue
        match = re.fullmatch(r"([A-Za-z][\w-]*):[ \t]*(.*)", line.rstrip())
        if match is None:
            return None
        fields[match.group(1)] = match.group(2)
    return fields


def _allowed_tools(raw: str | None) -> frozenset[str] | None:
    """`Bash(git diff:*), Read, mcp__git__git_log` as the tool names here; None when not given."""
    if raw is None:
        return None
    names = set()
    for entry in re.split(r",(?![^(]*\))|\s+(?![^(]*\))", raw):  # commas or spaces outside (...)
        name = entry.strip().split("(", 1)[0].strip()
        if name:
            names.add(CLAUDE_TOOLS.get(name.lower(), name))
    return frozenset(names)


@contextmanager
def only_tools(runner: Runner, names: frozenset[str] | None) -> Iterator[None]:
    """While the block runs, the runner offers no tool outside `names` (None: no change)."""
    if names is None:
        yield
        return
    before = runner.config.tool_policy.only
    runner.reconfigure(tool_policy=replace(runner.config.tool_policy, only=names))
    try:
        yield
    finally:
        runner.reconfigure(tool_policy=replace(runner.config.tool_policy, only=before))
