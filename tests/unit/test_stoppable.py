"""`UICancel.stoppable`: work that the Stop cancels at once (a run's hooks and files, before the
model is asked), told apart from the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest

from cmdop_tui.agent.cancel import Stopped, UICancel


async def test_work_left_alone_hands_back_its_result():
    cancel = UICancel()

    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    assert await cancel.stoppable(work()) == 7
    assert not cancel.bound  # the Stop is not bound to it any more


class Waiting:
    """Work that waits a minute, and says when it started and whether it was cancelled."""

    def __init__(self) -> None:
        self.started, self.cancelled = asyncio.Event(), asyncio.Event()

    async def work(self) -> None:
        self.started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


async def test_a_stop_cancels_the_work_at_once():
    cancel, waiting = UICancel(), Waiting()
    running = asyncio.create_task(cancel.stoppable(waiting.work()))
    await waiting.started.wait()
    cancel.fire()
    with pytest.raises(Stopped):
        await asyncio.wait_for(running, 5)
    assert waiting.cancelled.is_set()


async def test_a_stop_as_the_work_ends_is_still_a_stop():
    cancel = UICancel()

    async def work() -> str:
        cancel.fire()  # the Stop lands as the work hands back: what comes next must not run
        return "done"

    with pytest.raises(Stopped):
        await cancel.stoppable(work())


async def test_the_callers_own_cancellation_is_not_a_stop():
    cancel, waiting = UICancel(), Waiting()
    caller = asyncio.create_task(cancel.stoppable(waiting.work()))
    await waiting.started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert waiting.cancelled.is_set() and not cancel.fired
