"""Interpreter code made plain for the floor: the home directory and ``/`` written as literals.

``os.path.expanduser('~')``, ``Path.home()``, ``require('os').homedir()``, ``$ENV{HOME}``,
``Dir.home``, ``File.expand_path('~')``, ``getenv("HOME")``, ``process.env.HOME``, ``os.sep``...
become the string ``'/home/~'`` (or ``'/'``); inside a string (``"rm -rf $ENV{HOME}"``,
``f"{Path.home()}"``) the bare path. Adjacent literals joined by ``+`` or ``.``, ``%s`` and
``{}`` formatting with a literal, ``os.path.join`` of literals and simple ``name = 'literal'``
assignments are then folded, so that what a call is given can be read from its literals. Calls
that delete a tree (``shutil.rmtree``, ``fs.rmSync``, ``FileUtils.rm_rf``, ``remove_tree``...)
are found with their whole argument, brackets balanced.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .paths import HOME
from .scanning import match_close

# a string literal: '...' or "..." (escapes allowed), or a JavaScript template `...`
STRING_LITERAL = re.compile(r"""'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`""")

_Q = r"""['"]"""
_HOME_EXPRESSIONS = re.compile(
    r"(?:pathlib\.)?Path\.home\(\)"
    rf"|(?:require\(\s*{_Q}(?:node:)?os{_Q}\s*\)|\bos)\.homedir\(\)|\bhomedir\(\)"
    rf"|(?:os\.)?environ\s*\[\s*{_Q}HOME{_Q}\s*\]|(?:os\.)?environ\.get\(\s*{_Q}HOME{_Q}[^()]*\)"
    rf"|\b(?:os\.)?getenv\(\s*{_Q}HOME{_Q}[^()]*\)"
    rf"|\$ENV\s*\{{\s*{_Q}?HOME{_Q}?\s*\}}|\bENV\s*\[\s*{_Q}HOME{_Q}\s*\]|\bENV\.fetch\(\s*{_Q}HOME{_Q}[^()]*\)"
    r"|\bDir\.home\b(?:\(\))?|\bEtc\.getpwuid(?:\([^()]*\))?\.dir\b"
    rf"|process\.env\.HOME\b|process\.env\s*\[\s*{_Q}HOME{_Q}\s*\]|\bENVIRON\s*\[\s*{_Q}HOME{_Q}\s*\]"
    rf"|\$_(?:SERVER|ENV)\s*\[\s*{_Q}HOME{_Q}\s*\]|Deno\.env\.get\(\s*{_Q}HOME{_Q}\s*\)"
    rf"|os\.UserHomeDir\(\)|System\.getProperty\(\s*{_Q}user\.home{_Q}\s*\)"
    r"|\(\s*getpwuid\(\s*\$<\s*\)\s*\)\s*\[\s*7\s*\]"
)
_TILDE_CALLS = re.compile(
    r"(?:os\.path\.|File\.|path\.)?(?:expanduser|expand_path|expandvars|resolve)\(\s*(?P<q>['\"])(?P<p>(?:~|\$\{?HOME\}?)[^'\"]*)(?P=q)\s*\)"
    r"|(?:pathlib\.)?Path\(\s*(?P<q2>['\"])(?P<p2>~[^'\"]*)(?P=q2)\s*\)\.expanduser\(\)"
    r"|\bglob\(\s*(?P<q3>['\"])(?P<p3>~[^'\"]*)(?P=q3)\s*\)"
)
_ROOT_EXPRESSIONS = re.compile(
    r"\bos\.path\.sep\b|\bos\.sep\b|\bpath\.sep\b|File::Spec->rootdir\(\)|\bFile::SEPARATOR\b"
)
_LITERAL = r"""(?:'[^'\\\n]*'|"[^"\\\n]*")"""
# "a" + "b", "a" . "b" and "a" "b" (Python's and awk's literals side by side)
_CONCAT = re.compile(rf"({_LITERAL})\s*(?:\+|\.(?!\w)|(?<=['\"])[ \t]*(?=['\"]))\s*({_LITERAL})")
_PERCENT = re.compile(rf"({_LITERAL})\s*%\s*\(?\s*({_LITERAL})\s*,?\s*\)?")
_FORMAT = re.compile(rf"({_LITERAL})\.format\(\s*({_LITERAL})\s*\)")
_JOIN = re.compile(rf"(?:os\.path\.|path\.|File\.)?join\(\s*({_LITERAL})\s*,\s*({_LITERAL})\s*\)")
_NORMALISE = re.compile(rf"(?:os\.path\.|path\.)?(?:abspath|realpath|normpath)\(\s*({_LITERAL})\s*\)")
_MARKED = re.compile("\x02([^\x02\x03]*)\x03")
_INTERPOLATED = re.compile(r"[#$]?\{\s*(/[^{}'\"\s]*)\s*\}")
_ARGV_AFTER_PROGRAM = re.compile(rf"({_LITERAL})\s*,\s*\[")
_ASSIGNMENT = re.compile(rf"(?:\b(?:const|let|var|my|our|local)\s+)?(\$?[A-Za-z_]\w*)\s*=\s*({_LITERAL})(?!\s*[+.%])")
_DELETE_CALL = re.compile(
    r"\b(rmtree|rm_rf|rm_r|rmSync|rimraf|remove_tree|rmdirSync|deltree|removedirs|remove_all|remove_dir|"
    r"remove_entry_secure|remove_entry|emptyDirSync|emptyDir|removeSync|rmdir)\b(?:\.sync)?\s*(\(|[ \t]+(?=\S))"
    r"|\.(rm|remove)\s*\("
)


def _text(literal: str) -> str:
    return literal[1:-1]


def _quote(text: str) -> str:
    return "'" + text + "'" if "'" not in text else '"' + text + '"'


def normalise(code: str) -> str:
    """`code` with home and root expressions as literals, and literal expressions folded."""
    code = _mark_paths(code)
    out: list[str] = []
    last = 0
    for match in STRING_LITERAL.finditer(code):  # marked paths: bare in a string, quoted outside
        out.append(_MARKED.sub(lambda m: _quote(m.group(1)), code[last : match.start()]))
        out.append(_MARKED.sub(r"\1", match.group(0)))
        last = match.end()
    out.append(_MARKED.sub(lambda m: _quote(m.group(1)), code[last:]))
    code = _INTERPOLATED.sub(r"\1", "".join(out))
    rules: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
        (_CONCAT, lambda m: _quote(_text(m.group(1)) + _text(m.group(2)))),
        (_PERCENT, lambda m: _quote(_text(m.group(1)).replace("%s", _text(m.group(2)), 1))),
        (_FORMAT, lambda m: _quote(_text(m.group(1)).replace("{}", _text(m.group(2)), 1))),
        (_JOIN, lambda m: _quote(_text(m.group(1)).rstrip("/") + "/" + _text(m.group(2)).lstrip("/"))),
        (_NORMALISE, lambda m: m.group(1)),
        (_ARGV_AFTER_PROGRAM, lambda m: "[" + m.group(1) + ", "),
    ]
    for _ in range(8):
        before = code
        for pattern, fold in rules:
            code = pattern.sub(fold, code)
        if code == before:
            break
    return code


def _mark_paths(code: str) -> str:
    """Home and root expressions replaced by their path between the markers \\x02 and \\x03."""

    def tilde(match: re.Match[str]) -> str:
        path = match.group("p") or match.group("p2") or match.group("p3") or ""
        return "\x02" + HOME + re.sub(r"^(?:~|\$\{?HOME\}?)", "", path) + "\x03"

    code = _TILDE_CALLS.sub(tilde, code)
    code = _HOME_EXPRESSIONS.sub("\x02" + HOME + "\x03", code)
    return _ROOT_EXPRESSIONS.sub("\x02/\x03", code)


def literals(code: str) -> list[str]:
    """The string literals of `code`, unescaped."""
    found = [next(g for g in m.groups() if g is not None) for m in STRING_LITERAL.finditer(code)]
    return [re.sub(r"\\(.)", r"\1", text) for text in found]


def assignments(code: str) -> dict[str, str]:
    """`name = 'literal'` (const/let/var/my...): the value of each name."""
    return {m.group(1): _text(m.group(2)) for m in _ASSIGNMENT.finditer(code)}


def delete_arguments(code: str) -> list[str]:
    """The whole argument of each call that deletes a tree (brackets balanced)."""
    found: list[str] = []
    for match in _DELETE_CALL.finditer(code):
        start = match.end()
        if match.group(2) == "(" or match.group(3):
            end = match_close(code, start - 1)
            found.append(code[start : end - 1])
        else:  # perl: rmtree $dir;
            stop = re.search(r"[;\n]|\bor\b|\bunless\b|\bif\b", code[start:])
            found.append(code[start : start + stop.start()] if stop else code[start:])
    return found
