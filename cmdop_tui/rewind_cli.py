"""`cmdop-tui rewind`: a recorded session's turns, and going back to one, headless.

    cmdop-tui rewind [--session ID]            each turn: what it changed on each machine
    cmdop-tui rewind --turn N [--dry-run]      the diff, what cannot be restored, then the files
                     [--files-only | --conversation-only] [--force]   and the conversation

The session is the most recent one recorded in this working directory (or `--session`, an id or
its prefix, as `--resume` takes them). It opens offline, in the directory it was recorded in,
with the settings' machines: no API key is needed, no MCP server starts, nothing is sent to a
model. The work is the session's (`Session.turns`, `rewind_plan`, `rewind`: session/rewind.py);
this is its command line. Nothing is written before the diff is printed; a file changed by
someone else since the session left it is not overwritten without `--force` (exit 1, the list on
stderr). Restoring keeps the present first: the command it prints undoes the rewind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui import transcripts
from cmdop_tui.config.settings import Settings, SettingsError, load_settings
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.permissions import PermissionsError
from cmdop_tui.session.checkpoint_records import checkpoints_dir
from cmdop_tui.session.rewind import MachinePlan, RewindError, RewindPlan, Rewound, TurnSummary
from cmdop_tui.session.session import Session
from cmdop_tui.support.text import inert_line, strip_terminal_sequences

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 130
MINUS = "\N{MINUS SIGN}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cmdop-tui rewind",
        description="A session's turns and what each changed; go back to before one (files and conversation).",
    )
    p.add_argument("--session", metavar="ID", help="the session (an id or its prefix; default: the latest here)")
    p.add_argument("--turn", type=int, metavar="N", help="go back to before turn N (without it: list the turns)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--files-only", action="store_true", help="restore the files, keep the conversation")
    only.add_argument("--conversation-only", action="store_true", help="take the conversation back, not the files")
    p.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    p.add_argument("--force", action="store_true", help="overwrite files changed by someone else since")
    return p


@dataclass(frozen=True)
class Chosen:
    """The session to rewind: its transcript and the directory it was recorded in."""

    id: str
    path: Path
    cwd: Path


def rewind_main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings()
        chosen = choose_session(args.session, Path.cwd())
    except (SettingsError, transcripts.SessionError) as exc:
        return fail(str(exc))
    settings = settings.with_run(resume=str(chosen.path), continue_latest=False)
    try:
        return asyncio.run(rewind_session(settings, chosen, args))
    except (transcripts.SessionError, RewindError, MachineError, PermissionsError, SettingsError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return fail("stopped", EXIT_STOPPED)


def fail(message: str, code: int = EXIT_FAILED) -> int:
    sys.stderr.write(f"cmdop-tui: {inert_line(message)}\n")
    return code


def choose_session(given: str | None, here: Path) -> Chosen:
    """The session `given` names (an id, a prefix or a path), else the latest recorded in `here`.
    Raises SessionError (SessionNotFoundError when there is none)."""
    if given is not None:
        found = transcripts.info(transcripts.resolve(given))
    else:
        mine = [s for s in transcripts.list_sessions() if _same_dir(s.cwd, here) and _has_turns(s)]
        if not mine:
            raise transcripts.SessionNotFoundError(f"no session was recorded in {here}: name one with --session ID")
        found = mine[0]
    cwd = Path(found.cwd) if found.cwd else here
    if not cwd.is_dir():
        raise transcripts.SessionError(f"session {found.id} worked in {cwd}, which is no longer a folder")
    return Chosen(found.id, found.path, cwd)


def _has_turns(session: transcripts.SessionInfo) -> bool:
    """Whether the session holds a conversation or checkpoints (one rewound to its start has none of
    the first)."""
    return bool(session.messages) or (checkpoints_dir() / "sessions" / session.id).is_dir()


def _same_dir(recorded: str, here: Path) -> bool:
    return bool(recorded) and os.path.realpath(recorded) == os.path.realpath(here)


async def rewind_session(settings: Settings, chosen: Chosen, args: argparse.Namespace) -> int:
    """List the turns, or plan, show and do the rewind `args` asks for; the exit code."""
    async with Session(settings, platform="headless", cwd=chosen.cwd, offline=True) as session:
        turns = await session.turns()
        if not turns:
            return fail(f"session {chosen.id} kept no checkpoints: nothing to rewind")
        if args.turn is None:
            print(turns_text(turns, chosen.id))
            return EXIT_OK
        plan = await session.rewind_plan(args.turn)
        files, conversation = not args.conversation_only, not args.files_only
        print(plan_text(plan, chosen.id, files=files))
        if files and plan.conflicts and not args.force:
            return fail(
                "not rewound: changed since the session left them (--force overwrites them): "
                + ", ".join(plan.conflicts)
            )
        if args.dry_run:
            print("dry run: nothing was written")
            return EXIT_OK
        done = await session.rewind(plan, files=files, conversation=conversation, force=args.force)
        print(outcome_text(done, chosen.id))
        return EXIT_FAILED if done.files is not None and done.files.failed else EXIT_OK


# --- what is printed ----------------------------------------------------------------------------


def turns_text(turns: list[TurnSummary], session: str) -> str:
    """`#N  when  prompt`, a line per machine it changed, and what no checkpoint undoes."""
    lines = [f"session {session}"]
    for turn in turns:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(turn.at))
        lines.append(f"#{turn.turn}  {when}  {_prompt_line(turn.prompt)}")
        for machine in turn.machines:
            if machine.note:
                lines.append(f"    {machine.machine}: {inert_line(machine.note)}")
            else:
                added, removed = machine.lines
                lines.append(f"    {machine.machine}: {len(machine.files)} files +{added} {MINUS}{removed}")
        if not turn.machines:
            lines.append("    no files changed")
        lines += [f"    cannot be undone: {inert_line(text)}" for text in turn.cannot]
    lines.append(f"go back to before a turn: cmdop-tui rewind --session {session} --turn N [--dry-run]")
    return "\n".join(lines)


def plan_text(plan: RewindPlan, session: str, *, files: bool) -> str:
    """What the rewind will write (the diff per machine, with files) and what it cannot restore."""
    lines = [f"session {session}: back to before turn {plan.turn.turn}  {_prompt_line(plan.turn.prompt)}"]
    if files:
        lines += [block for machine in plan.machines for block in _machine_diff(machine)]
        lines += [f"=== local (outside the working tree): {inert_line(r.path)} as it was" for r in plan.outside]
        lines += [f"not restored (could not be read): {inert_line(text)}" for text in plan.failed]
        if not plan.files_changed:
            lines.append("no file differs from then")
    lines += [f"cannot be restored: {inert_line(text)}" for text in plan.cannot]
    return "\n".join(lines)


def _machine_diff(machine: MachinePlan) -> list[str]:
    added = sum(c.added or 0 for c in machine.changes)
    removed = sum(c.removed or 0 for c in machine.changes)
    lines = [f"=== {machine.machine}: {len(machine.changes)} files +{added} {MINUS}{removed}"]
    if machine.patch:
        lines.append(strip_terminal_sequences(machine.patch).rstrip("\n"))
    lines += [f"left out (larger than the cap, not restored): {inert_line(path)}" for path in machine.left_out]
    lines += [f"changed by someone else since: {inert_line(path)}" for path in machine.changed_by_others]
    return lines


def outcome_text(done: Rewound, session: str) -> str:
    lines = []
    if done.files is not None:
        lines += [f"restored {inert_line(text)}" for text in done.files.restored]
        lines += [f"failed {inert_line(text)}" for text in done.files.failed]
        undo = f"cmdop-tui rewind --session {session} --turn {done.files.undo_turn} --files-only"
        lines.append(f"the present was kept first; to undo the files: {undo}")
    if done.conversation:
        lines.append("the conversation is back to before that turn: `cmdop-tui --continue` goes on from there")
    elif done.conversation_note:
        lines.append(f"the conversation stays as it was: {done.conversation_note}")
    return "\n".join(lines)


def _prompt_line(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return inert_line(first if len(first) <= 80 else first[:79] + "…")
