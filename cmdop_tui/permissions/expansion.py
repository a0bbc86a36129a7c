"""Words expanded the way bash would, as far as that can be known before the command runs.

Brace expansion first, on the word as written (:mod:`.braces`: ``~/{.,}*``), then quotes
(``'rm'``, ``r"m"``, ``\\rm``, ``$'\\x72m'``), ``~`` and ``$HOME`` (``~user`` from the password
database), variables assigned earlier in the same command line (``X=/; rm -rf $X``), namerefs
(``declare -n r=HOME``) and indirection (``${!x}``), arrays ``read -a`` filled, the operators
of ``${...}`` (:mod:`.parameters`: ``${HOME%/}``), arithmetic (:mod:`.arithmetic`), ``${IFS}``
and ``$(echo /)``. A variable that is not known may be empty (``rm -rf "$DIR"/*`` could be
``rm -rf /*``); a variable that relocates a credential store is that store (``$KUBECONFIG``);
a command substitution whose output cannot be known prints :data:`.paths.RUNTIME`, which the
checks judge by what it could be; what the command computes in a way not followed here is
:data:`.paths.OPAQUE`. Small pipelines and lists of commands whose output can be known
(:mod:`.producers`) are evaluated, so that ``echo ... | base64 -d | sh`` and ``rm -rf $(cd;
pwd)`` show the floor what will run. Word splitting (on ``IFS``) is :mod:`.splitting`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .arithmetic import Unknown, Unreadable, evaluate
from .braces import brace_words
from .command_env import assignment_scripts, check_assignment
from .context import MAX_CANDIDATES, Arg, Ctx
from .homes import home_of
from .parameters import operate_on_homes
from .parsing import parse
from .paths import HOME, OPAQUE, RUNTIME, UNKNOWN, unknowable
from .producers import cd_target, command_output
from .scanning import ansi_c, find_backtick, match_close, skip_double, words
from .stores import relocated

_ALWAYS_SET = words(
    "USER LOGNAME HOSTNAME SHELL RANDOM UID EUID PPID SECONDS LINENO BASHPID OLDPWD BASH "
    "BASH_VERSION HOSTTYPE OSTYPE MACHTYPE PATH TERM LANG"
)


_XDG_BASES = {"XDG_CONFIG_HOME": "/.config", "XDG_DATA_HOME": "/.local/share", "XDG_STATE_HOME": "/.local/state"}


def _lookup(name: str, ctx: Ctx, seen: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """Possible values of `$name`, or None when nothing is known (it may be empty)."""
    if name in ctx.refs and name not in seen:  # a nameref: the values of what it points at
        found: list[str] = []
        for target in ctx.refs[name]:
            values = _lookup(target, ctx, (*seen, name)) if re.fullmatch(r"[A-Za-z_]\w*", target) else None
            found.extend(values if values is not None else ("", UNKNOWN) if not unknowable(target) else (OPAQUE,))
        return tuple(dict.fromkeys(found))[:MAX_CANDIDATES]
    if name in ctx.facts.arithmetic_vars:  # ((x=0-1)), let x=...: what it holds is not followed
        return tuple(dict.fromkeys((*ctx.vars.get(name, ()), OPAQUE)))
    if name in ctx.vars:
        return ctx.vars[name]
    store = relocated(name)
    if store is not None:
        return (store,)
    if name in _XDG_BASES:
        return (HOME + _XDG_BASES[name],)
    if name == "HOME":
        return (HOME,)
    if name == "PWD":
        return (ctx.cwd,) if ctx.cwd else (UNKNOWN,)
    if name == "IFS":
        return (" ",)
    if name in _ALWAYS_SET or name in ("$", "!", "#", "?", "-", "0"):
        return (UNKNOWN,)
    if name.isdigit() or name in ("@", "*"):
        if ctx.positional is None:
            return None
        if name in ("@", "*"):
            return (" ".join(ctx.positional),)
        index = int(name) - 1
        return (ctx.positional[index],) if 0 <= index < len(ctx.positional) else ("",)
    return None


def _product(segments: list[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for combo in itertools.product(*segments):
        out.append("".join(combo))
        if len(out) >= MAX_CANDIDATES:
            break
    return tuple(dict.fromkeys(out))


class _Expander:
    """Expands one raw word the way bash would, as far as can be known statically.

    Command substitutions found on the way are collected in `scripts` (they run, so the
    caller checks them) and, when they are a plain `echo`/`printf`, replaced by their output.
    """

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.scripts: list[str] = []
        self.dynamic = False
        self.split = False

    def word(self, raw: str, *, assignment: bool = False, braces: bool = True) -> Arg:
        """One word: brace expansion first (not in an assignment), then the rest of each (the
        words braces make are taken here for the values one word may have)."""
        found: list[str] = []
        for alternative in [raw] if assignment or not braces else brace_words(raw):
            segments = self._segments(alternative, assignment=assignment)
            found.extend(_product(segments) if segments else ("",))
        values = tuple(dict.fromkeys(found))[:MAX_CANDIDATES]
        return Arg(raw, values, self.dynamic, self.split)

    # -- the scanner ---------------------------------------------------------------------------

    def _segments(self, raw: str, *, assignment: bool, quoted: bool = False) -> list[tuple[str, ...]]:
        segs: list[tuple[str, ...]] = []
        i, n = 0, len(raw)
        if not quoted and raw.startswith("~"):
            i = self._tilde(raw, 0, segs)
        while i < n:
            ch = raw[i]
            if ch == "\\":
                i = self._backslash(raw, i, segs, quoted)
            elif ch == "'" and not quoted:
                end = raw.find("'", i + 1)
                end = n if end < 0 else end
                segs.append((raw[i + 1 : end],))
                i = end + 1
            elif ch == '"' and not quoted:
                end = skip_double(raw, i)
                inner = raw[i + 1 : end - 1] if end <= n and raw[end - 1 : end] == '"' else raw[i + 1 : end]
                segs.extend(self._segments(inner, assignment=False, quoted=True))
                i = end
            elif ch == "$":
                i = self._dollar(raw, i, segs, quoted)
            elif ch == "`":
                end = find_backtick(raw, i + 1)
                inner = re.sub(r"\\([`$\\])", r"\1", raw[i + 1 : end])
                segs.append(self._substitution(inner, quoted))
                i = end + 1
            elif ch in "<>" and raw.startswith("(", i + 1) and not quoted:
                end = match_close(raw, i + 1)
                inner = raw[i + 2 : end - 1]
                self.scripts.append(inner)
                segs.append(("/dev/fd/63",))
                output = static_output(inner, self.ctx) if ch == "<" else None
                if output is not None:  # <(echo ...): a file whose content is known (sh <(...))
                    known = self.ctx.facts.files.get("/dev/fd/63") or ()
                    self.ctx.facts.files["/dev/fd/63"] = tuple(dict.fromkeys(known + (output,)))
                i = end
            elif assignment and ch == ":" and not quoted and raw.startswith("~", i + 1):
                segs.append((":",))
                i = self._tilde(raw, i + 1, segs)
            else:
                segs.append((ch,))
                i += 1
        return segs

    @staticmethod
    def _backslash(raw: str, i: int, segs: list[tuple[str, ...]], quoted: bool) -> int:
        n = len(raw)
        if not quoted:
            if i + 1 < n and raw[i + 1] != "\n":
                segs.append((raw[i + 1],))
            return i + 2
        nxt = raw[i + 1] if i + 1 < n else ""
        if nxt in '$`"\\':
            segs.append((nxt,))
            return i + 2
        if nxt == "\n":
            return i + 2
        segs.append(("\\",))
        return i + 1

    def _tilde(self, raw: str, i: int, segs: list[tuple[str, ...]]) -> int:
        match = re.match(r"~([A-Za-z_][\w.-]*|[+-])?(?=/|:|$)", raw[i:])
        if not match:
            segs.append(("~",))
            return i + 1
        user = match.group(1)
        if not user:
            segs.append((HOME,))
        elif user in "+-":
            segs.append((UNKNOWN,))
        else:
            segs.append((home_of(user),))
        return i + len(match.group(0))

    def _unknown(self, quoted: bool) -> tuple[str, ...]:
        self.dynamic = True
        if not quoted:
            self.split = True
        return ("", UNKNOWN)

    def _known(self, values: tuple[str, ...], quoted: bool) -> tuple[str, ...]:
        if not quoted:
            self.split = True
        if any(unknowable(v) for v in values):
            self.dynamic = True
        return values

    def _dollar(self, raw: str, i: int, segs: list[tuple[str, ...]], quoted: bool) -> int:
        n = len(raw)
        nxt = raw[i + 1] if i + 1 < n else ""
        if nxt == "'" and not quoted:
            end = i + 2
            while end < n and raw[end] != "'":
                end += 2 if raw[end] == "\\" else 1
            segs.append((ansi_c(raw[i + 2 : min(end, n)]),))
            return end + 1
        if nxt == '"' and not quoted:
            end = skip_double(raw, i + 1)
            segs.extend(self._segments(raw[i + 2 : end - 1], assignment=False, quoted=True))
            return end
        if nxt == "(":
            if raw.startswith("((", i + 1):
                end = match_close(raw, i + 1)
                segs.append(self._arithmetic(raw[i + 3 : end - 2]))
                return end
            end = match_close(raw, i + 1)
            inner = raw[i + 2 : end - 1] if raw[end - 1 : end] == ")" else raw[i + 2 : end]  # unclosed: to the end
            segs.append(self._substitution(inner, quoted))
            return end
        if nxt == "{":
            end = match_close(raw, i + 1, "{", "}")
            expr = raw[i + 2 : end - 1] if raw[end - 1 : end] == "}" else raw[i + 2 : end]
            segs.append(self._parameter(expr, quoted))
            return end
        match = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!\-]", raw[i + 1 :])
        if not match:
            segs.append(("$",))
            return i + 1
        values = _lookup(match.group(0), self.ctx)
        quoted = quoted and match.group(0) != "@"  # "$@": each argument its own word
        segs.append(self._unknown(quoted) if values is None else self._known(values, quoted))
        return i + 1 + len(match.group(0))

    def _arithmetic(self, expr: str) -> tuple[str, ...]:
        """$((expr)): its value when it can be computed; unknown when it depends on the
        environment; OPAQUE when it uses what is not followed (an assignment, `++`)."""

        def number(name: str) -> int | None:
            values = _lookup(name, self.ctx)
            if values is None or len(values) != 1 or unknowable(values[0]):
                return None
            text = values[0].strip()
            return int(text) if re.fullmatch(r"-?\d+", text) else 0 if not text else None

        try:
            return (str(evaluate(expr, number)),)
        except Unknown:
            self.dynamic = True
            return (UNKNOWN,)
        except (Unreadable, ValueError, RecursionError):
            self.dynamic = True
            return (OPAQUE,)

    def _opaque(self, quoted: bool) -> tuple[str, ...]:
        """What the command computes in a way the floor does not follow (it may choose it)."""
        self.dynamic = True
        if not quoted:
            self.split = True
        return (OPAQUE,)

    def _indirect(self, expr: str, quoted: bool) -> tuple[str, ...]:
        """${!name}: the variable whose name `name` holds; ${!prefix*}, ${!a[@]}: names, indices."""
        if not re.fullmatch(r"[A-Za-z_]\w*", expr):
            return self._unknown(quoted)
        names = _lookup(expr, self.ctx)
        if names is None:
            return self._unknown(quoted)
        found: list[str] = []
        for name in names:
            if unknowable(name):
                return self._opaque(quoted)
            values = _lookup(name, self.ctx) if re.fullmatch(r"[A-Za-z_]\w*", name) else ("",)
            found.extend(values if values is not None else ("", UNKNOWN))
        return self._known(tuple(dict.fromkeys(found))[:MAX_CANDIDATES], quoted)

    def _parameter(self, expr: str, quoted: bool) -> tuple[str, ...]:
        if expr.startswith("#") and len(expr) > 1:
            values = _lookup(expr[1:], self.ctx) if re.fullmatch(r"[A-Za-z_]\w*", expr[1:]) else None
            self.dynamic = True
            if values is None or any(unknowable(v) for v in values):
                return (UNKNOWN,)
            return tuple(dict.fromkeys(str(len(v)) for v in values))
        if expr.startswith("!"):
            return self._indirect(expr[1:], quoted)
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])(.*)$", expr, re.DOTALL)
        if not match:
            return self._unknown(quoted)
        name, op = match.group(1), match.group(2)
        values = _lookup(name, self.ctx)
        index = re.fullmatch(r"\[([^\]]*)\]", op)
        if index is not None:  # ${A[@]} (its words, even quoted), ${A[0]}: an array `read -a` filled
            if index.group(1) in ("@", "*"):
                return self._unknown(False) if values is None else self._known(values, False)
            values = _lookup(f"{name}[{index.group(1)}]", self.ctx)
            return self._unknown(quoted) if values is None else self._known(values, quoted)
        if op == "":
            quoted = quoted and name != "@"  # "${@}": each argument its own word
            return self._unknown(quoted) if values is None else self._known(values, quoted)
        opm = re.match(r"(:?)([-=?+])(.*)$", op, re.DOTALL)
        if opm:
            return self._with_default(values, opm, quoted)
        if values is None:  # an operator on what the environment holds: as unknown as it is
            return self._unknown(quoted)
        computed = operate_on_homes(values, op, self._sub_word)
        return self._opaque(quoted) if computed is None else self._known(computed, quoted)

    def _sub_word(self, text: str) -> tuple[str, ...] | None:
        """A pattern or a replacement inside ${...}, expanded; None when it cannot be known."""
        sub = _Expander(self.ctx)
        values = sub.word(text, assignment=True).values
        self.scripts.extend(sub.scripts)
        return None if sub.dynamic else values

    def _with_default(self, values: tuple[str, ...] | None, opm: re.Match[str], quoted: bool) -> tuple[str, ...]:
        """${X:-word}, ${X=word}, ${X:?msg}, ${X+word} and their forms without the colon."""
        colon, kind, word = opm.group(1), opm.group(2), opm.group(3)
        sub = _Expander(self.ctx)
        alternative = sub.word(word).values if word else ("",)
        self.scripts.extend(sub.scripts)
        self.dynamic |= sub.dynamic
        if kind == "?":  # ${X:?msg}: the command never runs with X empty
            kept = tuple(v for v in (values or (UNKNOWN,)) if v) or (UNKNOWN,)
            return self._known(kept, quoted)
        if kind == "+":
            if values is None:
                return self._known(tuple(dict.fromkeys(("",) + alternative)), quoted)
            return self._known(alternative, quoted)
        # - and =: the value, or the default when unset (or empty with the colon)
        if values is None:
            return self._known(tuple(dict.fromkeys(alternative + (UNKNOWN,))), quoted)
        kept = tuple(v for v in values if v or not colon)
        return self._known(tuple(dict.fromkeys(kept + (alternative if "" in values or not kept else ()))), quoted)

    def _substitution(self, inner: str, quoted: bool) -> tuple[str, ...]:
        self.scripts.append(inner)
        output = static_output(inner, self.ctx)
        if output is None:
            self.dynamic = True
            if not quoted:
                self.split = True
            return (RUNTIME,)
        if not quoted:
            self.split = True
        return (output.rstrip("\n"),)


def expand(raw: str, ctx: Ctx, *, assignment: bool = False) -> tuple[Arg, list[str]]:
    """One raw word expanded, and the command substitutions in it (they run: check them)."""
    expander = _Expander(ctx)
    arg = expander.word(raw, assignment=assignment)
    return arg, expander.scripts


def expand_words(raw: str, ctx: Ctx) -> tuple[list[Arg], list[str]]:
    """A raw word of a command as the words bash makes of it: brace expansion makes several
    (`{rm,-rf,~}` is `rm -rf ~`), each then expanded; and the command substitutions in them."""
    alternatives = brace_words(raw)
    if len(alternatives) == 1:
        arg, scripts = expand(raw, ctx)
        return [arg], scripts
    args: list[Arg] = []
    scripts = []
    for alternative in alternatives:
        expander = _Expander(ctx)
        args.append(replace(expander.word(alternative, braces=False), raw=alternative))
        scripts.extend(expander.scripts)
    return args, scripts


def assign(raw: str, ctx: Ctx, scripts: list[str], *, later: list[str] | None = None) -> None:
    """`NAME=value`: remember the value for later words (through a nameref, for the variable
    it names); its substitutions go to `scripts`, and the code a program will run because of
    it (`LESSOPEN=...`, :mod:`.command_env`) to `later` (default: `scripts`)."""
    name, _, value = raw.partition("=")
    name = name.rstrip("+")
    arg, found = expand(value, ctx, assignment=True)
    scripts.extend(found)
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return
    if ctx.refs.get(name) == ():  # `declare -n r; r=HOME`: r now stands for HOME
        ctx.refs[name] = arg.values
        return
    for target in ctx.refs.get(name, (name,)):
        if not re.fullmatch(r"[A-Za-z_]\w*", target):
            continue
        ctx.vars[target] = arg.values
        ctx.facts.input_vars.discard(target)
        ctx.facts.ifs_changed = ctx.facts.ifs_changed or target == "IFS"
        (scripts if later is None else later).extend(assignment_scripts(target, arg.values))
        check_assignment(target, arg.values, ctx, raw)


def here_document_raw(redirect: Any) -> str:
    """A here-document's text as written, without its closing delimiter."""
    body = str(redirect.heredoc.value)
    lines = body.split("\n")
    return "\n".join(lines[:-1]) if len(lines) > 1 else body


def here_document(redirect: Any, src: str, ctx: Ctx) -> tuple[tuple[str, ...], list[str]]:
    """A here-document's text, expanded as bash does unless its delimiter is quoted (`<<'EOF'`):
    (its possible texts, the command substitutions in it)."""
    text = here_document_raw(redirect)
    delimiter = src[redirect.output.pos[0] : redirect.output.pos[1]] if hasattr(redirect.output, "pos") else ""
    if re.search(r"['\"\\]", delimiter) or not re.search(r"[$`]", text):
        return (text,), []
    expander = _Expander(ctx)
    values = _product(expander._segments(text, assignment=False, quoted=True)) or ("",)
    return values, expander.scripts


# --- what substitutions and pipes print (see :mod:`.producers`) --------------------------------


def static_output(script: str, ctx: Ctx) -> str | None:
    """What `script` prints, when it is a small pipeline or list (`cd; pwd`) of commands whose
    output can be known before they run; None otherwise."""
    nodes = parse(script)
    if not nodes or len(nodes) != 1:
        return None
    return _node_output(nodes[0], script, ctx)


def _node_output(node: Any, src: str, ctx: Ctx) -> str | None:
    if node.kind == "command":
        return _pipeline_output([node], src, ctx)
    if node.kind == "pipeline":
        return pipeline_text([p for p in node.parts if p.kind != "pipe"], src, ctx)
    if node.kind != "list":
        return None
    local = replace(ctx, cwd=ctx.cwd)  # `cd` inside $( ) stays there
    out: list[str] = []
    for part in node.parts:
        if part.kind == "operator":
            if part.op not in (";", "&&", "\n"):
                return None
            continue
        command = _static_command(part, src, local) if part.kind == "command" else None
        if command is not None and command[0][:1] == ["cd"]:
            local.cwd = cd_target(command[0][1:], local.cwd)
            if local.cwd is None:
                return None
            continue
        text = _node_output(part, src, local)
        if text is None:
            return None
        out.append(text)
    return "".join(out)


def _pipeline_output(stages: Sequence[Any], src: str, ctx: Ctx) -> str | None:
    output: str | None = None
    for stage in stages:
        command = _static_command(stage, src, ctx)
        if command is None:
            return None
        argv, here = command
        output = command_output(argv, here if here is not None else output, ctx.cwd, ctx.facts.files)
        if output is None:
            return None
    return output


def _static_command(node: Any, src: str, ctx: Ctx) -> tuple[list[str], str | None] | None:
    """The words of a simple command whose words are all known, and the text a here-string or
    here-document feeds it; None when a word cannot be known."""
    argv: list[str] = []
    here: str | None = None
    for part in node.parts:
        if part.kind == "word":
            arg, scripts = expand(src[part.pos[0] : part.pos[1]], ctx)
            if scripts or arg.dynamic or len(arg.values) != 1:
                return None
            argv.append(arg.text)
        elif part.kind != "redirect":
            return None
        elif getattr(part, "heredoc", None) is not None:
            texts, scripts = here_document(part, src, ctx)
            if scripts or len(texts) != 1 or unknowable(texts[0]):
                return None
            here = texts[0] + "\n"
        elif part.type == "<<<":
            arg, scripts = expand(src[part.output.pos[0] : part.output.pos[1]], ctx)
            if scripts or arg.dynamic:
                return None
            here = arg.text + "\n"
    return argv, here


def pipeline_text(stages: Sequence[Any], src: str, ctx: Ctx) -> str | None:
    """What the pipeline stages print, when they are all simple commands we can evaluate."""
    if not stages or any(stage.kind != "command" for stage in stages):
        return None
    return _pipeline_output(stages, src, ctx)
