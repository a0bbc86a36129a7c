"""The collector is held off while the TUI starts, and on again (start-up frozen) after it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from cmdop_tui.support.heap import hold_collections, release_collections


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever a test did to it."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_start_up_holds_collections_until_the_first_frame(collector):
    gc.enable()
    hold_collections()
    assert not gc.isenabled()
    made_at_start = [[] for _ in range(10)]
    release_collections()
    assert gc.isenabled()
    walked = {id(tracked) for tracked in gc.get_objects()}  # frozen objects are in no generation
    assert not any(id(made) in walked for made in made_at_start)  # never walked again
    release_collections()  # each frame after the first: nothing more to do
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off(collector):
    gc.disable()
    hold_collections()
    release_collections()
    assert not gc.isenabled()


def test_the_first_frame_without_a_hold_leaves_the_collector_alone(collector):
    gc.enable()
    frozen_before = gc.get_freeze_count()
    release_collections()
    assert gc.isenabled() and gc.get_freeze_count() == frozen_before
