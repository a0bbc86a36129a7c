"""The files that keep tool outputs whole beside the transcript."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cmdop_tui.support.secrets import Redactor
from cmdop_tui.transcripts import outputs
from cmdop_tui.transcripts.outputs import KeptOutputs, outputs_dir

TOKEN = "ghp_" + "a1B2c3D4e5" * 4


def test_a_call_s_output_is_appended_as_it_streams_in_a_private_file(tmp_path: Path):
    kept = KeptOutputs(outputs_dir(tmp_path / "20250101-000000-abcdef.jsonl"))
    assert kept.directory == tmp_path / "20250101-000000-abcdef.outputs"
    assert kept.existing("toolu_1") is None and not kept.has("toolu_1")
    assert kept.write("toolu_1", "one\n") and kept.write("toolu_1", "two\n")
    path = kept.existing("toolu_1")
    assert path is not None and path.read_text() == "one\ntwo\n" and kept.has("toolu_1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(kept.directory.stat().st_mode) == 0o700
    assert kept.write("toolu_1", "web1 says\n", "web1") and kept.path("toolu_1", "web1").name == "toolu_1@web1.out"


def test_secrets_are_redacted_on_the_way_to_disk_even_split_across_pieces(tmp_path: Path):
    kept = KeptOutputs(tmp_path / "s.outputs", Redactor(["hunter2-configured-secret"]))
    for piece in ("token: ", TOKEN[:10], TOKEN[10:] + "\nkey hunter2-con", "figured-secret\nlast line"):
        kept.write("c", piece)
    kept.write("c", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    assert "last line" not in kept.path("c").read_text()  # waits for its line break, or the end
    kept.write("c", "-----END OPENSSH PRIVATE KEY-----\ntail")
    kept.finish("c")
    text = kept.path("c").read_text()
    assert TOKEN not in text and "hunter2-configured-secret" not in text and "b3BlbnNzaC1rZXktdjEAAAAA" not in text
    assert text.startswith("token: ") and "last line" in text and text.endswith("tail")


def test_names_the_model_or_an_inventory_chose_stay_inside(tmp_path: Path):
    kept = KeptOutputs(tmp_path / "s.outputs")
    for hostile in ("../../escape", "/etc/passwd", ".hidden", "a/b", ""):
        assert kept.path(hostile).parent == kept.directory
        assert kept.path("ok", hostile).parent == kept.directory
    assert kept.write("../../escape", "x") and not (tmp_path / "escape.out").exists()


def test_past_the_cap_the_file_says_the_rest_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(outputs, "MAX_BYTES", 10)
    kept = KeptOutputs(tmp_path / "s.outputs")
    assert kept.write("c", "12345\n")
    assert not kept.write("c", "6789abc\n")
    assert not kept.write("c", "more\n")
    assert kept.path("c").read_text() == "12345\n6789\n[output past 10 bytes not kept]\n"


def test_a_write_that_fails_is_not_fatal(tmp_path: Path):
    blocker = tmp_path / "s.outputs"
    blocker.write_text("a file where the directory should be")
    kept = KeptOutputs(blocker)
    assert not kept.write("c", "text\n") and not kept.write("c", "again\n")
    assert kept.existing("c") is None
