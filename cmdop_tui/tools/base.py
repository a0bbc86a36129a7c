"""The shape of a tool: what the model sees (name, description, schema) and what runs."""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.machine import Machine, MachineResult, ProgressSink, SandboxRefusal
from cmdop_tui.machines.spec import LOCAL, MachineError
from cmdop_tui.support.images import decoded_size
from cmdop_tui.support.text import truncate_middle

from .outcome import OK, OutcomeKind, ToolOutcome, command_outcome

if TYPE_CHECKING:
    from cmdop_tui.machines.fleet import Fleet

    from .jobs import JobTable

NestedSink = Callable[[dict[str, Any]], None]


MAX_IMAGE_BASE64 = 1_000_000  # characters of one image's base64 (the API takes 5 MB; each request resends it)
MAX_RESULT_IMAGES = 4  # images of one result
MAX_RESULT_IMAGES_BASE64 = 2_000_000  # characters of base64 in one result's images together
MAX_IMAGE_SIDE = 8000  # pixels: the API refuses an image larger on either side


@dataclass(frozen=True)
class ResultImage:
    """An image a tool result carries beside its text, as the Messages API takes it: the base64
    of a JPEG, PNG, GIF or WebP (its `media_type` read from its bytes: `support/images.py`), its
    pixels when its header says them. `note` is the line its result's text names it with."""

    media_type: str
    data: str
    width: int | None = None
    height: int | None = None

    @property
    def note(self) -> str:
        pixels = f", {self.width}x{self.height}" if self.width and self.height else ""
        return f"[image: {self.media_type}, {size_text(decoded_size(self.data))}{pixels}]"


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model as a `tool_result`: text, and the images it names (each
    named in the text too, by its `note`, for what shows text only: the tool card, an export).
    `outcome`: how the call ended, typed where it is known (None: ok, or failed when `is_error`,
    see `settled`)."""

    content: str
    is_error: bool = False
    images: tuple[ResultImage, ...] = ()
    outcome: ToolOutcome | None = field(default=None, compare=False)  # said beside the text, not part of it

    @classmethod
    def error(cls, message: str, kind: OutcomeKind = OutcomeKind.FAILED, reason: str = "") -> ToolResult:
        """An error result; `kind` and `reason` say how the call ended (the reason: the message's
        first line, unless given)."""
        return cls(content=message, is_error=True, outcome=ToolOutcome(kind, reason or first_line(message)))

    @classmethod
    def of(cls, answer: MachineResult) -> ToolResult:
        """What a machine answered, as the result the model gets, with how it ended."""
        if answer.sandbox_denied is not None:
            outcome = ToolOutcome(
                OutcomeKind.REFUSED_BY_SANDBOX, f"the sandbox refused to {answer.sandbox_denied.needs}"
            )
        elif answer.timed_out_ms is not None:
            outcome = command_outcome(None, timed_out=True, timeout_ms=answer.timed_out_ms)
        elif answer.exit_code is not None:
            outcome = command_outcome(answer.exit_code)
        else:
            outcome = ToolOutcome(OutcomeKind.FAILED, first_line(answer.text)) if answer.is_error else OK
        return cls(answer.text, is_error=answer.is_error, outcome=outcome)

    @property
    def settled(self) -> ToolOutcome:
        """How the call ended: its `outcome`, else ok, or failed (its first line the reason)."""
        if self.outcome is not None:
            return self.outcome
        return ToolOutcome(OutcomeKind.FAILED, first_line(self.content)) if self.is_error else OK

    def bounded(self) -> ToolResult:
        """This result with its images within the bounds (MAX_IMAGE_BASE64 each, MAX_RESULT_IMAGES
        and MAX_RESULT_IMAGES_BASE64 together, MAX_IMAGE_SIDE): one past them is left out, and
        the text says so where it named it."""
        kept: list[ResultImage] = []
        content, spent = self.content, 0
        for image in self.images:
            why = _too_big(image, len(kept), spent)
            if why is None:
                kept.append(image)
                spent += len(image.data)
            else:
                dropped = f"{image.note[:-1]}: not sent, {why}]"
                content = content.replace(image.note, dropped, 1) if image.note in content else f"{content}\n{dropped}"
        return self if len(kept) == len(self.images) else replace(self, content=content, images=tuple(kept))


def _too_big(image: ResultImage, count: int, spent: int) -> str | None:
    """Why `image` cannot go with `count` images of `spent` base64 characters already, or None."""
    if len(image.data) > MAX_IMAGE_BASE64:
        return f"larger than {size_text(MAX_IMAGE_BASE64 * 3 // 4)}"
    if max(image.width or 0, image.height or 0) > MAX_IMAGE_SIDE:
        return f"larger than {MAX_IMAGE_SIDE} pixels on a side"
    if count >= MAX_RESULT_IMAGES:
        return f"a result carries {MAX_RESULT_IMAGES} images at most"
    if spent + len(image.data) > MAX_RESULT_IMAGES_BASE64:
        return f"a result carries {size_text(MAX_RESULT_IMAGES_BASE64 * 3 // 4)} of images at most"
    return None


REASON_CHARS = 500  # of an error's first line, as the reason a card's detail shows


def first_line(text: str) -> str:
    """The first non-empty line of `text`, within REASON_CHARS: an error's reason."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def size_text(count: int) -> str:
    """A size in bytes for people: `812 B`, `12 kB`, `3.4 MB`."""
    if count < 1000:
        return f"{count} B"
    if count < 1_000_000:
        return f"{round(count / 1000)} kB"
    return f"{count / 1_000_000:.1f} MB"


@dataclass
class ToolContext:
    """Everything a running tool may use besides its arguments.

    `machines` is the session's fleet (None: the local machine only). `nested` receives the
    events of an agent working for this call on another machine (ask_machine). `recall` gives
    the whole output of an earlier call of the session by its id (None: no such call); `keep(text)`
    keeps this call's whole output there when its result holds it capped (False: nowhere to keep it).
    `keep_host_output(host, text)` keeps one host's own stream of a call over many, whole, as it
    comes (what `progress` gets is kept that way by the executor).
    `escalate(needs)` asks the user whether what the sandbox refused may be done outside it: None
    when allowed, else how the asking ended (denied, no answer, no one to ask...) and why
    (`escalate` None: nobody to ask, so no). `denied_on(machine)` is why a permission rule scoped to that
    machine denies this call there (None: none does), for a tool that runs on many machines.
    `stopped_with(result)` is what a tool being stopped had done (a fan-out's finished hosts):
    the history keeps it in place of a bare "cancelled". `jobs` are the session's background
    jobs (tools/jobs.py; None: it keeps none).
    """

    call_id: str
    cwd: Path
    progress: ProgressSink = lambda text, stream: None
    machines: Fleet | None = None
    nested: NestedSink = lambda event: None
    recall: Callable[[str], str | None] = lambda call_id: None
    keep: Callable[[str], bool] = lambda text: False
    keep_host_output: Callable[[str, str], None] = lambda host, text: None
    escalate: Callable[[SandboxRefusal], Awaitable[ToolOutcome | None]] | None = None  # None: allowed
    denied_on: Callable[[str], str | None] = lambda machine: None
    stopped_with: Callable[[ToolResult], None] = lambda result: None
    jobs: JobTable | None = None

    def machine(self, args: Mapping[str, Any]) -> Machine:
        """The machine this call is for (its `machine` argument), relative paths starting at `cwd`
        when it is this one.

        Raises MachineError for an unknown, ambiguous, offline or hidden machine.
        """
        name = args.get("machine")
        if self.machines is not None:
            return self.machines.machine(name, cwd=self.cwd)
        if name not in (None, "", LOCAL):
            raise MachineError(f"unknown machine {name!r}: this session has only the local machine")
        return LocalMachine(self.cwd)


ToolFn = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]

SubjectKind = Literal["command", "path", "host"]
RuleReach = Literal["parent", "itself", "search", "exact"]


@dataclass(frozen=True)
class Subject:
    """What one call of a tool acts on, as the tool declares it: the argument permission rules
    match (`execute_command(git *)`, `read_file(/etc/**)`) and what kind of thing it names.

    `default` stands in when the call leaves the argument out; `relative_to` names an argument
    the value is relative to (glob's pattern under its `cwd`); `many` marks a list of them.
    For paths, `reads_content` says the call sees what a file holds, not just its name (the
    floor then guards secrets), and `reach` how far an "Allow always" rule made from a call
    reaches: the file's folder ("parent"), the folder named ("itself"), the tree searched
    ("search"), or just the argument given ("exact"). `every_string`: the tool's arguments
    were declared by no one here (an MCP server's), so the safety floor judges every string
    in them, at any depth, whatever it is called: each that names a path by the path rules,
    each under a key named like a command as a shell command. `argument` may then be "" (no
    main argument: rules match the first command, path, pattern or hostname string).
    """

    kind: SubjectKind
    argument: str
    default: str | None = None
    relative_to: str | None = None
    many: bool = False
    reads_content: bool = False
    reach: RuleReach = "exact"
    every_string: bool = False

    def value(self, args: Mapping[str, Any]) -> str | list[str]:
        """The subject of this call: a string, or a list of strings when `many`."""
        raw = args.get(self.argument)
        if self.many:
            return [str(item) for item in raw] if isinstance(raw, list) else []
        if raw is None and self.default is not None:
            return self.default
        if not isinstance(raw, str):
            return ""
        base = args.get(self.relative_to) if self.relative_to else None
        return posixpath.join(base, raw) if isinstance(base, str) and base else raw


@dataclass(frozen=True)
class Tool:
    """A tool the model can call.

    `tags` are categories for the turn-1 allowlist; `core` tools survive that allowlist;
    `mutating` tools change the machine and need approval unless the user waived it; `subject`
    is what a call acts on, which permission rules match (None: rules match the tool name only).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    run: ToolFn
    tags: frozenset[str] = field(default_factory=frozenset)
    core: bool = False
    mutating: bool = False
    subject: Subject | None = None
    aliases: frozenset[str] = frozenset()  # other names permission rules know it by (an MCP tool's full name)

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API expects it in `tools`."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def host_event(host: str, state: str, line: str = "", elapsed_s: float | None = None) -> dict[str, Any]:
    """The nested event that tells the fleet view how one host of a call over many is doing
    (queued, running, done, failed...), with its last line."""
    return {"type": "host", "hostname": host, "state": state, "line": line, "elapsed_s": elapsed_s}


def capped(text: str, limit: int, ctx: ToolContext, what: str = "output") -> str:
    """`text` cut to its first and last `limit` characters or so, the whole kept for `recall`
    (`ctx.keep`), and the cut saying where the rest is, or that nothing holds it."""
    if len(text) <= limit:
        return text
    if ctx.keep(text):
        where = f"the whole {what} ({len(text):,} characters) is kept: recall id {ctx.call_id!r} pages through it"
    else:
        where = "the cut part is not kept: this session has no transcript"
    return f"{truncate_middle(text, limit)}\n[{where}]"
