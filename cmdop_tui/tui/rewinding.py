"""/rewind (and Esc Esc at an empty prompt), from the list of turns to the notice of what went back.

    the turns (session.turns)  ->  RewindScreen: a turn, and what goes back
    the plan (session.rewind_plan)  ->  RewindDiffScreen: the diff, before anything is written
    session.rewind  ->  a notice per outcome; the chat redrawn and the prompt put back when the
                        conversation went back

It runs as a worker of its own (the plan reads every machine, which may take a while), and each
step waits for its screen. Nothing is written until the person says y on the diff; files changed
by someone else are overwritten only when that screen named them and was answered y.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cmdop_tui.tui.widgets.prompt_input import PromptInput

# The screens and the session's rewinding are imported by /rewind itself (with a session open
# they are loaded already), not before the app's first paint.
if TYPE_CHECKING:
    from cmdop_tui.session.rewind import Rewound
    from cmdop_tui.session.session import Session
    from cmdop_tui.tui.commands import CommandHost
    from cmdop_tui.tui.screens.rewind import RewindChoice

NO_TURNS = "Nothing to rewind: this session has no turns yet."
TURN_RUNNING = "A turn is running: wait for it, or press Esc to stop it."


async def rewind(app: CommandHost, session: Session) -> None:
    """The whole of /rewind; a failure is said, never raised (this runs as a worker)."""
    from cmdop_tui.machines.spec import MachineError
    from cmdop_tui.session.rewind import RewindError

    try:
        await choose_and_rewind(app, session)
    except (RewindError, MachineError, OSError) as exc:
        await app.chat.add_notice(f"Rewind failed, nothing more was written: {exc}", "error")
    except Exception as exc:  # a bug: said in the chat, as the agent's worker says its own
        await app.chat.add_notice(f"Internal error in /rewind: {type(exc).__name__}: {exc}", "error")


async def choose_and_rewind(app: CommandHost, session: Session) -> None:
    from cmdop_tui.tui.screens.rewind import RewindScreen
    from cmdop_tui.tui.screens.rewind_diff import RewindDiffScreen

    turns = await session.turns()
    if not turns:
        await app.chat.add_notice(NO_TURNS)
        return
    choice: RewindChoice | None = await app.push_screen(RewindScreen(turns), wait_for_dismiss=True)
    if choice is None:
        return
    plan = await session.rewind_plan(choice.turn) if choice.files else session.conversation_plan(choice.turn)
    if choice.files:
        confirmed = await app.push_screen(RewindDiffScreen(plan, choice.conversation), wait_for_dismiss=True)
        if not confirmed:
            await app.chat.add_notice("Rewind cancelled: nothing was written.")
            return
    if app.running:  # a prompt sent while the plan was read: its turn goes on, nothing goes back
        await app.chat.add_notice(TURN_RUNNING, "warning")
        return
    force = choice.files and bool(plan.conflicts)  # named on the diff screen, and answered y
    done = await session.rewind(plan, files=choice.files, conversation=choice.conversation, force=force)
    await tell(app, done, choice)


async def tell(app: CommandHost, done: Rewound, choice: RewindChoice) -> None:
    """What went back, in the chat: restored per machine, failures as failures. When the
    conversation went back the chat shows it as it is now, and the turn's prompt waits in the
    input, to edit and send again."""
    if done.conversation:
        await app.show_history()
        app.query_one(PromptInput).put_back(done.prompt)
    lines = [f"Rewound to before turn #{choice.turn}."]
    if done.files is not None:
        lines += [f"  restored {where}" for where in done.files.restored] or ["  no file needed restoring"]
        lines.append(f"  To undo it: /rewind and choose #{done.files.undo_turn}.")
    if done.conversation:
        lines.append("  The conversation went back too: its prompt is in the input to edit and send again.")
    await app.chat.add_notice("\n".join(lines))
    if done.files is not None and done.files.failed:
        await app.chat.add_notice("\n".join(["Not restored:", *(f"  {x}" for x in done.files.failed)]), "error")
    if choice.conversation and not done.conversation:
        await app.chat.add_notice(f"The conversation did not go back: {done.conversation_note}.", "warning")
