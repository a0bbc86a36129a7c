"""Shell arithmetic (``$((0-1))``, ``$((x*2))``) computed, so that ``kill -9 $((0-1))`` is seen as
``kill -9 -1``.

Integers (decimal, ``0x``, octal, ``BASE#digits``), variables, and the operators of C that bash
has (``+ - * / % ** << >> < <= > >= == != & ^ | && || ! ~ ?:``, unary signs, parentheses). What
this does not read (assignments, ``++``, commas) is not computed: the caller takes the value for
one the floor does not follow.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

#: A variable's possible integer, or None when it cannot be known.
Lookup = Callable[[str], int | None]

_TOKEN = re.compile(
    r"\s*(?:(\d+#[0-9A-Za-z@_]+|0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_]\w*)|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:()]))"
)
_BINARY = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
    "**": 12,
}
_LIMIT = 1 << 63


class Unreadable(Exception):
    """The expression uses what this evaluator does not read."""


class Unknown(Exception):
    """The expression depends on a value that cannot be known."""


def _number(text: str) -> int:
    if "#" in text:
        base, digits = text.split("#", 1)
        alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
        value = 0
        for digit in digits:
            index = alphabet.find(digit) if int(base) > 36 else alphabet.find(digit.lower())
            if not 0 <= index < int(base):
                raise Unreadable(text)
            value = value * int(base) + index
        return value
    if text.lower().startswith("0x"):
        return int(text, 16)
    return int(text, 8) if len(text) > 1 and text.startswith("0") else int(text)


def _tokens(expr: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    expr = expr.replace("$", "")  # $x and x are the same variable here
    while i < len(expr):
        if expr[i:].strip() == "":
            break
        match = _TOKEN.match(expr, i)
        if match is None:
            raise Unreadable(expr)
        tokens.append(match.group(1) or match.group(2) or match.group(3))
        i = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str], lookup: Lookup) -> None:
        self.tokens, self.at, self.lookup = tokens, 0, lookup

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise Unreadable("end")
        self.at += 1
        return token

    def expression(self, weakest: int = 0) -> int:
        value = self.unary()
        while True:
            token = self.peek()
            if token == "?" and weakest == 0:
                self.take()
                yes = self.expression()
                if self.take() != ":":
                    raise Unreadable("?:")
                no = self.expression()
                value = yes if value else no
                continue
            strength = _BINARY.get(token or "")
            if strength is None or strength <= weakest:
                return value
            self.take()
            right = self.expression(strength - 1 if token == "**" else strength)
            value = _apply(token or "", value, right)

    def unary(self) -> int:
        token = self.take()
        if token in ("-", "+", "!", "~"):
            operand = self.unary()
            return {"-": -operand, "+": operand, "!": int(not operand), "~": ~operand}[token]
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise Unreadable("(")
            return value
        if token[0].isdigit():
            return _number(token)
        if token[0].isalpha() or token[0] == "_":
            found = self.lookup(token)
            if found is None:
                raise Unknown(token)
            return found
        raise Unreadable(token)


def _divide(left: int, right: int) -> int:
    """Integer division as C does it (toward zero), as bash does."""
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


_OPERATORS: dict[str, Callable[[int, int], int]] = {
    "||": lambda a, b: int(bool(a) or bool(b)),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "|": operator.or_,
    "^": operator.xor,
    "&": operator.and_,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "<<": operator.lshift,
    ">>": operator.rshift,
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": _divide,
    "%": lambda a, b: a - b * _divide(a, b),
    "**": operator.pow,
}


def _apply(op: str, left: int, right: int) -> int:
    if op in ("/", "%") and right == 0:
        raise Unreadable("division by zero")
    if op == "**" and not 0 <= right <= 64:
        raise Unreadable("power")
    if op in ("<<", ">>") and not 0 <= right <= 63:
        raise Unreadable("shift")
    value = _OPERATORS[op](left, right)
    if not -_LIMIT <= value < _LIMIT:
        raise Unreadable("overflow")
    return value


def evaluate(expr: str, lookup: Lookup) -> int:
    """The value of the arithmetic `expr`; raises :class:`Unknown` when it depends on a value
    that cannot be known, :class:`Unreadable` when it uses what is not read here."""
    tokens = _tokens(expr)
    if not tokens:
        return 0
    parser = _Parser(tokens, lookup)
    value = parser.expression()
    if parser.peek() is not None:
        raise Unreadable(expr)
    return value


_ARITHMETIC_COMMAND = re.compile(r"\(\((.*?)\)\)|\blet\s+([^;&|\n]+)", re.DOTALL)
_ASSIGNED = re.compile(
    r"([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:\+\+|--)"
)


def assigned_names(text: str) -> set[str]:
    """The variables the arithmetic commands of `text` assign (`((x=0-1))`, `((i++))`, `let x=1`)."""
    names: set[str] = set()
    for match in _ARITHMETIC_COMMAND.finditer(text):
        body = match.group(1) if match.group(1) is not None else match.group(2)
        for assigned in _ASSIGNED.finditer(body):
            names.add(next(group for group in assigned.groups() if group))
    return names
