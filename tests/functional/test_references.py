"""`@path` in a prompt: the file goes to the model with it, read as read_file reads it, secrets never.

Through `cmdop-tui -p` as a user runs it (a child process, the real SDK, the fake API over HTTP).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fake_anthropic import text_reply

from cmdop_tui.session.references import FileReference, references

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def sent_text(fake_api, prompt, env, cwd, *flags):
    fake_api.enqueue(text_reply("Done."))
    done = subprocess.run(CLI + ["-p", prompt, *flags], env=env, capture_output=True, text=True, timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    (block,) = fake_api.requests[-1].body["messages"][-1]["content"]
    return block["text"]


def test_an_attached_file_goes_with_the_prompt(fake_api, cli_env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("The project's readme says: blue whales.\n")
    text = sent_text(fake_api, "@README.md summarize", cli_env, work)
    assert text.startswith("@README.md summarize\n\n")
    assert '<attached path="README.md">' in text and "blue whales." in text


def test_a_long_file_is_cut_with_a_note_and_a_binary_one_named_only(fake_api, cli_env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "long.txt").write_text("".join(f"line {n}\n" for n in range(5000)))
    (work / "image.bin").write_bytes(b"\x00\x01\x02" * 100)
    text = sent_text(fake_api, "look at @long.txt and @image.bin, please", cli_env, work)
    assert "line 1999\n" in text and "line 2000\n" not in text and "start=2001" in text
    assert "@image.bin: not attached (" in text and "binary" in text


@pytest.mark.parametrize("sandbox", ["off", "workspace"])
def test_a_secret_is_never_attached(fake_api, cli_env, tmp_path, sandbox):
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("API_TOKEN=hunter2-env\n")
    text = sent_text(fake_api, "what is in @.env", cli_env, work, "--sandbox", sandbox)
    assert "hunter2-env" not in text and "@.env: not attached (refused" in text


def test_a_file_the_sandbox_hides_stays_hidden(fake_api, cli_env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-key-body\n")
    text = sent_text(fake_api, "show @id_ed25519", cli_env, work, "--sandbox", "workspace")
    assert "secret-key-body" not in text and "@id_ed25519: not attached (" in text


def test_references_are_found_in_prose():
    machines = frozenset({"web1"})
    found = references('see @src/app.py, @web1:/etc/hosts and @"my notes.txt"; mail me@example.com @x:y', machines)
    assert found == [
        FileReference("src/app.py"),
        FileReference("/etc/hosts", "web1"),
        FileReference("my notes.txt"),
        FileReference("x:y"),  # x is no machine: a path here
    ]
    assert references("no references here") == []
