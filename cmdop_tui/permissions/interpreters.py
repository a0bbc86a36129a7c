"""Code given to interpreters: ``python -c``, ``perl -e``, ``node -e``/``--eval``, ``ruby -e``,
``php -r``, ``awk`` programs and their kind, and scripts read from stdin (``python - <<EOF``,
``echo ... | node``).

The code is not run or parsed; it is made plain (:mod:`.code_text`: home and root expressions as
literals, literals folded) and searched for what the floor refuses in a shell: fork loops,
shell-outs (their string arguments are checked as commands), deleted trees (their whole
argument), secret paths, writes to a disk or to a file that runs code later, and reading the
environment after a .env file was loaded.
"""

from __future__ import annotations

import itertools
import re

from .code_text import STRING_LITERAL, assignments, delete_arguments, literals, normalise
from .context import Arg, Ctx, Stdin, doubt, literal, refuse
from .environment import check_env_code
from .paths import HOME, SECRET_CLASSES, block_device, chosen_by_command, critical, has_glob, path_class, resolve
from .scanning import match_close

# the options that take code, per interpreter (its name without a version: python3.12 -> python)
_CODE_OPTIONS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
    "deno": ("eval",),
    "bun": ("-e", "--eval", "-p", "--print"),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command"),
    "powershell": ("-c", "-Command"),
    "tclsh": (),
}
# options that take a value and name no script, per interpreter
_VALUE_OPTIONS = {
    "python": ("-W", "-X", "--check-hash-based-pycs"),
    "perl": ("-I", "-M", "-m", "-x", "-C", "-d"),
    "ruby": ("-I", "-r", "-C", "-E", "-K", "-x"),
    "node": ("-r", "--require", "--import", "--loader", "--input-type", "-C", "--conditions"),
}
# options that run something other than a script file (python -m module)
_NO_SCRIPT = frozenset({"-m", "-V", "--version", "-h", "--help", "-v", "-i"})
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})

_SHELL_OUT = re.compile(
    r"\b(os\.system|os\.popen|os\.exec\w*|subprocess|Popen|check_output|check_call|system|exec|execSync|spawn\w*|"
    r"child_process|shell_exec|passthru|proc_open|popen|qx|run|call|do shell script|Runtime)\b|`|%x\{|%x\(|qx\{|qx\("
    r"|\|&?\s*getline|\bprint\w*\b[^;{}\n]*\|"
)
# a loop that never ends: while True / while(1) / for(;;) / loop / until 0 / iter(int, 1)...
_ENDLESS = (
    r"(?:\bwhile\s*\(?\s*(?:True|true|1|!0|not\s+False)\s*\)?|\bfor\s*\(\s*;\s*;\s*\)|\bloop\b|\buntil\s*\(?\s*(?:false|0)\s*\)?"
    r"|iter\(\s*int\s*,\s*1\s*\)|itertools\.count\(|\bsetInterval\s*\(|\bwhile\s*:)"
)
_FORK_LOOP = re.compile(
    r"\bfork\b[^;\n]{0,40}\b(?:while|until)\b|"
    + _ENDLESS
    + r"[\s\S]{0,200}?\b(?:fork|spawn\w*|Popen|popen|system|exec[lv]\w*)\b",
)
# a shell-out given a value the code computes, not a string literal (system($cmd), run(args))
_SHELL_OUT_CALL = re.compile(
    r"\b(?:os\.system|os\.popen|system|popen|shell_exec|passthru|proc_open|exec|execSync|execFileSync|check_output"
    r"|check_call|Popen|subprocess\.run|subprocess\.call|spawnSync|spawn|getoutput|getstatusoutput)\s*\("
)
# what may stand beside the string literals of a shell-out's arguments: commas, brackets, and
# keywords such as shell=True (anything else builds the command: a variable, a concatenation)
_LITERAL_ARGUMENTS = re.compile(r"[\s,\[\]{}]*(?:\w+\s*[=:]\s*[\w.]*[\s,\[\]{}]*)*")
_WRITES = re.compile(r"['\"](?:[wa]b?\+?|r\+b?|rb\+)['\"]|write|O_WRONLY|O_RDWR|>|append|copy|symlink|rename")
_REMOVER = re.compile(r"\b(?:remove|unlink|unlinkSync|rmSync|rmdir|rmdirSync|delete|truncate)\s*\(|\bunlink\b")
_WALKER = re.compile(
    r"\b(?:walk|rglob|glob|iglob|scandir|listdir|iterdir|readdirSync|readdir|find|children|entries|opendir)\s*\("
)
_ARGV_LIST = re.compile(r"[\[(]\s*((?:['\"][^'\"]*['\"]\s*,\s*)+['\"][^'\"]*['\"])\s*,?\s*[\])]")


def base_name(name: str) -> str:
    """The interpreter a program name stands for (python3.12 -> python), or the name."""
    base = re.sub(r"[\d.]+$", "", name)
    return base if base in _CODE_OPTIONS else name


def check_interpreters(name: str, argv: list[Arg], ctx: Ctx, snippet: str, stdin: Stdin | None = None) -> None:
    """The code `argv` (or, with no code and no script, its stdin) gives an interpreter or awk."""
    base = base_name(name)
    if base in _CODE_OPTIONS:
        found = _code_arguments(base, argv)
        for code in found:
            check_code(code, ctx, snippet)
        if not found and script_operand(name, argv) in (None, "-") and stdin is not None and base != "tclsh":
            if not any(a.text in _NO_SCRIPT for a in argv[1:]):
                text = stdin()
                if text is None:
                    doubt(ctx, snippet, "gives an interpreter code from a pipe that cannot be checked before it runs")
                check_code(text or "", ctx, snippet)
    if name in AWKS:
        check_code(awk_program(argv), ctx, snippet)


def awk_program(argv: list[Arg]) -> str:
    """awk's program: its first operand, past -v NAME=VALUE, -F SEP and -f FILE (none then)."""
    args = argv[1:]
    i = 0
    while i < len(args):
        text = args[i].text
        if text in ("-f", "--file") or text.startswith("--file="):
            return ""
        if text in ("-v", "-F", "--assign", "--field-separator", "-W", "-i", "--include", "-l", "--load"):
            i += 2
            continue
        if text == "--":
            return args[i + 1].text if i + 1 < len(args) else ""
        if not text.startswith("-") or text == "-":
            return text
        i += 1
    return ""


def _code_arguments(base: str, argv: list[Arg]) -> list[str]:
    flags = _CODE_OPTIONS.get(base, ())
    args = argv[1:]
    found: list[str] = []
    for index, arg in enumerate(args):
        text = arg.text
        codes: tuple[str, ...] = ()
        following = args[index + 1].values if index + 1 < len(args) else ()
        if text in flags:
            codes = following
        elif text.startswith("--eval=") or text.startswith("--print="):
            codes = tuple(v.split("=", 1)[1] for v in arg.values if "=" in v)
        elif text.startswith("-") and not text.startswith("--") and len(text) > 2 and text[:2] in flags:
            codes = tuple(v[2:] for v in arg.values)
        elif re.fullmatch(r"-[A-Za-z]*[ceE]", text) and base in ("perl", "ruby", "python"):
            codes = following
        found.extend(code for code in codes if code)  # every form: code that may be unknown too
    return found


def script_operand(name: str, argv: list[Arg]) -> str | None:
    """The script file an interpreter runs (`python3 x.py`), '-' for stdin, None for none."""
    base = base_name(name)
    if base not in _CODE_OPTIONS:
        return None
    with_value = _VALUE_OPTIONS.get(base, ())
    args = argv[1:]
    i = 0
    while i < len(args):
        text = args[i].text
        if text == "--":
            return args[i + 1].text if i + 1 < len(args) else None
        if text in _NO_SCRIPT or text in _CODE_OPTIONS[base]:
            return None
        if text == "-" or not text.startswith("-"):
            return text
        i += 2 if text in with_value else 1
    return None


def check_code(code: str, ctx: Ctx, snippet: str) -> None:
    """Code for python/perl/ruby/node/awk: fork loops, shell-outs, deleted trees, secret paths."""
    if not code:
        return
    if _FORK_LOOP.search(code):
        raise refuse(snippet, "is a fork bomb (a loop that forks without end)")
    if chosen_by_command(code):
        doubt(ctx, snippet, "gives an interpreter code built from values that cannot be known before it runs")
    check_env_code(code, ctx, snippet)
    plain = normalise(code)
    texts = literals(plain)
    if _SHELL_OUT.search(plain):
        _check_shell_outs(plain, texts, ctx, snippet)
        if _computed_shell_out(plain):
            doubt(ctx, snippet, "runs a command the code computes, which cannot be checked before it runs")
    _check_deleted_trees(plain, ctx, snippet)
    writes = _WRITES.search(plain) is not None
    for text in texts:
        path = resolve(text, ctx.cwd)
        found = path_class(path)
        if found and found[0] in SECRET_CLASSES:
            raise refuse(snippet, f"would read or write {found[1]}")
        if found and found[0] in ("sudoers", "persist") and writes:
            raise refuse(snippet, f"would change {found[1]}")
        if block_device(path) and writes:
            raise refuse(snippet, f"would write to the block device {path}")


def _computed_shell_out(plain: str) -> bool:
    """Does the code run a command built from anything but string literals (os.system(cmd),
    system("rm -rf " ENVIRON["X"]), run(f"...")) ?"""
    for match in _SHELL_OUT_CALL.finditer(plain):
        end = match_close(plain, match.end() - 1)
        arguments = plain[match.end() : end - 1]
        if not arguments.strip():
            continue
        if re.search(r"\bf['\"]", arguments) or not _LITERAL_ARGUMENTS.fullmatch(STRING_LITERAL.sub("", arguments)):
            return True
    return False


def _check_deleted_trees(plain: str, ctx: Ctx, snippet: str) -> None:
    """rmtree(...), rmSync(...), rm_rf(...): their argument, and the names it uses; a walk over
    a critical directory that removes what it finds (os.walk + os.remove)."""
    if _REMOVER.search(plain) and _WALKER.search(plain):
        for text in literals(plain):
            path = resolve(text, ctx.cwd)
            base = "/".join(itertools.takewhile(lambda part: not has_glob(part), path.split("/"))) or "/"
            what = critical(base) if path.startswith("/") else None
            if what:
                raise refuse(snippet, f"would delete what is in {what}")
    names = assignments(plain)
    for argument in delete_arguments(plain):
        values = literals(argument)
        values += [names[word] for word in re.findall(r"\$?[A-Za-z_]\w*", argument) if word in names]
        if HOME in argument and not values:
            values.append(HOME)
        for value in values:
            what = critical(resolve(value, ctx.cwd))
            if what:
                raise refuse(snippet, f"would delete {what}")


def _check_shell_outs(code: str, texts: list[str], ctx: Ctx, snippet: str) -> None:
    """Code that runs commands: its strings that look like command lines, and its argv lists."""
    for text in texts:
        if re.search(r"[a-z]", text) and " " in text.strip():
            ctx.walk.script(text, ctx)
    for listing in _ARGV_LIST.finditer(code):
        argv = re.findall(r"['\"]([^'\"]*)['\"]", listing.group(1))
        ctx.walk.command([literal(word) for word in argv], ctx, snippet)
