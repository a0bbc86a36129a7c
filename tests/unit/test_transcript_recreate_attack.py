"""Re-creating a removed transcript never writes through a name someone else planted."""

from __future__ import annotations

import os

import pytest

from cmdop_tui.transcripts.writing import recreate

pytestmark = pytest.mark.fault


def test_a_symlink_planted_at_the_spare_name_is_not_followed(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir(mode=0o700)
    path = sessions / "abc.jsonl"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(fd, b'{"type": "meta"}\n')
    path.unlink()  # removed while the app runs: the next write re-creates it
    victim = tmp_path / "victim.sh"  # stands for ~/.bashrc: what runs later, outside any sandbox
    victim.write_text("echo harmless-marker\n")
    for guess in (f".{path.name}.{os.getpid()}.new", f".{path.name}.new"):  # names an attacker could guess
        (sessions / guess).symlink_to(victim)
    try:
        new_fd, _ = recreate(path, fd)
    finally:
        os.close(fd)
    os.close(new_fd)
    assert victim.read_text() == "echo harmless-marker\n"  # untouched, not truncated
    assert not path.is_symlink() and path.read_bytes() == b'{"type": "meta"}\n'
