"""Deciding one tool call: the floor, then the rules (session, then global), then the mode.

1. **The floor** (:mod:`.floor`) refuses what nothing may allow, and marks what only a person
   may allow (``person_only``): then a ``deny`` rule or ``strict`` mode still denies, but no
   rule, no "Allow always" and no mode (``auto`` included) allows it; it is asked.
2. **Rules**: session rules are consulted first: a session rule that matches decides; otherwise
   the global rules (the TOML file) decide. Within a layer, ``deny`` beats ``ask`` beats
   ``allow``. For a command, every simple command of the line is a part (:mod:`.arguments`): an
   ``allow`` rule must cover every one of them, while one ``deny`` or ``ask`` match anywhere is
   enough.
3. **The mode** decides what no rule matched: ``default`` allows read-only tools and asks for
   mutating ones (``Tool.mutating``: execute_command, write_file, ask_machine, ask_machines;
   a tool nobody declared counts as mutating); ``accept_edits`` also allows a file edit on
   this machine inside the working tree (:mod:`.modes`); ``strict`` denies mutating tools;
   ``auto`` (``--yes``) allows everything, and turns ``ask`` rules into ``allow`` (there is no
   one to ask); ``deny`` rules and the floor still apply. ``plan`` is the one mode that comes
   before the rules: it refuses every mutating call, whatever allows it (the model is told to
   present a plan instead).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from cmdop_tui.config.model import PERMISSION_MODES, PermissionMode
from cmdop_tui.tools.base import Tool

from .arguments import Part, call_parts, main_argument, subject_kind
from .floor import judge_call
from .modes import edit_in_tree, plan_refusal
from .rules import Rule, Verdict
from .verdicts import FloorVerdict

Mode = PermissionMode
MODES: tuple[str, ...] = PERMISSION_MODES
_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Decision:
    """The answer for one tool call.

    `verdict`: ``"allow"`` (run it), ``"ask"`` (ask the user), ``"deny"`` (the reason goes back
    to the model as the tool result). `rule`: the rule that decided, or None (the mode or the
    floor decided). `floor`: True when the safety floor refused; then nothing may override it.
    `person_only`: an ask the floor made, which only a person may answer.
    """

    verdict: Verdict
    reason: str
    rule: Rule | None = None
    floor: bool = False
    # An "ask" only a person may answer: neither rules nor auto mode (--yes) nor a library's
    # approve-everything function (the floor could not tell what the command does, and it
    # could reach a protected target).
    person_only: bool = False


def is_mode(value: object) -> TypeGuard[Mode]:
    return value in MODES


def check_mode(mode: str) -> Mode:
    """`mode` if it is one of :data:`MODES`; ValueError otherwise."""
    if not is_mode(mode):
        raise ValueError(f"unknown permission mode {mode!r} (one of {', '.join(MODES)})")
    return mode


def machine_of(machine: str | None, args: Mapping[str, Any]) -> str:
    """The machine a call runs on: `machine`, else the call's own `machine` argument, else local."""
    if machine:
        return machine
    own = args.get("machine")
    return own if isinstance(own, str) and own else "local"


def decide(
    tool: str,
    args: Mapping[str, Any],
    *,
    machine: str,
    mutating: bool | None,
    cwd: str | None,
    spec: Tool | None,
    mode: Mode,
    session: Sequence[Rule],
    global_: Sequence[Rule],
    floor: bool = True,
    selectors: Sequence[str] = (),
    working_tree: str | None = None,
) -> Decision:
    """The decision for one call, given the rules and the mode (see the module doc); without
    the floor when `floor` is False (already judged). `selectors`: how the call named the
    machine (`tag:db`, a group), whose rules apply to it as well as its own. `working_tree`:
    the session's directory, where accept_edits mode lets file edits through."""
    judged = judge_call(tool, args, spec=spec) if floor else None
    if judged is not None and judged.verdict == "deny":
        return Decision("deny", judged.reason, None, True)
    if mutating is None:
        mutating = spec.mutating if spec is not None else True
    if mode == "plan" and mutating:
        return Decision("deny", plan_refusal(tool))
    names = [machine, *(s for s in selectors if s != machine)]
    known_as = [tool, *(sorted(spec.aliases) if spec is not None else ())]  # an MCP tool's full name too
    session = [r for r in session if any(r.applies_to(t, name) for t in known_as for name in names)]
    global_ = [r for r in global_ if any(r.applies_to(t, name) for t in known_as for name in names)]
    verdict, rule = _rules_verdict(tool, args, machine, cwd, spec, session, global_)
    if judged is not None:
        return _for_a_person(judged, verdict, rule, mode)
    if rule is not None:
        return _by_rule(verdict, rule, mode)
    if mode == "accept_edits" and edit_in_tree(args, spec=spec, machine=machine, working_tree=working_tree):
        return Decision("allow", f"accept_edits mode: {tool} inside the working tree")
    return _by_mode(tool, mutating, mode)


def _for_a_person(judged: FloorVerdict, verdict: str | None, rule: Rule | None, mode: Mode) -> Decision:
    """A call only a person may allow: a deny rule denies it, strict mode denies it (nobody is
    asked there), and otherwise it is asked, whatever allow rules or auto mode say."""
    if verdict == "deny" and rule is not None:
        return _by_rule(verdict, rule, mode)
    if mode == "strict":
        return Decision("deny", f"strict mode: {judged.reason}")
    return Decision("ask", judged.reason, None, person_only=True)


def decide_many(hosts: Sequence[str], decide_on: Callable[[str], Decision], *, skips_hosts: bool = True) -> Decision:
    """A call that runs on several machines (run_on_machines), judged on each of `hosts`
    (`decide_on(host)`): the floor refuses it everywhere; a host a rule scoped to machines
    denies is left out (it is skipped when the call runs, and reported); of the others, one
    deny or one ask is enough, and an allow must hold on every one. A rule that "Allow always"
    scoped to the hosts of a call (`{web1,web2}:run_on_machines(...)`) thus allows that call,
    or one over fewer of them, and asks again for a call that reaches another machine.
    `skips_hosts`: the tool checks each host before it runs there (run_on_machines); else
    (ask_machines) nothing is left out, and a deny on any host denies the call.
    """
    decided = [(host, decide_on(host)) for host in hosts]
    for _, decision in decided:
        if decision.floor:
            return decision
    skipped = [(host, d) for host, d in decided if skips_hosts and _skipped_on_host(host, d)]
    considered = [(host, d) for host, d in decided if (host, d) not in skipped] or decided
    for wanted in ("deny", "ask"):
        for host, decision in considered:
            if decision.verdict == wanted:
                return replace(decision, reason=f"{decision.reason} (on {host})")
    rules = {decision.rule.text for _, decision in considered if decision.rule is not None}
    if len(considered) > 1 and rules and all(decision.rule is not None for _, decision in considered):
        return replace(considered[0][1], reason=f"allowed on every machine by {', '.join(sorted(rules))}")
    return considered[0][1]


def _skipped_on_host(host: str, decision: Decision) -> bool:
    """Denied there by a rule scoped to that machine itself, which the run checks host by host
    (a tag is not a host: a rule scoped to `tag:T` denies the whole call, even when it reached
    the host as one of the machines tagged T)."""
    rule = decision.rule
    return decision.verdict == "deny" and rule is not None and ":" not in host and rule.scoped_to(host)


def _by_rule(verdict: str | None, rule: Rule, mode: Mode) -> Decision:
    if verdict == "deny":
        return Decision("deny", f"denied by rule {_describe(rule)}", rule)
    if verdict == "ask":
        if mode == "auto":
            return Decision("allow", f"auto mode: allowed without asking (rule {_describe(rule)} asks)", rule)
        return Decision("ask", f"rule {_describe(rule)} asks for approval", rule)
    return Decision("allow", f"allowed by rule {_describe(rule)}", rule)


def _by_mode(tool: str, mutating: bool, mode: Mode) -> Decision:
    if mode == "auto":
        return Decision("allow", "auto mode: allowed without asking")
    if not mutating:
        return Decision("allow", f"{tool} only reads; allowed in {mode} mode")
    if mode == "strict":
        return Decision(
            "deny",
            f"strict mode: {tool} changes things and no rule allows this call; "
            f"a user can add an allow rule (cmdop-tui permissions)",
        )
    return Decision("ask", f"{tool} changes things; approval needed in {mode} mode")


def _describe(rule: Rule) -> str:
    return f"`{rule.text}` ({rule.source})"


def _rules_verdict(
    tool: str,
    args: Mapping[str, Any],
    machine: str,
    cwd: str | None,
    spec: Tool | None,
    session: Sequence[Rule],
    global_: Sequence[Rule],
) -> tuple[str | None, Rule | None]:
    """The rules' verdict and the deciding rule, or (None, None) when the rules say nothing
    (`session` and `global_`: the rules that concern this tool on this machine)."""
    if not session and not global_:
        return None, None
    layers = _Layers(tool, machine, cwd, spec, session, global_)
    results = [layers.verdict(part) for part in call_parts(tool, args, spec)]
    if subject_kind(tool, spec) == "command":
        results = _with_whole_line(results, main_argument(tool, args, spec=spec), layers)
    for wanted in ("deny", "ask"):
        for verdict, rule in results:
            if verdict == wanted:
                return verdict, rule
    if results and all(verdict == "allow" for verdict, _ in results):
        return "allow", results[0][1]
    return None, None


def _with_whole_line(
    results: list[tuple[str | None, Rule | None]], argument: str | list[str], layers: _Layers
) -> list[tuple[str | None, Rule | None]]:
    """The whole command line too: deny/ask rules written with operators (curl * | sh), and exact
    allow rules (what "Allow always" saves for a compound command)."""
    whole = Part(" ".join(argument.split()) if isinstance(argument, str) else "", trusted=False)
    verdict, rule = layers.verdict(whole)
    if verdict in ("deny", "ask"):
        results = [*results, (verdict, rule)]
    exact = layers.exact().verdict(Part(whole.text))
    if exact[0] == "allow":
        results = [res if res[0] in ("deny", "ask") else exact for res in results]
    return results


@dataclass(frozen=True)
class _Layers:
    """The rules that concern one call, session layer first."""

    tool: str
    machine: str
    cwd: str | None
    spec: Tool | None
    session: Sequence[Rule]
    global_: Sequence[Rule]

    def exact(self) -> _Layers:
        """The same layers with only the rules that match one exact argument."""
        return _Layers(
            self.tool,
            self.machine,
            self.cwd,
            self.spec,
            [r for r in self.session if not r.has_wildcards],
            [r for r in self.global_ if not r.has_wildcards],
        )

    def verdict(self, part: Part) -> tuple[str | None, Rule | None]:
        """The verdict for one part: the session layer decides if a rule of it matches, else global."""
        for layer in (self.session, self.global_):
            best: Rule | None = None
            matched = False
            for rule in layer:
                if rule.matches_argument(self.tool, part.text, machine=self.machine, cwd=self.cwd, spec=self.spec):
                    matched = True
                    if rule.verdict == "allow" and not part.trusted:
                        continue  # it decides for its layer, but cannot allow an untrusted part
                    if best is None or _SEVERITY[rule.verdict] > _SEVERITY[best.verdict]:
                        best = rule
            if best is not None:
                return best.verdict, best
            if matched:
                return None, None
        return None, None
