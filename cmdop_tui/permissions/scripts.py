"""Files written earlier in a command line, then run by it: ``echo ... > f; sh f``.

The walk keeps, per command line (:class:`.context.Facts`), what was written to each file: by a
redirection, ``tee``, ``cp``/``mv``/``ln``/``install`` of a file written before, ``dd``,
``sponge``, and the programs that write a file whose content cannot be known (``curl -o``,
``wget -O``, ``sed -i``...). When the same line then runs that file (``sh f``, ``bash f``,
``./f``, ``source f``, ``. f``, ``python f``, ``sh < f``, ``cat f | sh``), its content is
checked as a script (or as code, by its interpreter); when the content cannot be known, running
it is refused.
"""

from __future__ import annotations

import posixpath
import re

from .context import MAX_CANDIDATES, Arg, Ctx, Stdin, refuse
from .interpreters import check_code
from .paths import resolve, show
from .scanning import words

_SHELLS = words("sh bash dash zsh ksh mksh ash yash posh fish rbash csh tcsh busybox")
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_PATH_FOLDERS = frozenset({"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/home/~/.local/bin"})
# programs that write the file an option names, with content that cannot be known
_OUTPUT_OPTIONS = {"curl": ("o", "--output"), "wget": ("O", "--output-document"), "aria2c": ("o", "--out")}
# programs that may rewrite the files they name (see edits_in_place)
_IN_PLACE = words(
    "sed gsed perl ruby awk gawk ed ex vi vim nvim nano emacs pico micro joe mcedit patch dos2unix unix2dos"
)


def record(value: str, content: tuple[str, ...] | None, ctx: Ctx, *, append: bool = False) -> None:
    """`value` (a path as expanded) was written with `content` (None: cannot be known)."""
    path = resolve(value, ctx.cwd)
    if not path:
        return
    files = ctx.facts.files
    if append and path in files and content is not None:
        before = files[path]
        content = None if before is None else tuple(b + c for b in before for c in content)[:MAX_CANDIDATES]
    files[path] = content


def forget(value: str, ctx: Ctx) -> None:
    """`value` was replaced by a file the line did not write (what it holds is its own)."""
    ctx.facts.files.pop(resolve(value, ctx.cwd), None)


def contents(value: str, ctx: Ctx) -> tuple[str, ...] | None:
    """What a file written earlier in the line may hold; () when the line did not write it."""
    path = resolve(value, ctx.cwd)
    if path not in ctx.facts.files:
        return ()
    return ctx.facts.files[path]


def run_file(value: str, ctx: Ctx, snippet: str, *, code: bool = False, stdin: Stdin | None = None) -> None:
    """`value` is run as a script (by a shell, or by an interpreter when `code`): check what the
    line wrote to it, refuse when that cannot be known. `/dev/stdin` is what `stdin` feeds."""
    found = contents(value, ctx)
    if resolve(value, ctx.cwd) in _STDIN_FILES and stdin is not None:
        text = stdin()
        found = (text,) if text is not None else ()
    if found is None:
        raise refuse(
            snippet,
            f"runs {show(resolve(value, ctx.cwd))}, which this command line wrote with content "
            f"that cannot be checked before it runs",
        )
    for content in found:
        interpreter = _shebang(content)
        if code or (interpreter and interpreter not in _SHELLS):
            check_code(content, ctx, snippet)
        else:
            ctx.walk.script(content, ctx)


def _shebang(content: str) -> str | None:
    """The program a `#!` line names (`#!/usr/bin/env python3` -> python3)."""
    match = re.match(r"#!\s*(\S+)(?:\s+(\S+))?", content)
    if match is None:
        return None
    program = posixpath.basename(match.group(1))
    if program == "env" and match.group(2):
        program = posixpath.basename(match.group(2))
    return re.sub(r"[\d.]+$", "", program)


def run_command_file(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """`./f`, `/tmp/x.sh`, or `x` the line wrote into a folder of the PATH: a command word
    that is a file the line wrote."""
    for value in argv[0].values:
        if "/" in value:
            run_file(value, ctx, snippet)
            continue
        for path in list(ctx.facts.files):
            folder, leaf = posixpath.split(path)
            if leaf == value and (folder in _PATH_FOLDERS or folder.endswith(("/bin", "/sbin"))):
                run_file(path, ctx, snippet)


def note_program_writes(name: str, argv: list[Arg], ctx: Ctx, stdin: Stdin | None) -> None:
    """Remember what tee, cp, mv, ln, install, dd, curl -o and in-place editors write."""
    args = argv[1:]
    operands = [a for a in args if not a.text.startswith("-") or a.text == "-"]
    if name in ("tee", "sponge"):
        append = any(a.text in ("-a", "--append") for a in args)
        text = stdin() if stdin is not None else None
        for arg in operands:
            for value in arg.values:
                record(value, (text,) if text is not None else None, ctx, append=append)
    elif name in ("cp", "mv", "ln", "install") and len(operands) >= 2:
        _note_copy(operands[:-1], operands[-1], ctx)
    elif name == "dd":
        _note_dd(args, ctx, stdin() if stdin is not None else None)
    elif name in _OUTPUT_OPTIONS:
        letter, long = _OUTPUT_OPTIONS[name]
        for index, arg in enumerate(args):
            if arg.text.startswith(long + "="):
                record(arg.text.split("=", 1)[1], None, ctx)
            elif (arg.text == long or re.fullmatch(f"-[a-zA-Z]*{letter}", arg.text)) and index + 1 < len(args):
                for value in args[index + 1].values:
                    record(value, None, ctx)
    elif edits_in_place(name, args):
        for arg in operands:
            for value in arg.values:
                record(value, None, ctx)


def edits_in_place(name: str, args: list[Arg]) -> bool:
    """Does this command rewrite the files it names (sed -i, perl -i, ed, patch...)?"""
    if name not in _IN_PLACE:
        return False
    texts = [a.text for a in args]
    if name in ("sed", "gsed"):
        return any(re.match(r"-[a-zA-Z]*i|--in-place", t) for t in texts if not t.startswith("--e"))
    if name in ("perl", "ruby"):
        return any(re.match(r"-[a-zA-Z]*i", t) for t in texts if not t.startswith(("-M", "-I", "-m")))
    if name in ("awk", "gawk"):
        return any(t in ("inplace", "--include=inplace") for t in texts)
    return True


def _note_copy(sources: list[Arg], dest: Arg, ctx: Ctx) -> None:
    for source in sources:
        for value in source.values:
            found = contents(value, ctx)
            leaf = posixpath.basename(value.rstrip("/"))
            for target in dest.values:
                for path in (target, target.rstrip("/") + "/" + leaf):
                    if found == ():
                        forget(path, ctx)
                    else:
                        record(path, found, ctx)


def _note_dd(args: list[Arg], ctx: Ctx, stdin_text: str | None) -> None:
    source = next((a.text[3:] for a in args if a.text.startswith("if=")), None)
    content: tuple[str, ...] | None
    if source is None:
        content = (stdin_text,) if stdin_text is not None else None
    else:
        content = contents(source, ctx) or None
    for arg in args:
        if arg.text.startswith("of="):
            record(arg.text[3:], content, ctx)
