"""Words expanded the way bash would, as far as that can be known before the command runs.

Quotes (``'rm'``, ``r"m"``, ``\\rm``, ``$'\\x72m'``), ``~`` and ``$HOME``, variables assigned
earlier in the same command line (``X=/; rm -rf $X``), arrays ``read -a`` filled, brace
expansion (``/{,}``), ``${IFS}`` and ``$(echo /)``. A variable that is not known may be empty
(``rm -rf "$DIR"/*`` could be ``rm -rf /*``); a command substitution whose output cannot be
known prints :data:`.paths.RUNTIME`, which the checks judge by what it could be. Small
pipelines and lists of commands whose output can be known (:mod:`.producers`) are evaluated, so
that ``echo ... | base64 -d | sh`` and ``rm -rf $(cd; pwd)`` show the floor what will run.
Word splitting (on ``IFS``) is :mod:`.splitting`.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .context import MAX_CANDIDATES, Arg, Ctx
from .parsing import parse
from .paths import HOME, RUNTIME, UNKNOWN, unknowable
from .producers import cd_target, command_output, find_items
from .scanning import ansi_c, find_backtick, match_close, skip_double, split_top_commas, words

_ALWAYS_SET = words(
    "USER LOGNAME HOSTNAME SHELL RANDOM UID EUID PPID SECONDS LINENO BASHPID OLDPWD BASH "
    "BASH_VERSION HOSTTYPE OSTYPE MACHTYPE PATH TERM LANG"
)


def _lookup(name: str, ctx: Ctx) -> tuple[str, ...] | None:
    """Possible values of `$name`, or None when nothing is known (it may be empty)."""
    if name in ctx.vars:
        return ctx.vars[name]
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


def _brace_expand(text: str) -> list[str]:
    """Bash brace expansion ({a,b} and {1..3}), bounded."""
    match = None
    depth = 0
    start = -1
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = text[start + 1 : i]
                match = (start, i, inner)
                break
    if match is None:
        return [text]
    start, end, inner = match
    options = split_top_commas(inner)
    if len(options) < 2:
        seq = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", inner) or re.fullmatch(r"([a-zA-Z])\.\.([a-zA-Z])", inner)
        if not seq:
            rest = _brace_expand(text[end + 1 :])
            return [text[: end + 1] + r for r in rest][:MAX_CANDIDATES]
        a, b = seq.group(1), seq.group(2)
        if a.lstrip("-").isdigit():
            lo, hi = int(a), int(b)
            step = 1 if hi >= lo else -1
            options = [str(v) for v in range(lo, hi + step, step)][:MAX_CANDIDATES]
        else:
            step = 1 if ord(b) >= ord(a) else -1
            options = [chr(v) for v in range(ord(a), ord(b) + step, step)]
    out: list[str] = []
    for option in options:
        for expanded in _brace_expand(text[:start] + option + text[end + 1 :]):
            out.append(expanded)
            if len(out) >= MAX_CANDIDATES:
                return out
    return out


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

    def word(self, raw: str, *, assignment: bool = False) -> Arg:
        segments = self._segments(raw, assignment=assignment)
        values = _product(segments) if segments else ("",)
        if "{" in raw and "," in raw or ".." in raw:
            expanded: list[str] = []
            for value in values:
                expanded.extend(_brace_expand(value))
            values = tuple(dict.fromkeys(expanded))[:MAX_CANDIDATES]
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
            segs.append(("/root" if user == "root" else f"/home/{user}",))
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
                self.dynamic = True
                segs.append((UNKNOWN,))
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
        segs.append(self._unknown(quoted) if values is None else self._known(values, quoted))
        return i + 1 + len(match.group(0))

    def _parameter(self, expr: str, quoted: bool) -> tuple[str, ...]:
        if expr.startswith("#") and len(expr) > 1:
            self.dynamic = True
            return (UNKNOWN,)
        if expr.startswith("!"):
            return self._unknown(quoted)
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
            return self._unknown(quoted) if values is None else self._known(values, quoted)
        opm = re.match(r"(:?)([-=?+])(.*)$", op, re.DOTALL)
        if opm:
            return self._with_default(values, opm, quoted)
        # ${X%pat} ${X#pat} ${X/a/b} ${X^^} ${X:1:2} ${X[0]}: some string we do not compute
        return self._unknown(quoted)

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


def assign(raw: str, ctx: Ctx, scripts: list[str]) -> None:
    """`NAME=value`: remember the value for later words; its substitutions go to `scripts`."""
    name, _, value = raw.partition("=")
    name = name.rstrip("+")
    arg, found = expand(value, ctx, assignment=True)
    scripts.extend(found)
    if re.fullmatch(r"[A-Za-z_]\w*", name):
        ctx.vars[name] = arg.values
        ctx.facts.input_vars.discard(name)
        if name == "IFS":
            ctx.facts.ifs_changed = True


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


@dataclass
class Upstream:
    """The stages before this one in a pipeline (for `... | xargs`)."""

    stages: Sequence[Any]
    src: str
    ctx: Ctx

    def items(self) -> list[str] | None:
        """What the previous stage prints, as words, when it can be known."""
        if not self.stages:
            return None
        last = self.stages[-1]
        if last.kind != "command":
            return None
        text = pipeline_text(self.stages, self.src, self.ctx)
        if text is not None:
            return text.split()
        argv = [p for p in last.parts if p.kind == "word"]
        if not argv:
            return None
        name = posixpath.basename(argv[0].word)
        args = [expand(self.src[w.pos[0] : w.pos[1]], self.ctx)[0] for w in argv[1:]]
        if name == "find":
            return find_items([a.text for a in args])
        if name == "ls":
            dirs = [a.text for a in args if not a.text.startswith("-")]
            return [d.rstrip("/") + "/*" for d in dirs] or None
        return None
