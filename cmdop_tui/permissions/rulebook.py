"""The Permissions object: one session's rules (its own and the global file's), its mode, and
its audit log. Every tool call goes through :meth:`Permissions.decide` before it runs.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cmdop_tui.tools.base import Tool
from cmdop_tui.tools.placement import Placement

from . import decisions, store
from .allow_always import derive_rule
from .arguments import declaration, fanout_hosts, main_argument
from .decisions import Decision, Mode, check_mode, machine_of
from .rules import Rule
from .store import PermissionsError, read_rules_file, write_rules_file

log = logging.getLogger(__name__)


class Permissions:
    """Rules, mode and audit log for one session. Thread-safe.

    ``Permissions.load()`` reads the global rules file; session rules live in memory only.
    Attributes: ``mode`` (settable), ``rules`` (global), ``session_rules``, ``path``,
    ``audit_path``, ``last_audit_error``, ``working_tree`` (the session's directory, where
    accept_edits mode lets file edits through; None: nowhere).
    """

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        mode: str = "default",
        path: Path | None = None,
        audit_path: Path | None = None,
        audit: bool = True,
    ) -> None:
        self._mode: Mode = check_mode(mode)
        self._global: list[Rule] = [replace(r, source="global") for r in rules]
        self._session: list[Rule] = []
        self.path = path
        self.audit_path = audit_path
        self.audit = audit
        self._file_mode: str | None = None
        self._lock = threading.RLock()
        self.last_audit_error: OSError | None = None
        self.working_tree: str | None = None

    # --- loading and saving --------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: Path | None = None, mode: str | None = None, *, audit_path: Path | None = None, audit: bool = True
    ) -> Permissions:
        """Global rules from `path` (default ``config_dir()/permissions.toml``); a missing file
        means none.

        `mode` wins over the file's ``mode``, which wins over ``"default"``. Raises
        :class:`PermissionsError` naming the file and the line when the file cannot be used.
        """
        path = path or store.rules_path()
        rules, file_mode = read_rules_file(path)
        chosen = mode or file_mode or "default"
        try:
            check_mode(chosen)
        except ValueError as exc:
            if mode:
                raise
            raise PermissionsError(f"{path}: {exc}") from None
        perms = cls(rules, mode=chosen, path=path, audit_path=audit_path, audit=audit)
        perms._file_mode = file_mode
        return perms

    def save(self) -> None:
        """Write the global rules to the file, atomically, mode 0600.

        Refuses (PermissionsError) to replace a file that exists but cannot be parsed, so a
        hand-edited file with a typo is never lost.
        """
        with self._lock:
            path = self._require_path()
            if path.exists():
                read_rules_file(path)  # raises on a corrupt file: never overwrite it
            write_rules_file(path, self._global, self._file_mode)

    def _require_path(self) -> Path:
        if self.path is None:
            self.path = store.rules_path()
        return self.path

    # --- the mode and the rules ----------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = check_mode(value)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The global rules (from the file), in file order."""
        with self._lock:
            return tuple(self._global)

    @property
    def session_rules(self) -> tuple[Rule, ...]:
        with self._lock:
            return tuple(self._session)

    def add_session_rule(self, rule: Rule | str, verdict: str | None = None) -> Rule:
        """Add a rule for this session only (not saved). A string is parsed (`verdict` default allow)."""
        parsed = _as_rule(rule, verdict, source="session")
        with self._lock:
            if not any(r.text == parsed.text and r.verdict == parsed.verdict for r in self._session):
                self._session.append(parsed)
        return parsed

    def add_rule(self, rule: Rule | str, verdict: str | None = None) -> Rule:
        """Add a global rule and save it to the file (re-read first, so concurrent sessions'
        additions are kept)."""
        parsed = _as_rule(rule, verdict, source="global")
        with self._lock:
            path = self._require_path()
            on_disk, file_mode = read_rules_file(path)
            if not any(r.text == parsed.text and r.verdict == parsed.verdict for r in on_disk):
                on_disk.append(parsed)
            write_rules_file(path, on_disk, file_mode)
            self._global, self._file_mode = on_disk, file_mode
        return parsed

    def remove_rule(self, rule: Rule | str, verdict: str | None = None) -> bool:
        """Remove a rule (session first, then global, saving the file); True if one was removed."""
        text = rule.text if isinstance(rule, Rule) else Rule.parse(rule).text
        wanted = rule.verdict if isinstance(rule, Rule) and verdict is None else verdict

        def same(candidate: Rule) -> bool:
            return candidate.text == text and (wanted is None or candidate.verdict == wanted)

        with self._lock:
            for index, candidate in enumerate(self._session):
                if same(candidate):
                    del self._session[index]
                    return True
            path = self._require_path()
            on_disk, file_mode = read_rules_file(path)
            kept = [r for r in on_disk if not same(r)]
            if len(kept) == len(on_disk):
                return False
            write_rules_file(path, kept, file_mode)
            self._global, self._file_mode = kept, file_mode
            return True

    def allow_always(
        self,
        tool: str,
        args: Mapping[str, Any],
        machine: str = "local",
        *,
        placement: Placement | None = None,
        cwd: str | None = None,
        session: bool = False,
        any_machine: bool = False,
        spec: Tool | None = None,
    ) -> Rule:
        """ "Allow always" from the approval modal: add :func:`derive_rule`'s rule and return it.

        Saved to the global file, or kept for this session with `session=True`. A call only a
        person may allow (the floor cannot tell what it does) gets no rule: PermissionsError
        says so, and the call the person approved runs once. `placement`: where the call runs
        (`ToolCall.placement`; without it, on `machine`).
        """
        if self.decide(tool, args, machine=machine, placement=placement, cwd=cwd, spec=spec).person_only:
            raise PermissionsError(
                "not saved: the safety floor cannot tell what this call does, so only a person may "
                "allow it, each time it is made (no rule can)"
            )
        rule = derive_rule(tool, args, machine, placement=placement, cwd=cwd, any_machine=any_machine, spec=spec)
        _check_reads_back(rule)
        return self.add_session_rule(replace(rule, source="session")) if session else self.add_rule(rule)

    # --- deciding ------------------------------------------------------------------------------

    def decide(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        machine: str | None = None,
        placement: Placement | None = None,
        mutating: bool | None = None,
        cwd: str | None = None,
        spec: Tool | None = None,
    ) -> Decision:
        """Decide one tool call: floor, then rules (session, then global), then the mode.

        `placement` is where the call runs (the loop's, carried on the call: `ToolCall.placement`);
        without it, `machine` is the one machine it runs on (``"local"`` for this one; pass the
        fleet's resolved name when a session is scoped to a machine), and given neither, the
        call's own ``machine`` argument, else each machine its ``machines`` argument names
        (run_on_machines), else ``"local"``. `spec` is the tool's declaration (None: the built-in
        tool called `tool`; a tool nobody declared is mutating and has no subject). `mutating`
        overrides ``spec.mutating``. `cwd`, the session's directory, resolves relative paths in
        path rules. A call that fans out is judged on each machine of its placement
        (:func:`.decisions.decide_many`), by the rules scoped to that machine or to a selector
        that chose it (the gate adds each machine's tags and groups: a rule scoped to `tag:db`
        covers db1 whatever name the call uses); a call on one machine, by the rules scoped to
        it or to its placement's other names for it. Pure: nothing is recorded (see :meth:`check`).
        """
        args = args if isinstance(args, Mapping) else {}
        placed = placement if placement is not None and placement.machines else placed_by(args, machine)
        with self._lock:
            session, global_ = list(self._session), list(self._global)

        def on(host: str, floor: bool = True) -> Decision:
            return decisions.decide(
                tool,
                args,
                machine=host,
                floor=floor,
                selectors=placed.selectors.get(host, ()),
                mutating=mutating,
                cwd=cwd,
                spec=declaration(tool, spec),
                mode=self._mode,
                working_tree=self.working_tree,
                session=session,
                global_=global_,
            )

        if not placed.fans_out:
            return on(placed.machines[0])
        first = on(placed.machines[0])  # the floor does not depend on the machine: judged once
        if _floor_decided(first):
            return first
        skips_hosts = bool(fanout_hosts(args))  # run_on_machines checks each host before it runs there
        return decisions.decide_many(list(placed.machines), lambda h: on(h, floor=False), skips_hosts=skips_hosts)

    # --- the audit log -------------------------------------------------------------------------

    def check(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        machine: str | None = None,
        mutating: bool | None = None,
        cwd: str | None = None,
        call_id: str | None = None,
        spec: Tool | None = None,
    ) -> Decision:
        """:meth:`decide`, then :meth:`record` the decision; returns it."""
        decision = self.decide(tool, args, machine=machine, mutating=mutating, cwd=cwd, spec=spec)
        self.record(decision, tool, args, machine, call_id=call_id, spec=spec)
        return decision

    def record(
        self,
        decision: Decision,
        tool: str,
        args: Mapping[str, Any],
        machine: str | None = None,
        outcome: str | None = None,
        *,
        call_id: str | None = None,
        spec: Tool | None = None,
    ) -> None:
        """Append one decision (and, if known, its outcome) to the audit log.

        Call it again with `outcome` (e.g. "approved", "denied by user", "exit 0") when the
        outcome is known; each call is one line. An I/O error is logged and swallowed
        (`last_audit_error` keeps it): a full disk must not stop the agent loop. The argument
        is stored as given; redacting secrets in it is the caller's job.
        """
        if not self.audit:
            return
        args = args if isinstance(args, Mapping) else {}
        entry = {
            "time": store.now(),
            "call_id": call_id,
            "tool": tool,
            "machine": machine_of(machine, args),
            "argument": main_argument(tool, args, spec=spec),
            "verdict": decision.verdict,
            "reason": decision.reason,
            "rule": decision.rule.text if decision.rule else None,
            "rule_source": decision.rule.source if decision.rule else None,
            "floor": decision.floor,
            "person_only": decision.person_only,
            "mode": self.mode,
            "outcome": outcome,
        }
        self._append(entry)

    def record_hook(self, entry: Mapping[str, Any]) -> None:
        """Append what a hook did (its event, command, decision, reason) to the audit log, as a
        line of its own (`"hook": event`); the caller redacts secrets in it."""
        if self.audit:
            self._append({"time": store.now(), **entry, "mode": self.mode})

    def _append(self, entry: Mapping[str, Any]) -> None:
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            target = self.audit_path or store.audit_path()
            self.audit_path = target
            try:
                store.append_audit_line(target, line)
                self.last_audit_error = None
            except OSError as exc:
                self.last_audit_error = exc
                log.warning("cannot write the audit log %s: %s", target, exc)


def placed_by(args: Mapping[str, Any], machine: str | None) -> Placement:
    """Where a call runs when no placement was given: `machine`, else the machines its
    `machines` argument names (as given), else its own `machine` argument, else local."""
    hosts = fanout_hosts(args)
    if machine or not hosts:
        return Placement.one(machine_of(machine, args))
    return Placement.fanout(hosts, named=hosts)


def _floor_decided(decision: Decision) -> bool:
    """Did the floor settle the call (refused, or left to a person), whatever the machine?"""
    return decision.floor or decision.person_only


def _check_reads_back(rule: Rule) -> None:
    """PermissionsError unless the rule's text reads back as the same rule: a rule saved that
    does not would stop every later start (the file cannot be read), or allow something else."""
    try:
        again = Rule.parse(rule.text, rule.verdict)
    except ValueError:
        again = None
    same = again is not None and (again.tool, again.pattern, again.machine, again.negate) == (
        rule.tool,
        rule.pattern,
        rule.machine,
        rule.negate,
    )
    if not same:
        raise PermissionsError(
            f"not saved: the rule for this call, {rule.text!r}, would not read back as written "
            "(a name in it has characters a rule cannot hold); approve such a call once at a time"
        )


def _as_rule(rule: Rule | str, verdict: str | None, *, source: str) -> Rule:
    if isinstance(rule, Rule):
        return replace(rule, source=source, verdict=verdict or rule.verdict)  # type: ignore[arg-type]
    return Rule.parse(rule, verdict or "allow", source=source)
