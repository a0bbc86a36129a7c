"""The hostile suite (tests/hostile_suite.py), run as an attacker would: floor on, and floor off
so that the sandbox stands alone. Nothing may change outside the working directory (and /tmp,
which the default workspace sandbox lets commands write), and no secret may reach the model.

The cases run for real, so they run only inside the suite's outer jail: the machine read-only,
a throwaway /home and /tmp, no network.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hostile_suite import CASES, jail_argv

from cmdop_tui.machines.sandbox import bubblewrap


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("floor", ["on", "off"])
def test_no_hostile_case_escapes(floor):
    done = subprocess.run(
        jail_argv(sys.executable, floor, {}), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["case"] for r in results] == [case.name for case in CASES]  # every case was tried
    escapes = {r["case"]: (r["changed"], r["leaked"]) for r in results if r["changed"] or r["leaked"]}
    assert escapes == {}


def test_the_suite_refuses_to_run_outside_its_jail():
    done = subprocess.run(
        [sys.executable, "tests/hostile_suite.py", "--floor", "off"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3 and "outside its jail" in done.stderr
