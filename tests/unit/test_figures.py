"""Durations written one way everywhere: a number, a space, a unit."""

import pytest

from cmdop_tui.support.figures import SECONDS_WIDTH, duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0.0 s"),
        (0.34, "0.3 s"),
        (11.7, "11.7 s"),
        (59.94, "59.9 s"),
        (59.96, "1:00 min"),  # not `60.0 s`
        (60.0, "1:00 min"),
        (65.4, "1:05 min"),
        (3599.4, "59:59 min"),
        (3723.0, "1:02:03 h"),
        (-1.0, "0.0 s"),  # a clock that stepped back
    ],
)
def test_a_duration_has_its_unit(seconds, text):
    assert duration(seconds) == text


def test_every_duration_under_ten_hours_fits_its_column():
    assert max(len(duration(s / 10)) for s in range(0, 359_990, 7)) <= SECONDS_WIDTH
