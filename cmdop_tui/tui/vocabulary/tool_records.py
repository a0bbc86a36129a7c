"""What the UI remembers about each tool call: shared by the chat's tool cards and the
tool-activity panel, so both show the same state."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from textual.content import Content

from cmdop_tui.support import figures
from cmdop_tui.support.diffs import diff_counts
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import inert_line, strip_terminal_sequences
from cmdop_tui.tools.outcome import OK, OutcomeKind, ToolOutcome

Status = Literal["running", "ok", "error"]

# A host of a call that runs on many (run_on_machines): the states, the most telling first.
HOST_ORDER = ("failed", "timed out", "offline", "denied", "running", "done", "queued")
HOST_GLYPHS = {
    "queued": "·",
    "running": "…",
    "done": "✓",
    "failed": "✗",
    "timed out": "✗",
    "offline": "⊘",
    "denied": "⊘",
}

LIVE_OUTPUT_LIMIT = 256 * 1024  # characters of live output kept per call while it runs
REMOTE_TEXT_CHARS = 2000
HOST_OUTPUT_CHARS = 64 * 1024  # of each host's own stream (a fan-out call's), the tail kept
HOSTS_OUTPUT_CHARS = 4 * 1024 * 1024  # of all the hosts' streams of one call: many hosts keep less each
PREVIEW_SOURCE_CHARS = 8192
DIFF_STYLES = {"+": "$text-success", "-": "$text-error", "@": "$text-accent", "\\": "$text-muted", "[": "$text-warning"}


def short_arguments(name: str, arguments: dict[str, Any], width: int = 60) -> str:
    """One line that says what the call does: the command, the path, the pattern."""
    for key in ("command", "path", "pattern", "prompt"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            text = value
            break
    else:
        text = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    text = inert_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_nested(kind: object, event: dict[str, Any]) -> str:
    """One line for a remote agent's event; '' for events not worth a line."""
    name = inert_line(str(event.get("name", "?")))  # a remote agent's words: shown, never obeyed
    if kind == "tool_start":
        arguments = event.get("input")
        return f"▶ {name} {short_arguments(name, arguments if isinstance(arguments, dict) else {}, 50)}"
    if kind == "tool_end":
        outcome = nested_outcome(event)
        said = "" if outcome.ok else f" {outcome.word}"
        duration = event.get("duration_s")
        seconds = (
            f" {figures.duration(duration)}"
            if isinstance(duration, int | float) and not isinstance(duration, bool)
            else ""
        )
        return f"{outcome_glyph(outcome)} {name}{said}{seconds}"
    if kind == "final":
        return "✓ answered"
    if kind in ("error", "cancelled"):
        return f"✗ {inert_line(str(event.get('message', kind)))}"
    return ""


def nested_outcome(event: dict[str, Any]) -> ToolOutcome:
    """A remote agent's tool_end outcome (its `outcome` field, checked), else ok or failed by its
    `is_error`: a remote agent's words are shown, never trusted to be well formed."""
    said = event.get("outcome")
    kind = said.get("kind") if isinstance(said, dict) else None
    if isinstance(said, dict) and isinstance(kind, str) and kind in OutcomeKind.__members__.values():
        code = said.get("exit_code")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        return ToolOutcome(OutcomeKind(kind), inert_line(str(said.get("reason") or "")), exit_code)
    return ToolOutcome(OutcomeKind.FAILED) if event.get("is_error") else OK


def stored_outcome(is_error: bool) -> ToolOutcome:
    """The outcome of a call read back from a conversation, which keeps only whether the model
    got an error: failed, or ok."""
    return ToolOutcome(OutcomeKind.FAILED, "the stored result says it failed") if is_error else OK


def outcome_glyph(outcome: ToolOutcome) -> str:
    """✓ ok, ✗ ran and failed, ⊘ not run (denied, refused), ■ stopped."""
    if outcome.ok:
        return "✓"
    if outcome.kind is OutcomeKind.CANCELLED:
        return "■"
    return "✗" if outcome.kind.ran else "⊘"


@dataclass
class HostView:
    """How one host of a fan-out call is doing, from its `host` events."""

    state: str = "queued"
    line: str = ""
    elapsed_s: float | None = None
    since: float = field(default_factory=time.monotonic)  # when this state began (here)
    output: str = ""  # its own stream: what the host printed, or what its agent did

    def add_output(self, text: str, limit: int = HOST_OUTPUT_CHARS) -> None:
        """More of its stream, made inert (a remote agent's tokens could carry escape sequences),
        the last `limit` characters kept."""
        self.output = (self.output + strip_terminal_sequences(text))[-limit:]

    def elapsed(self) -> str:
        seconds = self.elapsed_s
        if self.state == "running":
            seconds = (seconds or 0.0) + time.monotonic() - self.since  # ticks while it runs
        return "" if seconds is None else figures.duration(seconds)


def fleet_summary(hosts: dict[str, HostView]) -> str:
    """A count per state: `2 failed · 10 done`."""
    counts = [f"{sum(h.state == state for h in hosts.values())} {state}" for state in HOST_ORDER]
    return " · ".join(count for count in counts if not count.startswith("0 "))


def fleet_rows(hosts: dict[str, HostView]) -> list[tuple[str, str]]:
    """Each host and its line of the fleet view (host, state, elapsed, last line), the most
    telling first."""
    rank = {state: index for index, state in enumerate(HOST_ORDER)}
    ordered = sorted(hosts.items(), key=lambda item: rank.get(item[1].state, len(rank)))
    width = max((len(name) for name in hosts), default=0)
    return [
        (
            name,
            f"{HOST_GLYPHS.get(host.state, '?')} {name:<{width}} {host.state:<7} {host.elapsed():>{figures.SECONDS_WIDTH}}  {host.line}".rstrip(),
        )
        for name, host in ordered
    ]


def fleet_lines(hosts: dict[str, HostView], limit: int | None = None) -> list[str]:
    """The fleet view: the counts, then a line per host; at most `limit` lines in all."""
    lines = [fleet_summary(hosts), *(line for _, line in fleet_rows(hosts))]
    if limit is not None and len(lines) > limit:
        lines = [*lines[: limit - 1], f"… {len(lines) - limit + 1} more hosts"]
    return lines


@dataclass
class ToolRecord:
    call_id: str
    name: str
    arguments: dict[str, Any]
    machine: str = "local"
    status: Status = "running"
    started: float = field(default_factory=time.monotonic)
    duration_s: float | None = None
    live_output: str = ""
    output: str = ""
    remote_text: dict[str, str] = field(default_factory=dict)  # what remote agents are writing
    diff: str | None = None  # what a write or an edit would change (ToolStart.preview), masked
    outcome: ToolOutcome | None = None  # how it ended (None while it runs)
    hosts: dict[str, HostView] = field(default_factory=dict)  # the fleet of a fan-out call, by host
    streamed: int = 0  # characters of live output heard, of which `live_output` holds the last

    def __post_init__(self) -> None:
        if self.diff is not None:
            self.diff = mask(self.diff)

    def add_nested(self, event: dict[str, Any]) -> None:
        """An event of the agent working for this call on another machine (ask_machine)."""
        host = inert_line(str(event.get("hostname") or "?"))
        kind = event.get("type")
        if kind == "host":
            elapsed = event.get("elapsed_s")
            before = self.hosts.get(host)
            view = HostView(
                state=inert_line(str(event.get("state", "?"))),
                line=inert_line(str(event.get("line") or "")),
                elapsed_s=float(elapsed) if isinstance(elapsed, int | float) else None,
                output=before.output if before is not None else "",
            )
            self.hosts[host] = view
            view.add_output(str(event.get("text") or ""), self._host_limit())
            return
        if kind == "token":
            text = str(event.get("text", ""))
            self.remote_text[host] = (self.remote_text.get(host, "") + text)[-REMOTE_TEXT_CHARS:]
            self._to_host(host, text)
            return
        line = describe_nested(kind, event)
        if line:
            self.add_progress(f"[{host}] {line}\n")
            self._to_host(host, f"\n{line}\n")

    def _to_host(self, host: str, text: str) -> None:
        """A remote agent's event, to that host's own stream (ask_machines' fleet)."""
        if host in self.hosts:
            self.hosts[host].add_output(text, self._host_limit())

    def _host_limit(self) -> int:
        return max(4096, min(HOST_OUTPUT_CHARS, HOSTS_OUTPUT_CHARS // max(1, len(self.hosts))))

    def host_output(self, host: str) -> str:
        """One host's own stream, secrets masked; the whole output when there is no such host."""
        view = self.hosts.get(host)
        return mask(view.output) if view is not None else self.shown_output

    def add_progress(self, text: str) -> None:
        self.streamed += len(text)
        self.live_output += text
        if len(self.live_output) > LIVE_OUTPUT_LIMIT:
            self.live_output = self.live_output[-LIVE_OUTPUT_LIMIT // 2 :]

    def finish(self, output: str, outcome: ToolOutcome, duration_s: float) -> None:
        self.output = output
        self.outcome = outcome
        self.status = "ok" if outcome.ok else "error"
        self.duration_s = duration_s

    @property
    def applied_diff(self) -> str | None:
        """The diff as the change it made: while the call runs (what it would do) and once it
        succeeded; None when it ended otherwise (denied, refused, failed: not applied)."""
        return self.diff if self.outcome is None or self.outcome.ok else None

    @property
    def outcome_word(self) -> str:
        """For a narrow row: `exit 1`, `denied`...; '' while it runs."""
        return "" if self.outcome is None else self.outcome.word

    @property
    def outcome_label(self) -> str:
        """For a card or a header: `failed (exit code 1)`, `denied by you`...; `running` while it runs."""
        return "running" if self.outcome is None else self.outcome.label

    @property
    def summary(self) -> str:
        return short_arguments(self.name, self.arguments)

    @property
    def shown_output(self) -> str:
        """The diff if there is one (said not applied when the call did not succeed), then the
        result once finished, the live output while running (secrets masked)."""
        output = self._shown(brief=False)
        if not self.diff:
            return output
        if self.applied_diff is None:
            return f"[not applied: the call {self.outcome_label}; this is the change it asked for]\n{self.diff}\n\n{output}"
        return f"{self.diff}\n\n{output}"

    @property
    def diff_summary(self) -> str:
        """`+3 -1` for a diff applied (or about to be), else empty."""
        if not self.applied_diff:
            return ""
        added, removed = diff_counts(self.applied_diff)
        return f"+{added} -{removed}" if added or removed else ""

    def _shown(self, brief: bool) -> str:
        if self.status != "running":
            return mask(self.output)
        if self.hosts and not brief:
            return mask("\n".join(fleet_lines(self.hosts)) + "\n\n" + self.live_output)
        remote = "".join(f"[{host}] …{inert_line(text[-200:])}\n" for host, text in self.remote_text.items())
        return mask(self.live_output[-PREVIEW_SOURCE_CHARS:] if brief else self.live_output) + remote

    def preview(self, lines: int = 4, width: int | None = None) -> str:
        """The last `lines` lines of output, each cut to `width` (only the tail is looked at); for a
        call that runs on many hosts, the fleet view."""
        if self.hosts:
            tail = mask("\n".join(fleet_lines(self.hosts, lines))).splitlines()
        else:
            tail = self._shown(brief=True)[-PREVIEW_SOURCE_CHARS:].rstrip("\n").splitlines()[-lines:]
        if width is not None:
            tail = [line if len(line) <= width else line[: width - 1] + "…" for line in tail]
        return "\n".join(tail)

    @property
    def elapsed(self) -> str:
        """How long the call took; empty while it runs (a static figure would be stale)."""
        seconds = self.duration_s
        if seconds is None:
            return ""
        return figures.duration(seconds)

    @property
    def glyph(self) -> str:
        return "…" if self.outcome is None else outcome_glyph(self.outcome)


def diff_content(diff: str, *, lines: int | None = None, width: int | None = None, headers: bool = True) -> Content:
    """A diff coloured for display (added, removed, hunk headers, notes), inert whatever the file
    held: at most `lines` lines (then a note of how many more), each cut to `width`; without the
    `---`/`+++` lines unless `headers`."""
    all_lines = diff.split("\n")
    first_hunk = next((index for index, line in enumerate(all_lines) if line.startswith("@@ ")), len(all_lines))
    is_header = [index < first_hunk and line.startswith(("--- ", "+++ ")) for index, line in enumerate(all_lines)]
    if not headers:
        all_lines = [line for line, header in zip(all_lines, is_header, strict=True) if not header]
        is_header = [False] * len(all_lines)
    shown = all_lines if lines is None or len(all_lines) <= lines else all_lines[: max(0, lines - 1)]
    parts: list[Content] = []
    for raw, header in zip(shown, is_header, strict=False):
        line = inert_line(raw)
        if width is not None and len(line) > width:
            line = line[: max(1, width - 1)] + "…"
        style = "bold" if header else DIFF_STYLES.get(line[:1], "")
        parts.append(Content.styled(line, style) if style else Content(line))
    if len(shown) < len(all_lines):
        parts.append(Content.styled(f"… {len(all_lines) - len(shown):,} more lines (Enter shows all)", "$text-muted"))
    return Content("\n").join(parts)
