"""The attacker suite (tests/support/hostile_suite.py, cases in tests/support/attack_cases.py), run as an
attacker would: floor on, and floor off so that the sandbox stands alone. No case may change
anything outside the writable roots, let a secret reach the model, reach a socket of the
user's, leave a process behind or keep a power; and every case must have run.

The cases run for real, so they run only inside the suite's outer jail: the machine read-only,
a throwaway /home, /tmp and /run, no network.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from attack_cases import CASES, KINDS
from hostile_suite import ALL_CASES, jail_argv

from cmdop_tui.machines.sandbox import bubblewrap


def run_suite(floor: str) -> list[dict]:
    done = subprocess.run(
        jail_argv(sys.executable, floor, {}), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("floor", ["on", "off"])
@pytest.mark.timeout(300)  # the suite of attacks runs in one child, as long as its own limit
def test_no_attack_escapes(floor):
    results = run_suite(floor)
    assert [r["case"] for r in results] == ALL_CASES  # every case was tried
    escapes = {r["case"]: {k: r[k] for k in ("changed", "leaked", "socket", "outlived", "power")}
               for r in results if r["escaped"]}  # fmt: skip
    assert escapes == {}
    answered = [r["case"] for r in results if r["floor"]]
    assert answered if floor == "on" else answered == []  # floor off: the sandbox alone held them


def test_every_class_is_tried_several_ways():
    for kind in KINDS:
        if kind not in ("escalation",):
            assert sum(case.kind == kind for case in CASES) >= 3, kind


def test_the_suite_refuses_to_run_outside_its_jail():
    done = subprocess.run(
        [sys.executable, "tests/support/hostile_suite.py", "--floor", "off"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3 and "outside its jail" in done.stderr
