"""Shell text into something to walk: bashlex (guarded, cached, with rewrites for what it cannot
read) and, for text nothing parses, a plain lexer of words, operators and redirections.

When bashlex cannot parse a command (``[[ ]]``, ``case``, arithmetic), the known unsupported
constructs are rewritten and the parse retried; such a parse is not *exact* (its positions refer
to the rewritten text), so the floor also scans the raw text with the fallback lexer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .scanning import find_backtick, match_close, skip_double, words

#: Redirections that write to their target.
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})

_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[\[(?=\s)"), "["),
    (re.compile(r"(?<=\s)\]\]"), "]"),
    (re.compile(r"\$\(\((?:[^()]|\([^()]*\))*\)\)"), "0"),
    (re.compile(r"\(\((?:[^()]|\([^()]*\))*\)\)"), "true"),
    (re.compile(r"(^|[;&|\n(]\s*)time\s+(?:-p\s+)?", re.MULTILINE), r"\1"),
    (re.compile(r"(^|[;&|\n(]\s*)coproc\s+", re.MULTILINE), r"\1"),
    (re.compile(r"<<(-?)\s*(['\"])(\w+)\2"), r"<<\1\3"),
    (re.compile(r"<<(-?)\s*\\(\w+)"), r"<<\1\2"),
    (re.compile(r"\b([A-Za-z_]\w*)(\+?)=\(([^()]*)\)"), r"\1\2='\3'"),
)


_bashlex_ready = False


def _load_bashlex() -> Any:
    """bashlex, imported late (~0.1 s; the UI may import this module at start-up) and guarded:
    bashlex 0.18 loops forever on an unclosed `${` (its `_paramexpand` takes `find()`'s -1 as
    an index); the guard makes that a parse error, which sends the text to the fallback."""
    global _bashlex_ready
    import bashlex
    import bashlex.subst

    if not _bashlex_ready:
        original = bashlex.subst._paramexpand

        def _paramexpand(parserobj: Any, string: str, sindex: int) -> Any:
            if string[sindex + 1 : sindex + 2] == "{" and string.find("}", sindex + 2) < 0:
                raise ValueError("unclosed ${")
            return original(parserobj, string, sindex)

        # bashlex's own function, not a guard from an earlier import of this module: wrap once
        if getattr(original, "__module__", "") == "bashlex.subst":
            bashlex.subst._paramexpand = _paramexpand
        _bashlex_ready = True
    return bashlex


def _bashlex_parse(text: str) -> list[Any] | None:
    bashlex = _load_bashlex()
    try:
        return list(bashlex.parse(text))
    except Exception:
        return None


_PARSE_CACHE: dict[str, tuple[list[Any] | None, str, bool]] = {}


def parse_full(text: str) -> tuple[list[Any] | None, str, bool]:
    """(nodes, the text the nodes' positions refer to, exact): exact is False after a rewrite."""
    cached = _PARSE_CACHE.get(text)
    if cached is not None:
        return cached
    result: tuple[list[Any] | None, str, bool]
    nodes = _bashlex_parse(text)
    if nodes is not None:
        result = (nodes, text, True)
    else:
        rewritten = text
        for pattern, replacement in _REWRITES:
            rewritten = pattern.sub(replacement, rewritten)
        nodes = _bashlex_parse(rewritten) if rewritten != text else None
        result = (nodes, rewritten, False)
    if len(_PARSE_CACHE) > 512:
        _PARSE_CACHE.clear()
    _PARSE_CACHE[text] = result
    return result


def parse(text: str) -> list[Any] | None:
    """The nodes of `text` when bashlex reads it as written, else None."""
    nodes, _src, exact = parse_full(text)
    return nodes if exact else None


def iter_nodes(node: Any) -> Iterable[Any]:
    """Every node under `node` (itself included), in no particular order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for attr in ("parts", "list"):
            children = getattr(current, attr, None)
            if isinstance(children, list):
                stack.extend(children)
        for attr in ("body", "command"):
            child = getattr(current, attr, None)
            if child is not None and hasattr(child, "kind"):
                stack.append(child)


# --- the fallback lexer: text bashlex could not parse --------------------------------------------

#: Words that open or close a construct rather than name a command.
RESERVED = words("if then else elif fi do done while until for case esac in select function ! { } [[ ]] time coproc")
_REDIRECT = re.compile(r"(\d*|&)(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)")
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n")


def _read_word(text: str, i: int) -> int:
    """Index just past the shell word starting at `i`."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n;&|()<>":
            if ch in "<>" and text.startswith("(", i + 1):  # <(...) inside a word
                i = match_close(text, i + 1)
                continue
            if ch in "()" and i > 0 and text[i - 1] == "$":
                pass
            else:
                return i
        if ch == "\\":
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif ch == '"':
            i = skip_double(text, i)
        elif ch == "`":
            i = find_backtick(text, i + 1) + 1
        elif ch == "$" and text.startswith("$(", i):
            i = match_close(text, i + 1)
        elif ch == "$" and text.startswith("${", i):
            i = match_close(text, i + 1, "{", "}")
        else:
            i += 1
    return min(i, n)


def lex(text: str) -> list[tuple[str, str, str]]:
    """Words, operators and redirections of `text`: (kind, value, target)."""
    items: list[tuple[str, str, str]] = []
    i, n = 0, len(text)
    at_word_start = True
    while i < n:
        ch = text[i]
        if ch in " \t\r":
            i += 1
            at_word_start = True
            continue
        if ch == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        if ch == "#" and at_word_start:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch in "<>" and text.startswith("(", i + 1):
            end = _read_word(text, i)
            items.append(("word", text[i:end], ""))
            i = end
            continue
        match = _REDIRECT.match(text, i)
        if match and (ch in "<>&" or ch.isdigit()) and match.group(2):
            i = match.end()
            while i < n and text[i] in " \t":
                i += 1
            end = _read_word(text, i)
            items.append(("redir", match.group(2) if match.group(1) != "&" else "&" + match.group(2), text[i:end]))
            i = end
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                items.append(("op", op, ""))
                i += len(op)
                break
        else:
            end = max(_read_word(text, i), i + 1)
            items.append(("word", text[i:end], ""))
            i = end
        at_word_start = True
    return items
