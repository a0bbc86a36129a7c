"""Tool outputs kept whole beside the transcript, a file per call, written as they stream.

``<sessions>/<id>.outputs/`` (0700) holds ``<call id>.out`` (0600): what the call printed, as it
printed it (made inert where it was streamed), or the whole result a tool cut for the model; a
host's own stream of a call over many machines is ``<call id>@<host>.out``. Nothing is held in
memory: each piece is appended as it comes (the file opened, written, closed), so a 100 MB
output costs the disk, not the app. The output view pages through these files
(`support/paged_text.py`); the model still gets only its bounded part.

Secrets are redacted on the way to disk as in the transcript (`support/secrets.py`), a whole
line at a time: the end of a line not yet complete waits for the rest (a private key's block
for its end line), at most HOLD characters, and `finish` writes what still waits when the call
ends.

A call id or a host name that is not a plain name (the model chose it, an inventory named it)
is replaced by its hash, so no name reaches outside the directory. A file stops at MAX_BYTES
with a line that says so; a write that fails is logged and the call's file left as it is.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.support.secrets import Redactor
from cmdop_tui.transcripts.paths import ensure_private_dir

__all__ = ["MAX_BYTES", "KeptOutputs", "outputs_dir"]

_log = logging.getLogger(__name__)

MAX_BYTES = 1 << 30  # of one call's (or host's) output; past it the file says the rest is not kept
HOLD = 64 * 1024  # characters of an unfinished line (or key block) held back for redaction at most
KEY_BEGIN, KEY_END = "-----BEGIN", "-----END"
SUFFIX = ".out"
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def outputs_dir(transcript: Path) -> Path:
    """Where the outputs of the session whose transcript is `transcript` are kept."""
    return transcript.with_name(f"{transcript.stem}.outputs")


def _file_part(name: str) -> str:
    return name if _PLAIN.fullmatch(name) else hashlib.sha256(name.encode()).hexdigest()[:32]


def _ready(text: str) -> tuple[str, str]:
    """`text` split into what can be redacted and written now (whole lines, a key block only with
    its end) and what waits for more; past HOLD nothing waits."""
    cut = text.rfind("\n") + 1
    begin = text.rfind(KEY_BEGIN, 0, cut)
    if begin >= 0 and KEY_END not in text[begin:cut]:
        cut = text.rfind("\n", 0, begin) + 1
    if len(text) - cut > HOLD:
        cut = len(text)
    return text[:cut], text[cut:]


Output = tuple[str, str | None]  # a call's id, and a host's name for its own stream


@dataclass
class KeptOutputs:
    """The kept outputs of one session (`directory`): appended while calls run, read by the view."""

    directory: Path
    redactor: Redactor = field(default_factory=Redactor)
    _written: dict[Path, int] = field(default_factory=dict)  # bytes this process appended, per file
    _waiting: dict[Output, str] = field(default_factory=dict)  # the unfinished line of each output
    _failed: set[Path] = field(default_factory=set)

    def path(self, call_id: str, host: str | None = None) -> Path:
        """The file of a call's output (of one host's own stream of it, with `host`)."""
        name = _file_part(call_id) if host is None else f"{_file_part(call_id)}@{_file_part(host)}"
        return self.directory / f"{name}{SUFFIX}"

    def existing(self, call_id: str, host: str | None = None) -> Path | None:
        """The file of that output when one was kept."""
        path = self.path(call_id, host)
        return path if path.is_file() else None

    def has(self, call_id: str, host: str | None = None) -> bool:
        """Whether anything of that output came here (written, or waiting for the end of its line)."""
        return self.path(call_id, host) in self._written or (call_id, host) in self._waiting

    def write(self, call_id: str, text: str, host: str | None = None) -> bool:
        """Add `text` to that output (redacted, a whole line at a time); False when it is not kept
        (the cap, a failed write)."""
        ready, waiting = _ready(self._waiting.pop((call_id, host), "") + text)
        if waiting:
            self._waiting[(call_id, host)] = waiting
        return self._append(self.path(call_id, host), ready)

    def finish(self, call_id: str) -> None:
        """The call ended: what still waits of its outputs (a last line without its break) goes in."""
        for output in [output for output in self._waiting if output[0] == call_id]:
            self._append(self.path(*output), self._waiting.pop(output))

    def _append(self, path: Path, text: str) -> bool:
        if path in self._failed or not text:
            return path not in self._failed
        written = self._written.get(path, 0)
        data = self.redactor.text(text).encode("utf-8", errors="replace")
        if written + len(data) > MAX_BYTES:
            data = data[: max(0, MAX_BYTES - written)] + f"\n[output past {MAX_BYTES:,} bytes not kept]\n".encode()
            self._failed.add(path)  # nothing more goes in
        try:
            ensure_private_dir(self.directory)
            fd = os.open(path, _FLAGS, 0o600)
            try:
                unwritten = memoryview(data)
                while unwritten:
                    unwritten = unwritten[os.write(fd, unwritten) :]
            finally:
                os.close(fd)
        except OSError as exc:
            _log.warning("an output cannot be kept in %s: %s", path, exc)
            self._failed.add(path)
            return False
        self._written[path] = written + len(data)
        return path not in self._failed
