"""Code given to interpreters on the command line: ``python -c``, ``perl -e``, ``node -e``,
``ruby -e``, ``php -r``, ``awk`` programs and their kind.

The code is not run or parsed; it is searched for what the floor refuses in a shell: fork loops,
shell-outs (their string arguments are checked as commands), deleted trees, secret paths and
writes to a disk.
"""

from __future__ import annotations

import re

from .context import Arg, Ctx, literal, refuse
from .paths import block_device, critical, expand_tilde, path_class, resolve

# the options that take code, per interpreter (its name without a version: python3.12 -> python)
_CODE_OPTIONS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval"),
    "php": ("-r",),
    "lua": ("-e",),
    "deno": ("eval",),
    "bun": ("-e", "--eval"),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command"),
    "powershell": ("-c", "-Command"),
    "tclsh": (),
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})

_STRING_LITERAL = re.compile(r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)\"""")
_SHELL_OUT = re.compile(
    r"\b(os\.system|os\.popen|os\.exec\w*|subprocess|Popen|check_output|check_call|system|exec|execSync|spawn\w*|"
    r"child_process|shell_exec|passthru|proc_open|popen|qx|run|call|do shell script|Runtime)\b|`|%x\{|%x\(|qx\{|qx\("
)
_DELETE_TREE = re.compile(
    r"(rmtree|rm_rf|rm_r|rmSync|rimraf|remove_tree|rmdirSync|deltree|removedirs|remove_all|rmdir)\s*\(\s*(.*?)\)",
    re.DOTALL,
)
_HOME_EXPR = re.compile(
    r"Path\.home\(\)|expanduser\(\s*['\"]~['\"]\s*\)|environ\[\s*['\"]HOME|getenv\(\s*['\"]HOME|"
    r"\$ENV\{\s*HOME|ENV\[\s*['\"]HOME|os\.homedir\(\)|process\.env\.HOME"
)
_FORK_LOOP = re.compile(
    r"fork\s+while\s+fork|while\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]?[^\n]{0,80}?\bfork\s*\(|"
    r"for\s*\(\s*;\s*;\s*\)\s*\{?\s*[^\n]{0,40}?fork\s*\(|loop\s*\{?\s*fork",
    re.DOTALL,
)


def check_interpreters(name: str, argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """The code `argv` gives an interpreter or awk, if `name` is one."""
    base = re.sub(r"[\d.]+$", "", name)
    if base in _CODE_OPTIONS or name in _CODE_OPTIONS:
        _check_interpreter(base if base in _CODE_OPTIONS else name, argv, ctx, snippet)
    if name in _AWKS:
        program = next((a.text for a in argv[1:] if not a.text.startswith("-")), "")
        check_code(program, ctx, snippet)


def _check_interpreter(base: str, argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    flags = _CODE_OPTIONS.get(base, ())
    args = argv[1:]
    for index, arg in enumerate(args):
        text = arg.text
        code = None
        if text in flags and index + 1 < len(args):
            code = args[index + 1].text
        elif text.startswith("-") and not text.startswith("--") and len(text) > 2 and text[:2] in flags:
            code = text[2:]
        elif re.fullmatch(r"-[A-Za-z]*[ceE]", text) and index + 1 < len(args) and base in ("perl", "ruby", "python"):
            code = args[index + 1].text
        if code:
            check_code(code, ctx, snippet)


def check_code(code: str, ctx: Ctx, snippet: str) -> None:
    """Code for python/perl/ruby/node/awk: fork loops, shell-outs, deleted trees, secret paths."""
    if not code:
        return
    if _FORK_LOOP.search(code):
        raise refuse(snippet, "is a fork bomb (a loop that forks without end)")
    literals = [m.group(1) if m.group(1) is not None else m.group(2) for m in _STRING_LITERAL.finditer(code)]
    literals = [re.sub(r"\\(.)", r"\1", lit) for lit in literals]
    if _SHELL_OUT.search(code):
        _check_shell_outs(code, literals, ctx, snippet)
    for match in _DELETE_TREE.finditer(code):
        argument = match.group(2)
        if _HOME_EXPR.search(argument):
            raise refuse(snippet, "would delete a home directory")
        quoted = re.search(r"['\"]([^'\"]*)['\"]", argument)
        if quoted:
            what = critical(resolve(expand_tilde(quoted.group(1)), ctx.cwd))
            if what:
                raise refuse(snippet, f"would delete {what}")
    writes = re.search(r"['\"](?:[wa]b?\+?|r\+b?|rb\+)['\"]|write|O_WRONLY|O_RDWR|>", code) is not None
    for literal_text in literals:
        path = resolve(expand_tilde(literal_text), ctx.cwd)
        found = path_class(path)
        if found and found[0] in ("key", "env", "shadow"):
            raise refuse(snippet, f"would read or write {found[1]}")
        if found and found[0] == "sudoers" and writes:
            raise refuse(snippet, f"would change {found[1]}")
        if block_device(path) and writes:
            raise refuse(snippet, f"would write to the block device {path}")


def _check_shell_outs(code: str, literals: list[str], ctx: Ctx, snippet: str) -> None:
    """Code that runs commands: its strings that look like command lines, and its argv lists."""
    for text in literals:
        if re.search(r"[a-z]", text) and " " in text.strip():
            ctx.walk.script(text, ctx)
    for listing in re.finditer(r"[\[(]\s*((?:['\"][^'\"]*['\"]\s*,\s*)+['\"][^'\"]*['\"])\s*,?\s*[\])]", code):
        argv = re.findall(r"['\"]([^'\"]*)['\"]", listing.group(1))
        ctx.walk.command([literal(word) for word in argv], ctx, snippet)
