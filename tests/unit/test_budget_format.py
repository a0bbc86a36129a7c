"""Money is shown with the digits it needs, and a budget stop is one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply

from cmdop_tui.agent.budget import format_usd
from cmdop_tui.agent.events import BudgetWarning
from cmdop_tui.tui.widgets.status_line import StatusFacts, StatusLine

PRICES = {"claude-sonnet-5-5": (3.0, 15.0)}


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (5, "$5.00"),
        (1234.5678, "$1234.57"),
        (1, "$1.00"),
        (0.999999, "$1.00"),
        (0.5, "$0.50"),
        (0.1, "$0.10"),
        (0.05, "$0.05"),
        (0.0123, "$0.0123"),
        (0.0065, "$0.0065"),
        (0.00651, "$0.0065"),
        (0.0001, "$0.0001"),
        (0.00009999, "$0.0001"),
        (0.000012, "$0.000012"),
        (0.00012345, "$0.00012"),
        (1e-9, "$0.000000001"),
        (0, "$0.00"),
        (-0.0001, "-$0.0001"),
    ],
)
def test_format_usd(amount: float, shown: str) -> None:
    assert format_usd(amount) == shown


@pytest.mark.parametrize("amount", [10.0**-k * m for k in range(0, 12) for m in (1, 1.5, 4.99, 9.99)])
def test_a_positive_amount_is_never_zero_and_keeps_two_significant_digits(amount: float) -> None:
    shown = format_usd(amount)
    assert shown != "$0.00" and shown.startswith("$")
    value = float(shown[1:])
    assert abs(value - amount) <= max(amount * 0.05, 0.005)


def test_the_status_line_shows_cost_and_budget_with_their_digits() -> None:
    line = StatusLine()
    line.facts = StatusFacts(model="m", cost_usd=0.000012, budget_usd=0.0001)
    text = "".join(text for _, text, _ in line._parts())
    assert text.endswith(" · $0.000012/0.0001")
    line.facts = StatusFacts(model="m", cost_usd=None, budget_usd=5)
    assert "".join(text for _, text, _ in line._parts()).endswith(" · $0.00/5.00")


async def test_a_stop_in_the_same_request_comes_without_a_warning_before_it(fake_api) -> None:
    runner, events = make_runner(fake_api, prices=PRICES, max_budget_usd=0.0001), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "budget"
    assert result.message is not None and "$0.0001" in result.message and "would cross the budget" in result.message
    assert events.of(BudgetWarning) == []  # the stop says it all
    assert fake_api.requests == []


async def test_a_warning_still_comes_when_the_run_goes_on(fake_api) -> None:
    stopped = await make_runner(fake_api, prices=PRICES, max_budget_usd=0.0001).run("hi", Recorder())
    assert stopped.message is not None
    estimate = float(stopped.message.rpartition("would cost about $")[2])
    fake_api.enqueue(text_reply("cheap enough"))
    budget = estimate * 1.15  # the request fits, past 80 %: a warning, then the answer
    runner, events = make_runner(fake_api, prices=PRICES, max_budget_usd=budget), Recorder()
    result = await runner.run("hi", events)
    assert result.status == "final"
    (warning,) = events.of(BudgetWarning)
    assert warning.budget_usd == budget


def test_headless_budget_stop_is_one_line_with_the_amount(fake_api, anthropic_env, tmp_path) -> None:
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "-p", "hi", "--max-budget-usd", "0.0001"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("cmdop-tui: budget: stopped before a request that would cross the budget: ")
    assert "$0.00 of $0.0001 spent" in line
    assert fake_api.requests == []
