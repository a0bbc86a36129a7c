"""The slash commands: each one's usage, help and palette entries where its handler is.

The handlers take the app they act on as a `CommandHost` (tui/commands.py): only what a command
may use. `build_registry()` (at the end) lists them with their usage, help and palette entries, for
the prompt, `/help` and the command palette.
"""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SuspendNotSupported

from cmdop_tui.agent.budget import format_usd
from cmdop_tui.config.settings import SettingsError
from cmdop_tui.session.memory import user_memory_path
from cmdop_tui.support.editor import editor_argv
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.commands import (
    CommandHost,
    CommandRegistry,
    PaletteEntry,
    agent_profile_entries,
    model_alias_entries,
)
from cmdop_tui.tui.custom_slash import add_custom_commands
from cmdop_tui.tui.keys import key_tables
from cmdop_tui.tui.local_command import slash_local
from cmdop_tui.tui.mode_keys import MODE_HELP, MODE_PALETTE, slash_mode
from cmdop_tui.tui.rewinding import TURN_RUNNING, rewind
from cmdop_tui.tui.widgets.notice import TableNotice
from cmdop_tui.tui.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session
    from cmdop_tui.session.status import ContextReport


async def slash_help(app: CommandHost, argument: str) -> None:
    help_text = app.commands.help_text(key_tables(app.query_one(PromptInput)))
    await app.chat.add(TableNotice(help_text))  # rows wrap under their own column


async def slash_clear(app: CommandHost, argument: str) -> None:
    if app.running:
        await app.chat.add_notice("Stop the running turn before clearing.", "warning")
        return
    if app.session is not None:
        app.session.new_conversation()
    await app.reset_display()


async def slash_model(app: CommandHost, argument: str) -> None:
    if not argument:
        current = app.session.model_name if app.session else "(none)"
        await app.chat.add_notice(f"Model: {current}. Usage: /model NAME (an id or {', '.join(app.settings.aliases)})")
        return
    if (session := await open_session(app)) is None:
        return
    try:
        model = session.use_model(argument)
    except SettingsError as exc:
        await app.chat.add_notice(str(exc), "error")
        return
    await app.chat.add_notice(f"Model: {model}")


async def open_session(app: CommandHost) -> Session | None:
    """The session, to change now; None after saying why not (still opening, or none at all)."""
    if not app.session_ready.is_set():
        await app.chat.add_notice("The session is still opening: try again in a moment.", "warning")
        return None
    return await app.ready_session()


async def slash_loop(app: CommandHost, argument: str) -> None:
    if argument not in ("on", "off"):
        await app.chat.add_notice("Usage: /loop on|off", "warning")
        return
    if (session := await open_session(app)) is None:
        return
    session.set_loop(argument == "on")
    await app.chat.add_notice(f"Loop mode {argument} (from the next prompt).")


async def slash_context(app: CommandHost, argument: str) -> None:
    if (session := await app.ready_session()) is None:
        return
    await app.chat.add_notice(context_text(await session.context_report()))


async def slash_compact(app: CommandHost, argument: str) -> None:
    if app.running:
        await app.chat.add_notice("A turn is running: wait for it, or press Esc to stop it.", "warning")
        return
    if app.session_ready.is_set() and await app.ready_session() is None:
        return
    app.run_compaction(argument)


async def slash_memory(app: CommandHost, argument: str) -> None:
    path = user_memory_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
        with app.suspend():
            subprocess.call(editor_argv(path))
    except SuspendNotSupported:  # no terminal to give the editor (a browser, a test)
        await app.chat.add_notice(f"Your standing instructions are in {path}: edit it there.")
        return
    except OSError as exc:
        await app.chat.add_notice(f"Cannot open {path} in your editor: {exc.strerror or exc}", "error")
        return
    if app.session is not None:
        app.session.reload_memory()
    await app.chat.add_notice(f"Your standing instructions ({path}) apply from the next request.")


async def slash_skills(app: CommandHost, argument: str) -> None:
    from cmdop_tui.session.skills import PROJECT_DIR, SKILL_FILE, find_skills, user_skills_dir  # not at start

    cwd = app.session.working_dir if app.session is not None else Path.cwd()
    found = find_skills(cwd)
    if found.skills:
        lines = [f"Skills ({len(found.skills)}):"]
        lines += [f"  {skill.name} ({skill.source}): {skill.description}" for skill in found.skills]
    else:
        lines = [
            f"No skills yet. A skill is a folder with a {SKILL_FILE} (front matter: name, description; "
            f"then the instructions) in {user_skills_dir()} or in {cwd / PROJECT_DIR}."
        ]
    lines += found.notes
    await app.chat.add_notice("\n".join(lines))


async def slash_mcp(app: CommandHost, argument: str) -> None:
    from cmdop_tui.mcp.specs import PROJECT_FILE as PROJECT_MCP_FILE  # /mcp's code: not at start
    from cmdop_tui.mcp.specs import project_servers
    from cmdop_tui.mcp.trust import trust as trust_mcp_project

    cwd = app.session.working_dir if app.session is not None else Path.cwd()
    if argument.strip() == "trust":
        servers, notes = project_servers(cwd)
        if not servers:
            await app.chat.add_notice(notes[0] if notes else f"There is no {PROJECT_MCP_FILE} with MCP servers here.")
            return
        try:
            trust_mcp_project(cwd / PROJECT_MCP_FILE)
        except OSError as exc:
            await app.chat.add_notice(f"Could not record the trust: {exc.strerror or exc}", "error")
            return
        names = ", ".join(spec.name for spec in servers)
        await app.chat.add_notice(
            f"Trusted {cwd / PROJECT_MCP_FILE} ({names}); its servers start with the next session."
        )
        return
    await app.chat.add_notice("\n".join(["MCP servers:", *mcp_lines(app, cwd)]))


NONE_CONFIGURED = "  none configured ([mcp.NAME] in the settings, or .mcp.json)"


def mcp_lines(app: CommandHost, cwd: Path) -> list[str]:
    """Each MCP server and its state (and the tools it is not offered, with why): the session's
    once it is open; before that (or when it could not open) what the settings and the project
    configure, not started yet."""
    from cmdop_tui.mcp.configured import UNTRUSTED_REASON, configured  # not at start

    if app.session is not None and app.session.mcp is not None:
        return [
            line
            for state in app.session.mcp.states()
            for line in (
                f"  {inert_line(state.name)}: {inert_line(state.summary())}",
                *(f"    {inert_line(hidden)}" for hidden in state.hidden_lines()),
            )
        ] or [NONE_CONFIGURED]
    try:
        found = configured(app.settings, cwd)
    except SettingsError as exc:
        return [f"  {exc}"]
    waiting = "starts once the session has opened" if not app.session_ready.is_set() else "not started: no session"
    states = [(spec.name, waiting) for spec in found.servers]
    states += [(spec.name, f"untrusted: {UNTRUSTED_REASON}") for spec in found.untrusted]
    return [f"  {inert_line(name)}: {inert_line(summary)}" for name, summary in states] or [NONE_CONFIGURED]


async def slash_budget(app: CommandHost, argument: str) -> None:
    if (session := await app.ready_session()) is None:
        return
    wanted = argument.strip().lower().lstrip("$")
    if wanted:
        budget = None if wanted == "off" else positive_number(wanted)
        if budget is None and wanted != "off":
            await app.chat.add_notice("Usage: /budget USD (a positive amount), or /budget off", "warning")
            return
        session.set_budget(budget)
    limit = session.budget_usd
    limit_text = f"the budget is {format_usd(limit)}" if limit is not None else "there is no budget"
    await app.chat.add_notice(f"Spent about {format_usd(session.spent_usd)} this session; {limit_text}.")


async def slash_agent(app: CommandHost, argument: str) -> None:
    if (session := await app.ready_session()) is None:
        return
    if not argument:
        names = ", ".join(app.settings.agents)
        await app.chat.add_notice(f"Agent: {app.settings.agent.name}. Usage: /agent NAME ({names})")
        return
    try:
        config = session.use_agent(argument)
    except SettingsError as exc:
        await app.chat.add_notice(str(exc), "error")
        return
    app.settings = session.settings
    await app.chat.add_notice(f"Agent profile {argument} (model {config.model}) from the next prompt.")


async def slash_sessions(app: CommandHost, argument: str) -> None:
    from cmdop_tui.tui.screens.sessions import SessionsScreen, sessions_with_messages  # not at start

    if (session := await app.ready_session()) is None:
        return
    recorder = session.recorder
    app.push_screen(SessionsScreen(sessions_with_messages(), recorder.session_id), partial(resume_chosen, app))


async def resume_chosen(app: CommandHost, session_id: str | None) -> None:
    from cmdop_tui.transcripts import SessionError  # with the transcripts, loaded after the first paint

    recorder = app.session.recorder if app.session is not None else None
    if session_id is None or recorder is None or session_id == recorder.session_id:
        return
    if app.running:
        await app.chat.add_notice("Stop the running turn before switching sessions.", "warning")
        return
    try:
        notes = recorder.resume(session_id)
    except SessionError as exc:
        await app.chat.add_notice(str(exc), "error")
        return
    await app.show_history()
    for note in notes:
        await app.chat.add_notice(note)


async def slash_jobs(app: CommandHost, argument: str) -> None:
    if (session := await open_session(app)) is not None and session.jobs is not None:
        from cmdop_tui.tui.screens.jobs import JobsScreen  # not at start

        app.push_screen(JobsScreen(session.jobs))


async def slash_rewind(app: CommandHost, argument: str) -> None:
    if app.running:
        await app.chat.add_notice(TURN_RUNNING, "warning")
        return
    if (session := await open_session(app)) is not None:
        app.run_worker(rewind(app, session), group="rewind", exclusive=True, exit_on_error=False)


async def slash_export(app: CommandHost, argument: str) -> None:
    from cmdop_tui.transcripts import export_markdown  # loaded after the first paint

    if (session := await app.ready_session()) is None:
        return
    recorder = session.recorder
    path = Path(argument).expanduser() if argument else Path.cwd() / f"cmdop-session-{recorder.session_id}.md"
    markdown = export_markdown(
        recorder.whole_history(),  # what compactions summarised too
        title=f"cmdop-tui session {recorder.session_id}",
        extra_secrets=recorder.secrets,
    )
    try:
        path.write_text(markdown, encoding="utf-8")
    except OSError as exc:
        await app.chat.add_notice(f"Could not write {path}: {exc.strerror}", "error")
        return
    await app.chat.add_notice(f"Exported this session to {path}")


NOTHING_TO_STOP = "Nothing to stop: no turn is running."


async def slash_stop(app: CommandHost, argument: str) -> None:
    if not app.running:
        await app.chat.add_notice(NOTHING_TO_STOP)
        return
    app.action_stop()


async def slash_exit(app: CommandHost, argument: str) -> None:
    await app.action_request_quit()


def positive_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def context_text(report: ContextReport) -> str:
    """/context's answer: the window, the last request's real size, and the parts estimated."""
    usage, window, last = report.usage, report.window, report.last_tokens
    rows = [
        ("System prompt and tools", usage.system_and_tools),
        ("Summary of earlier turns", usage.summary),
        ("Conversation", usage.conversation),
        ("Tool outputs", usage.tool_outputs),
    ]
    lines = [f"Context window: {window:,} tokens."]
    if last is not None:
        lines.append(f"The last request and its reply: {last:,} tokens ({last / window:.0%} of the window).")
    lines.append(f"The next request, estimated: about {usage.total:,} tokens ({usage.total / window:.0%}):")
    lines += [f"  {name:<25} {tokens:>9,}" for name, tokens in rows]
    return "\n".join(lines)


def build_registry() -> CommandRegistry:
    """Every slash command, in the order /help and the palette list them."""
    registry = CommandRegistry()
    registry.slash("/help", "show commands and keys", palette=(PaletteEntry("Show help"),))(slash_help)
    registry.slash("/clear", "start a new conversation", palette=(PaletteEntry("Clear the conversation"),))(slash_clear)
    registry.slash("/model NAME", "switch model (an id or @fast, @balanced, @smart)", palette=model_alias_entries)(
        slash_model
    )
    registry.slash(
        "/local", "start the local model (no API key needed)", palette=(PaletteEntry("Start the local model"),)
    )(slash_local)
    registry.slash(
        "/loop on|off",
        "loop mode: keep going until a breaker phrase",
        palette=(PaletteEntry("Loop mode on", "on"), PaletteEntry("Loop mode off", "off")),
    )(slash_loop)
    registry.slash(
        "/context", "what fills the model's context", palette=(PaletteEntry("Show what fills the context"),)
    )(slash_context)
    registry.slash(
        "/compact [INSTRUCTIONS]",
        "summarise the conversation so far to free context (Esc stops)",
        palette=(PaletteEntry("Compact the conversation"),),
    )(slash_compact)
    registry.slash(
        "/memory", "your standing instructions, in $EDITOR", palette=(PaletteEntry("Edit your standing instructions"),)
    )(slash_memory)
    registry.slash("/skills", "the skills the model can use", palette=(PaletteEntry("List the skills"),))(slash_skills)
    registry.slash(
        "/mcp [trust]",
        "MCP servers and their state; trust this project's .mcp.json",
        palette=(PaletteEntry("MCP servers"),),
    )(slash_mcp)
    registry.slash("/mode [NAME]", MODE_HELP, palette=MODE_PALETTE)(slash_mode)
    registry.slash("/budget [USD|off]", "the session's spending limit")(slash_budget)
    registry.slash("/agent NAME", "switch agent profile", palette=agent_profile_entries)(slash_agent)
    registry.slash(
        "/sessions", "earlier sessions; Enter resumes one", palette=(PaletteEntry("Resume an earlier session"),)
    )(slash_sessions)
    registry.slash(
        "/jobs",
        "background jobs per machine: Enter follows one, k kills it",
        palette=(PaletteEntry("Background jobs"),),
    )(slash_jobs)
    registry.slash(
        "/rewind",
        "go back to before a turn: its files, the conversation, or both (also Esc Esc)",
        palette=(PaletteEntry("Rewind to before a turn", hint="/rewind, Esc Esc"),),
    )(slash_rewind)
    registry.slash(
        "/export [PATH]", "write this session as Markdown", palette=(PaletteEntry("Export this session as Markdown"),)
    )(slash_export)
    registry.slash(
        "/stop", "stop the running turn (also Esc)", palette=(PaletteEntry("Stop the running turn", hint="Esc"),)
    )(slash_stop)
    registry.slash("/exit", "quit (also ctrl+q)", palette=(PaletteEntry("Quit", hint="ctrl+q"),))(slash_exit)
    add_custom_commands(registry, Path.cwd())  # after the built-ins: a built-in's name stays its own
    return registry
