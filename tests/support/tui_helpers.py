"""Helpers for driving the real app with Pilot against the fake Messages API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import anthropic
from textual import events

from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.policies import RetryPolicy
from cmdop_tui.config.settings import Settings
from cmdop_tui.tui.app import CmdopApp
from cmdop_tui.tui.widgets.machines_panel import MachineInfo

FACTS = SessionFacts(
    hostname="testhost",
    os_name="Linux",
    timezone="UTC",
    user="tester",
    cwd="/srv",
    platform="tui",
    sandbox="Commands run in a sandbox: they may write only in /srv and /tmp.",  # pinned: not the checkout's path
)
MACHINE = MachineInfo(name="testhost", os_name="Linux 6.1", user="tester", load="0.42 0.40")
FAST_RETRY = RetryPolicy(attempts=3, initial_s=0.001, max_s=0.004, jitter_s=0.0)


def make_app(
    fake_api=None,
    *,
    settings: Settings | None = None,
    retry: RetryPolicy = FAST_RETRY,
    offer_local: bool = False,
    **agent,
) -> CmdopApp:
    settings = settings or Settings()
    if agent:
        settings = replace(settings, agent=replace(settings.agent, **agent))
    client = None
    if fake_api is not None:
        client = anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)
    return CmdopApp(settings, client=client, retry=retry, facts=FACTS, machine=MACHINE, offer_local_model=offer_local)


async def wait_until(pilot, condition: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Let the app run until `condition()` holds (checked after each processed batch)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.005)


def showing(app, screen_class: type) -> bool:
    """The app shows a screen of `screen_class`, composed: the screen is on top of the stack as
    soon as it is pushed, before its widgets are mounted."""
    return isinstance(app.screen, screen_class) and app.screen.is_mounted


async def press_in_one_read(pilot, *keys: str) -> None:
    """Keys that arrive together, as from one read of the terminal: all handed to the app before
    any is handled (Pilot's `press` lets the app go idle between keys, which on a loaded machine
    can put a second between them)."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    await pilot.pause()


async def submit(pilot, text: str) -> None:
    prompt = pilot.app.query_one("#prompt")
    prompt.focus()
    prompt.load_text(text)
    await pilot.press("enter")


async def finish_turn(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def notices(app, kind: str | None = None) -> list[str]:
    from cmdop_tui.tui.widgets.notice import Notice

    return [str(n.content) for n in app.query(Notice) if kind is None or n.kind == kind]


def replies(app) -> list[str]:
    from cmdop_tui.tui.widgets.assistant_reply import AssistantReply

    return [r.source for r in app.query(AssistantReply)]
