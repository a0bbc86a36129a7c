"""Editors and text tools whose scripts can run commands, write or read files: ``sed`` (``e``,
``s///e``, ``w``, ``r``), ``awk`` (``system()``, ``| getline``, ``print | "cmd"``), the vi
family and ``ex`` (``-c '!cmd'``, ``+'r !cmd'``, ``:w file``, scripts on stdin), and ``ed``.

A command they would run is checked as shell code; one that comes from their input or is
computed (``sed 's/.*/&/e'``, ``awk '{system($0)}'``, ``vim -c 'exe ...'``) cannot be read
before it runs, and is a doubt. A file a script writes or reads is judged as the target of a
redirection would be.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from .context import Arg, Ctx, Stdin, doubt
from .paths import resolve
from .programs import check_read_target, check_written_value

VI_FAMILY = frozenset(
    {"vi", "vim", "nvim", "gvim", "rvim", "view", "rview", "vimdiff", "nvim-qt", "evim", "vimx", "ex"}
)
_SED_VALUE_OPTIONS = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
# awk running a command that is not a string literal: system(x), x | getline, print | x
_AWK_COMPUTED = re.compile(r"system\s*\(\s*[^\"'\s)]|[^\"'\s|]\s*\|&?\s*getline|print[^;{}\n]*\|&?\s*[^\"'\s]")
_AWK_PIPES = re.compile(r"\|&?\s*getline|print[^;{}\n]*\|")
_VIM_CODE = re.compile(
    r"^(?:exe(?:c(?:ute)?)?|norm(?:al)?!?|so(?:urce)?|py(?:thon)?3?|pyx|pythonx|lua|perl|ruby|tcl|mz(?:scheme)?|call|let|cal|luado|perldo|rubydo|pydo|py3do)\b"
    r"|system(?:list)?\s*\(|jobstart\s*\(|termopen\s*\(|libcall"
)


# --- sed --------------------------------------------------------------------------------------------


def _sed_scripts(args: list[Arg]) -> tuple[list[str], list[str], bool]:
    """sed's scripts (-e, --expression=, or the first operand), its script files (-f), and
    whether --sandbox (no e, r, w) is on."""
    scripts: list[str] = []
    files: list[str] = []
    operands: list[Arg] = []
    i = 0
    while i < len(args):
        text = args[i].text
        value_option = text in _SED_VALUE_OPTIONS or re.fullmatch(r"-[nrsuzEi]*[ef]", text) is not None
        if value_option and i + 1 < len(args):
            (files if text.endswith("f") or text == "--file" else scripts).extend(
                args[i + 1].values if not text.startswith("-l") and text != "--line-length" else ()
            )
            i += 2
            continue
        if text.startswith(("--expression=", "--file=")):
            (scripts if text.startswith("--e") else files).extend(v.split("=", 1)[1] for v in args[i].values)
        elif not text.startswith("-") or text == "-":
            operands.append(args[i])
        i += 1
    if not scripts and not files and operands:
        scripts = list(operands[0].values)
    return scripts, files, any(a.text == "--sandbox" for a in args)


_SED_ADDRESS = re.compile(
    r"[\s;{}!]*(?:(?:\d+|\$|/(?:\\.|[^/\\])*/I?|\\(.)(?:\\.|.)*?\1)(?:~\d+)?"
    r"(?:,(?:\d+|\$|/(?:\\.|[^/\\])*/|[+~]\d+))?)?\s*!?\s*"
)


def _sed_commands(script: str) -> Iterator[tuple[str, str, str]]:
    """(command, argument, flags) for each command of a sed script that runs, writes or reads:
    e, s (with its replacement and its flags), w, W, r, R."""
    i, n = 0, len(script)
    while i < n:
        match = _SED_ADDRESS.match(script, i)
        i = match.end() if match else i
        if i >= n:
            return
        command = script[i]
        line_end = script.find("\n", i)
        line_end = n if line_end < 0 else line_end
        if command in "sy" and i + 1 < n:
            parts, j = _sed_split(script, i + 2, script[i + 1], 2)
            if command == "y":
                i = j
                continue
            ends = [k for k in (script.find(";", j), script.find("}", j)) if k >= 0]
            flags = script[j : min([line_end, *ends])]
            yield "s", parts[1] if len(parts) > 1 else "", flags
            i = line_end if "w" in flags else min([line_end, *ends])
        elif command in "ewWrR":
            yield command, script[i + 1 : line_end].strip(), ""
            i = line_end
        elif command in "aic#":
            i = _text_end(script, line_end) if script[i + 1 : line_end].strip() == "\\" else line_end
        elif command in ":btT":
            i = _skip_to_end(script, i + 1, line_end)
        else:
            i += 1


def _skip_to_end(script: str, start: int, line_end: int) -> int:
    """Past a label (`:a`, `b a`): to the next `;` on the line, or the line's end."""
    stop = script.find(";", start)
    return line_end if stop < 0 or stop > line_end else stop


def _text_end(script: str, line_end: int) -> int:
    """Past the text of `a\\`, `i\\`, `c\\`: its lines, each continued by a backslash."""
    end = line_end
    while end < len(script):
        nxt = script.find("\n", end + 1)
        nxt = len(script) if nxt < 0 else nxt
        continued = script[end + 1 : nxt].endswith("\\")
        end = nxt
        if not continued:
            break
    return end


def _sed_split(script: str, start: int, delimiter: str, count: int) -> tuple[list[str], int]:
    """The next `count` parts of an s command after its delimiter, and where its flags start."""
    parts: list[str] = []
    current: list[str] = []
    j = start
    while j < len(script) and len(parts) < count:
        ch = script[j]
        if ch == "\\" and j + 1 < len(script):
            current.append(script[j : j + 2])
            j += 2
            continue
        if ch == delimiter:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        j += 1
    return parts, j


def check_sed(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    scripts, _files, sandboxed = _sed_scripts(argv[1:])
    if sandboxed:
        return
    for script in scripts:
        for command, argument, flags in _sed_commands(script):
            if command == "e":
                if argument:
                    ctx.walk.script(argument, ctx)
                else:
                    doubt(ctx, snippet, "runs what it reads as commands (sed e)")
            elif command == "s" and "e" in flags.split("w", 1)[0]:
                ctx.walk.script(argument, ctx)
                doubt(ctx, snippet, "runs the lines it rewrites as commands (sed s///e)")
            if command in "wW" or (command == "s" and "w" in flags):
                target = argument if command != "s" else flags.split("w", 1)[1].strip()
                if target and target not in ("/dev/stdout", "/dev/stderr"):
                    check_written_value(target, ctx, snippet)
            elif command in "rR" and argument:
                check_read_target(resolve(argument, ctx.cwd), snippet)


# --- awk ------------------------------------------------------------------------------------------


def check_awk_program(program: str, ctx: Ctx, snippet: str) -> None:
    """awk's commands: the literal ones of pipes checked; computed ones doubted (system()
    itself, with its literals, is the interpreters' check)."""
    for match in re.finditer(r"\"((?:[^\"\\]|\\.)*)\"\s*\|&?\s*getline|\|&?\s*\"((?:[^\"\\]|\\.)*)\"", program):
        ctx.walk.script(match.group(1) or match.group(2) or "", ctx)
    if _AWK_COMPUTED.search(program):
        doubt(ctx, snippet, "runs commands awk computes from its input, which cannot be checked before it runs")


# --- the vi family, ex, ed --------------------------------------------------------------------------


def _vi_commands(args: list[Arg], stdin: Stdin | None, ex_mode: bool) -> list[str]:
    """The editor commands of `-c CMD`, `--cmd CMD`, `+CMD`, and of stdin in ex mode."""
    found: list[str] = []
    for i, arg in enumerate(args):
        if arg.text in ("-c", "--cmd") and i + 1 < len(args):
            found.extend(args[i + 1].values)
        elif arg.text.startswith("+") and not re.fullmatch(r"\+\d*", arg.text):
            found.extend(v[1:] for v in arg.values)
    if ex_mode and stdin is not None:
        text = stdin()
        found.extend(text.split("\n") if text is not None else ["\x01"])
    return found


def check_vi(name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None) -> None:
    args = argv[1:]
    ex_mode = name == "ex" or any(re.fullmatch(r"-[a-zA-Z]*[eE][a-zA-Z]*|-es|--clean", a.text) for a in args)
    for command in _vi_commands(args, stdin, ex_mode):
        for part in _vi_parts(command):
            _vi_command(part, ctx, snippet)


def _vi_parts(command: str) -> list[str]:
    """One -c string split on `|` (but `!cmd` takes the rest of the line, bars included)."""
    parts: list[str] = []
    rest = command
    while rest:
        bang = re.match(r"\s*:*\s*[%$.,'<>\d\s]*(?:sil(?:ent)?!?\s*)?(?:r(?:ead)?\s*!|w(?:rite)?\s+!|!)", rest)
        if bang is not None:
            parts.append(rest)
            break
        head, sep, rest = rest.partition("|")
        parts.append(head)
        if not sep:
            break
    return parts


def _vi_command(command: str, ctx: Ctx, snippet: str) -> None:
    text = re.sub(r"^[\s:]*[%$.,'<>\d\s]*", "", command)
    text = re.sub(r"^sil(?:ent)?!?\s*", "", text)
    shell = re.match(r"(?:r(?:ead)?\s*!|w(?:rite)?\s+!|!|ter(?:minal)?\s+)(.*)$", text, re.DOTALL)
    if shell is not None:
        ctx.walk.script(shell.group(1).replace("%", "file"), ctx)
        return
    if _VIM_CODE.search(text):
        for literal in re.findall(r"system(?:list)?\s*\(\s*['\"]([^'\"]*)['\"]", text):
            ctx.walk.script(literal, ctx)
        doubt(ctx, snippet, "gives an editor commands in a language the floor does not read (they can run anything)")
        return
    written = re.match(r"(?:w(?:rite)?|sav(?:eas)?|wq|x(?:it)?|up(?:date)?)!?\s+(?!!)(\S.*)$", text)
    if written is not None:
        check_written_value(written.group(1).strip(), ctx, snippet)
    read = re.match(r"r(?:ead)?\s+(?!!)(\S.*)$", text)
    if read is not None:
        check_read_target(resolve(read.group(1).strip(), ctx.cwd), snippet)


def check_ed(argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None) -> None:
    """ed reads its commands from stdin: `!cmd` runs one, `w file` writes."""
    text = stdin() if stdin is not None else None
    if text is None:
        return
    for line in text.split("\n"):
        _vi_command(line, ctx, snippet)


def check_editor(name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None) -> None:
    """The editors and text tools of this module, by program name."""
    base = posixpath.basename(name)
    if base in ("sed", "gsed"):
        check_sed(argv, ctx, snippet)
    elif base in VI_FAMILY:
        check_vi(base, argv, ctx, snippet, stdin)
    elif base in ("ed", "red"):
        check_ed(argv, ctx, snippet, stdin)
