"""ssh's exit 255 told apart: a machine never reached, or a link lost while a command ran there."""

from __future__ import annotations

import pytest

from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import ssh_failure

pytestmark = pytest.mark.fault

H1 = MachineSpec(name="h1", host="10.0.0.1")

LOST = [  # what OpenSSH prints when a session that was up goes down
    "Connection to 10.0.0.1 closed by remote host.",
    "Shared connection to 10.0.0.1 closed.",
    "client_loop: send disconnect: Broken pipe",
    "Timeout, server 10.0.0.1 not responding.",
    "packet_write_wait: Connection to 10.0.0.1 port 22: Broken pipe",
    "Read from remote host 10.0.0.1: Connection reset by peer",
]
NEVER_REACHED = [
    "ssh: connect to host 10.0.0.1 port 22: Connection refused",
    "ssh: Could not resolve hostname h1.example: Name or service not known",
    "root@10.0.0.1: Permission denied (publickey).",
    "ssh: connect to host 10.0.0.1 port 22: Connection timed out",
]


@pytest.mark.parametrize("stderr", LOST)
def test_a_lost_link_says_the_command_may_still_run(stderr):
    message = str(ssh_failure(H1, stderr))
    assert "lost while the command ran" in message and "may still be running" in message and "h1" in message
    assert "cannot reach" not in message


@pytest.mark.parametrize("stderr", NEVER_REACHED)
def test_a_machine_never_reached_says_so(stderr):
    assert str(ssh_failure(H1, stderr)).startswith("cannot reach h1 over ssh: ")
