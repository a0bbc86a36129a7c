"""The settings file's keys, declared once: for each key the TOML types it takes, its bounds or
choices, what a good value is (the words the error messages use), a line of help and, where the
default says little, an example; table by table, and the file's tables in the order the
first-run template and `cmdop-tui config keys` show them (config/template.py renders both).

A key's default is its field's default in the frozen data (`Section.defaults`: config/model.py,
the machines' specs), so it is written once. One generic check (`TableKeys.check`) reads these
declarations: a new key is one line here plus its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cmdop_tui.config.defaults import DEFAULT_ALIASES
from cmdop_tui.config.key_types import Key as Key
from cmdop_tui.config.key_types import TableKeys as TableKeys
from cmdop_tui.config.key_types import typed
from cmdop_tui.config.model import (
    NOTIFY_METHODS,
    PERMISSION_MODES,
    AgentProfile,
    CheckpointSettings,
    ContextSettings,
    NotifySettings,
    Settings,
)
from cmdop_tui.machines.sandbox_policy import MODES, SandboxPolicy
from cmdop_tui.machines.spec import MachineSpec

MCP_TABLES = ("mcp", "mcp_servers", "mcpServers")  # [mcp.NAME]; the other spellings other tools use
MCP_CONNECT_TIMEOUT_S = 30.0  # an MCP server's `timeout`: connecting and listing its tools


_POSITIVE = "a positive number"
_TRUE_OR_FALSE = "true or false"
_TOKENS = "a number of tokens (>= 256)"
_WRONG = "{place}: {key!r} must be {what}"
_SECTION_UNKNOWN = "{place} has no setting {key!r}"

_TABLES = tuple(
    "agents aliases prices models machines context sandbox checkpoints notify groups inventory hooks".split()
)
TOP_LEVEL = TableKeys(
    (
        Key(
            "agent",
            help='the profile in use (--agent, CMDOP_AGENT): "default", "autonomous" or yours',
            example="default",
        ),
        *(Key(table) for table in (*_TABLES, *MCP_TABLES)),
        Key(
            "max_budget_usd",
            (int, float),
            _POSITIVE,
            positive=True,
            help="stop before the session's estimated cost passes this (USD)",
            example=5.0,
        ),
        Key(
            "approval_timeout_s",
            (int, float),
            _POSITIVE,
            positive=True,
            help="no answer to an approval this long means deny",
        ),
        Key(
            "low_bandwidth",
            (bool,),
            _TRUE_OR_FALSE,
            help="fewer frames, no animations (default: on when over SSH)",
            example=False,
        ),
        Key("theme", help="also cmdop-light, cmdop-high-contrast, cmdop-amber"),
        Key(
            "permission_mode",
            what=f"one of {', '.join(PERMISSION_MODES)}",
            choices=PERMISSION_MODES,
            help="default: changes ask; accept_edits: file edits here do not; plan: nothing changes; "
            "auto: like --yes; strict: changes refused",
        ),
        Key("router_model", help="picks the tools a first turn is offered"),
        Key("stream", help="stream the model's replies as they are written"),
        Key(
            "base_url",
            help="another Anthropic-compatible endpoint (or ANTHROPIC_BASE_URL)",
            example="https://api.example.com",
        ),
        Key("local_model", help="for --local (default: the bundled SmolLM2)", example="~/models/model.gguf"),
        Key("ssh_config", help="read for Host entries too (default: ~/.ssh/config)", example="~/.ssh/config"),
    ),
    unknown="{place}: unknown setting {key!r} (known: {known})",
    wrong=_WRONG,
)
TOP_LEVEL_KEYS = frozenset(TOP_LEVEL.names)

PROFILE = TableKeys(
    (
        typed("model", str, "an alias of [aliases] (@fast, @balanced, @smart) or a model id"),
        typed("max_turns", int, "model requests in one run"),
        typed("max_tokens", int, "a reply's cap"),
        typed("loop", bool, "go on after each reply until a breaker is said (or max_loops)"),
        typed("loop_message", str, "what the loop says to go on", "Go on. Say 'The task is done.' when it is."),
        typed("loop_breakers", list, "replies that end the loop", ["The task is done."]),
        typed("max_loops", int, "the loop's bound"),
        typed("allow_tags", list, "on turn 1 offer only tools with these tags (plus core tools)"),
        typed("hidden_tools", list, "tools never offered"),
        typed("instructions", str, "added to the system prompt"),
        typed("parallel_tools", bool, "read-only calls of one reply run together"),
        typed("thinking_budget", int, "> 0 turns extended thinking on"),
        typed("sandbox", str, "this profile's sandbox mode (default: [sandbox] mode)", "strict"),
        typed("sandbox_writable", list, "more places this profile's commands may write", ["~/scratch"]),
    ),
    unknown="{place}: unknown key {key!r}",
    wrong=_WRONG,
)

MACHINE = TableKeys(
    (
        typed("host", str, "what ssh is given (default: the table's name)", "10.0.0.21"),
        typed("user", str, "default: ssh's", "ops"),
        typed("port", int, "default: ssh's", 22),
        typed("tags", list, "names for selectors: tag:web", ["web"]),
        typed("cmdop", str, "where cmdop-tui is on that machine (for ask_machine)"),
        typed("writable", list, "more places its sandbox lets commands write", ["/srv/app"]),
    ),
    unknown="{place}: unknown key {key!r} (known: {known})",
    wrong=_WRONG,
)

CONTEXT = TableKeys(
    (
        Key(
            "compact_at",
            (int, float),
            "a share of the window from 0.3 to 0.95",
            low=0.3,
            high=0.95,
            help="share of the context window a request may reach",
        ),
        Key("tail_tokens", (int,), _TOKENS, low=256, help="the recent part kept word for word"),
        Key("summary_tokens", (int,), _TOKENS, low=256, help="a summary's cap"),
        Key(
            "summary_model",
            help="writes the summaries (default: @fast when [aliases] sets it, else the session's model)",
            example="@fast",
        ),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

SANDBOX = TableKeys(
    (
        Key(
            "mode",
            what=f"one of {', '.join(MODES)}",
            choices=MODES,
            help="off | workspace (write only here and /tmp) | strict (and no network)",
        ),
        Key(
            "writable",
            (list,),
            "a list of paths",
            items=str,
            help="more places commands may write",
            example=["~/projects"],
        ),
        Key("network", (bool,), _TRUE_OR_FALSE, help="commands may reach the network"),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

CHECKPOINTS = TableKeys(
    (
        Key("enabled", (bool,), _TRUE_OR_FALSE, help="keep a checkpoint before each turn that changes something"),
        Key("max_file_mb", (int, float), _POSITIVE, positive=True, help="a larger file is left out of a checkpoint"),
        Key("keep_days", (int,), "a number of days (>= 1)", low=1, help="older checkpoints are removed"),
        Key(
            "skip", (list,), "a list of machine names", items=str, help="machines where none is taken", example=["db1"]
        ),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

NOTIFY = TableKeys(
    (
        Key(
            "enabled",
            (bool,),
            _TRUE_OR_FALSE,
            help="tell the desktop when the app waits and its terminal is not focused",
        ),
        Key(
            "method",
            what=f"one of {', '.join(NOTIFY_METHODS)}",
            choices=NOTIFY_METHODS,
            help="osc9 | osc777 (desktop notifications) | bell | auto (the one the terminal reads, and the bell)",
        ),
        Key("min_seconds", (int, float), _POSITIVE, positive=True, help="a command that ran this long is told of"),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

INVENTORY = TableKeys(
    (
        Key(
            "ansible",
            (str,),
            "a path",
            help="its hosts become machines, its groups their tags (tag:GROUP)",
            example="~/ansible/hosts",
        ),
    ),
    unknown=_SECTION_UNKNOWN + " (known: {known})",
    wrong="{place} {key!r} must be {what}",
)

MODEL = TableKeys(
    (
        Key(
            "context_window",
            (int,),
            "a number of tokens (>= 1024)",
            low=1024,
            help="in tokens, when the endpoint's Models API does not say (otherwise 200,000)",
            example=32768,
        ),
        Key(
            "idle_timeout_s",
            (int, float),
            "a number of seconds (> 0, at most 3600)",
            high=3600,
            positive=True,
            help=(
                "how long its reply may pause before the stream counts as dead and is retried; a model "
                "on a CPU needs more (default 10, 120 for the local model of --local)"
            ),
            example=60,
        ),
    ),
    unknown="{place} takes context_window and idle_timeout_s",
    wrong="{place} {key} must be {what}",
)

PRICE = TableKeys(
    (
        Key("input", (int, float), "numbers input and output", help="USD per million tokens read", example=3.0),
        Key("output", (int, float), "numbers input and output", help="USD per million tokens written", example=15.0),
    ),
    unknown="{place} has no price {key!r}",
    wrong="{place} needs {what} (USD per million tokens)",
)

# Checked by the MCP servers' own reader (cmdop_tui/mcp/), which also reads a project's .mcp.json.
MCP_SERVER = TableKeys(
    (
        Key("command", help="a stdio server: the program (a list, or a whole line, works too)", example="npx"),
        Key("args", help="its arguments (a list, or one line)", example=["-y", "@modelcontextprotocol/server-github"]),
        Key("env", help="its environment; ${VAR} is read from yours", example={"GITHUB_TOKEN": "${GITHUB_TOKEN}"}),
        Key("cwd", help="where it runs", example="~/src"),
        Key("url", help="an HTTP server instead: its address", example="https://mcp.example.com/mcp"),
        Key("headers", help="sent with each request", example={"Authorization": "Bearer ${DOCS_TOKEN}"}),
        Key("type", help="stdio, http (streamable HTTP) or sse (default: http when a url is given)", example="stdio"),
        Key("transport", help="another spelling of type", example="stdio"),
        Key("timeout", help="seconds to connect and list the tools", example=MCP_CONNECT_TIMEOUT_S),
        Key("enabled", help="false: configured, not started", example=True),
        Key("disabled", help="another spelling: true is enabled = false", example=False),
    ),
    unknown="{place}: unknown key {key!r} (known: {known})",
    wrong=_WRONG,
)


# Checked by the hooks' own reader (cmdop_tui/hooks/shape.py), which also reads .cmdop/hooks.json.
HOOK = TableKeys(
    (
        Key(
            "matcher",
            help="the tools it runs for: a regular expression, whole (Claude Code's names match too)",
            example="execute_command|Bash",
        ),
        Key(
            "machines", help="only for calls on these machines: a machine, tag:T or a group (ours)", example="tag:prod"
        ),
        Key("command", help="a shell command line; the event comes as JSON on its stdin", example="~/bin/check-deploy"),
        Key("timeout", help="seconds before it is killed (default 60)", example=30),
        Key(
            "on_failure",
            help='"block": a crash, a timeout or invalid JSON blocks (default: "continue")',
            example="block",
        ),
    ),
    unknown="{place}: unknown key {key!r} (known: {known})",
    wrong=_WRONG,
)


@dataclass(frozen=True)
class Section:
    """A table of the file, as the template and `config keys` show it: its declared keys (none:
    free names, as in [aliases]), whose field defaults give the keys' defaults, and its help.
    `each` names an example table of a table of tables ([agents.NAME]); `entries` are the
    example lines of a table of free names."""

    table: str
    help: str
    keys: TableKeys | None = None
    defaults: Any = None  # an instance of the frozen data the table is read into
    each: str | None = None
    entries: Mapping[str, Any] = field(default_factory=dict)
    array: bool = False  # an array of tables: [[hooks.PreToolUse]]


SECTIONS = (
    Section("", "", TOP_LEVEL, Settings()),
    Section(
        "agents",
        "a profile: how an agent behaves (define your own beside default)",
        PROFILE,
        AgentProfile(),
        each="default",
    ),
    Section(
        "aliases",
        "names for models, used as @NAME",
        entries={name.removeprefix("@"): model for name, model in DEFAULT_ALIASES.items()},
    ),
    Section("sandbox", "what commands may touch (Linux, bubblewrap)", SANDBOX, SandboxPolicy()),
    Section("context", "when the conversation is compacted (summarised)", CONTEXT, ContextSettings()),
    Section("checkpoints", "what /rewind can go back to", CHECKPOINTS, CheckpointSettings()),
    Section(
        "notify", "desktop notifications (needs focus reporting: tmux set -g focus-events on)", NOTIFY, NotifySettings()
    ),
    Section("models", "a model's context window and stream idle timeout", MODEL, each='"my-local-model"'),
    Section("prices", "a model's price, for the cost estimate and budgets", PRICE, each='"claude-sonnet-5-5"'),
    Section(
        "machines", "Host entries of ~/.ssh/config are machines too", MACHINE, MachineSpec("web1", "web1"), each="web1"
    ),
    Section(
        "groups", "names for sets of machines (run_on_machines, `machine`)", entries={"web": ["web1", "web2", "tag:db"]}
    ),
    Section("inventory", "an Ansible inventory (INI or YAML)", INVENTORY),
    Section(
        "mcp",
        "an MCP server (also [mcp_servers.NAME], [mcpServers.NAME]; a project's .mcp.json is read too)",
        MCP_SERVER,
        each="github",
    ),
    Section(
        "hooks",
        "your programs at the session's points (SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest, "
        "PostToolUse, Notification, Stop, PreCompact); a project's .cmdop/hooks.json too, once trusted",
        HOOK,
        each="PreToolUse",
        array=True,
    ),
)
