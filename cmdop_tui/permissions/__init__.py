"""Permissions: the safety floor, rules, modes, their TOML file and the audit log.

Every tool call, in the TUI and in headless mode alike, goes through :meth:`Permissions.decide`
before it runs. The decision is made in three layers, first match wins:

1. **The floor** (:func:`judge_call`), a first line that fails closed. Catastrophic or
   secret-leaking calls are refused, whatever the rules, the mode or the user say (``--yes``
   included); what it cannot resolve, where the call could reach a protected target, is asked
   of a person (``Decision.person_only``): no rule, mode or approve-all function answers it.
2. **Rules**: ``[machine:]tool(argument glob)`` with a verdict ``allow``, ``ask`` or ``deny``
   (see :class:`Rule`); session rules first, then the global rules file.
3. **The mode** decides what no rule matched: ``default``, ``accept_edits`` (file edits in the
   working tree go without asking), ``strict`` or ``auto`` (``--yes``); ``plan`` refuses every
   call that changes something, before the rules (:mod:`.modes`).

What a tool call acts on, and whether it changes things, comes from the tool's own declaration
(``Tool.subject``, ``Tool.mutating``): pass it as ``spec``, or the built-in tool of that name is
looked up.

The map, from the bottom up:

* the floor: :mod:`.scanning` (reading shell text), :mod:`.globs`, :mod:`.homes` (the
  password database), :mod:`.devices` (block devices), :mod:`.stores` (credential stores by
  kind), :mod:`.paths` (what is critical, secret or runs code later), :mod:`.context` (what a
  walk carries, the facts a line establishes, its doubts), :mod:`.verdicts`, :mod:`.parsing`
  (bashlex and the fallback lexer), :mod:`.producers` (what simple commands print),
  :mod:`.arithmetic`, :mod:`.braces`, :mod:`.parameters` (``${X%...}``), :mod:`.command_env`
  (LESSOPEN, GIT_PAGER...), :mod:`.expansion` (words as bash expands them), :mod:`.doubts`
  (what the floor cannot resolve), :mod:`.splitting` (IFS, ``read``), :mod:`.options`,
  :mod:`.find_checks` (find -delete/-exec), :mod:`.processes` (mass kills, fork bombs),
  :mod:`.programs` (rm, dd, chmod, mkfs, crontab...), :mod:`.environment` (printing secrets a
  .env loaded), :mod:`.code_text` and :mod:`.interpreters` (python -c, node -e...),
  :mod:`.scripts` (files written then run), :mod:`.editors` (sed, awk, vi, ed),
  :mod:`.runners` (git -c, tar, gdb, make...), :mod:`.secret_args`, :mod:`.shell_code` (shells,
  eval, ssh, tmux...), :mod:`.wrappers` (sudo, env, nsenter...), :mod:`.xargs` (xargs,
  parallel), :mod:`.redirects`, :mod:`.fallback` (unparsed text), :mod:`.walk` (the parsed
  tree), :mod:`.tool_strings` (every string of an MCP tool's arguments) and :mod:`.floor` (its
  entry points);
* the rules: :mod:`.arguments` (what rules judge), :mod:`.rules` (Rule and its globs),
  :mod:`.allow_always` (derive_rule), :mod:`.modes` (what accept_edits and plan let through),
  :mod:`.decisions` (floor, rules, mode);
* the files and the object: :mod:`.store` (the TOML file, the audit log), :mod:`.rulebook`
  (Permissions), :mod:`.listing` (``cmdop-tui permissions list``).

API
---
``judge_call(tool, args, *, spec=None) -> FloorVerdict | None``
    The floor alone: ``FloorVerdict(verdict, reason)``, ``"deny"`` (refused) or ``"ask"`` (only
    a person may allow it: ``person_only``), or None.
``judge_command(command, *, cwd=None) -> FloorVerdict | None``
    The same for one shell command line.
``floor_violation(tool, args, *, spec=None) -> str | None``, ``check_command(command, *, cwd=None)``
    The floor's refusals alone: a reason the model can read, or None.
``Rule``, ``Rule.parse(text, verdict)``; ``derive_rule(tool, args, machine, *, placement=None, spec=None)``
    Rules and the rule "Allow always" would add (for a call over several machines, scoped to
    them: ``fanout_hosts(args)``, named for people by ``fanout_label(hosts)``).
``main_argument(tool, args, *, spec=None)``
    The argument rules match for a call.
``Decision(verdict, reason, rule, floor, person_only)``
    ``verdict`` is ``"allow"``, ``"ask"`` or ``"deny"``; ``rule`` the deciding rule (or None);
    ``floor`` True when the floor refused; ``person_only`` True for an ask only a person may
    answer (the gate must not let a rule, ``--yes`` or an approve-all function answer it).
``Permissions`` (thread-safe)
    ``Permissions.load(path=None, mode=None, *, audit_path=None, audit=True)``: the global rules
    file (default ``config_dir()/permissions.toml``); `mode` wins over the file's ``mode``.
    ``decide(tool, args, *, machine=None, placement=None, mutating=None, cwd=None, spec=None)
    -> Decision``: pure, records nothing (`placement`: where the call runs, ``Placement`` of
    ``tools/placement.py``: its machines, each with the names whose rules apply to it,
    ``{"db1": ("db1", "tag:db")}``; a fan-out is judged on each; without it, `machine`).
    ``check(...)``: decide, then record. ``record(decision, tool, args,
    machine=None, outcome=None, *, call_id=None, spec=None)``: one audit line.
    ``add_session_rule``, ``add_rule`` (saved at once), ``remove_rule``, ``allow_always(tool,
    args, machine="local", *, placement=None, cwd=None, session=False, any_machine=False,
    spec=None) -> Rule``,
    ``save()``.
``list_rules_text(permissions=None, *, path=None) -> str``
    The rules with their source, for ``cmdop-tui permissions list``.
``PermissionsError``
    A rules file that cannot be used; the message names the file and the line.
``rules_path()``
    Where the global rules file lives.
"""

from .allow_always import derive_rule, fanout_label
from .arguments import fanout_hosts, main_argument
from .decisions import Decision
from .floor import check_command, floor_violation, judge_call, judge_command
from .listing import list_rules_text
from .rulebook import Permissions
from .rules import Rule
from .store import PermissionsError, rules_path
from .verdicts import FloorVerdict

__all__ = [
    "Decision",
    "FloorVerdict",
    "Permissions",
    "PermissionsError",
    "Rule",
    "check_command",
    "derive_rule",
    "fanout_hosts",
    "fanout_label",
    "floor_violation",
    "judge_call",
    "judge_command",
    "list_rules_text",
    "main_argument",
    "rules_path",
]
