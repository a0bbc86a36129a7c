"""Ansible host patterns as Ansible reads them: `name[:port]`, `[ipv6]:port`, ranges.

    split_port("web1:2222")        -> ("web1", 2222)
    split_port("[2001:db8::1]:22") -> ("2001:db8::1", 22)
    split_port("2001:db8::1")      -> ("2001:db8::1", None)   a bare IPv6 address has no port
    expand("web[01:05:2].x")       -> ["web01.x", "web03.x", "web05.x"]
    expand("rack-[a:c]")           -> ["rack-a", "rack-b", "rack-c"]

A pattern that is no host name, address or range (Ansible then keeps it as it is, port and all)
stays whole here too.
"""

from __future__ import annotations

import re
import string

__all__ = ["InventoryError", "expand", "host_and_port", "split_port"]


MAX_HOSTS_PER_PATTERN = 100_000  # a pattern naming more is a typo (`[1:1000000000]`), not a fleet


class InventoryError(ValueError):
    """An inventory (or one of its lines) that Ansible would refuse; the message says why."""


_RANGE = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+|[0-9a-f]+:[0-9a-f]+)(?::[0-9]+)?\]"
_LABEL = rf"(?:[\w]|{_RANGE})(?:[\w-]|{_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.IGNORECASE)
_IPV4_PART = r"(?:[01]?[0-9]{1,2}|2[0-4][0-9]|25[0-5]|\[[0-9]+:[0-9]+(?::[0-9]+)?\])"
_IPV4 = re.compile(rf"^(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}$")
_IPV6_PART = r"(?:[0-9a-f]{1,4}|\[[0-9a-f]+:[0-9a-f]+(?::[0-9]+)?\])"
_IPV6_SHAPES = (
    rf"(?:{_IPV6_PART}:){{7}}{_IPV6_PART}",
    rf"(?:{_IPV6_PART}:){{1,6}}:",
    *(rf"(?:{_IPV6_PART}:){{{n}}}(?::{_IPV6_PART}){{1,{7 - n}}}" for n in range(1, 7)),
    rf":(?::{_IPV6_PART}){{1,6}}",
    rf"{_IPV6_PART}?::",
    rf"(?:0:){{6}}(?:{_IPV6_PART}\.){{3}}{_IPV6_PART}",
    rf"::(?:ffff:)?(?:{_IPV6_PART}\.){{3}}{_IPV6_PART}",
    rf"(?:0:){{5}}ffff:(?:{_IPV6_PART}\.){{3}}{_IPV6_PART}",
)
_IPV6 = re.compile(rf"^(?:{'|'.join(_IPV6_SHAPES)})$", re.IGNORECASE)
_BRACKETED_PORT = re.compile(r"^\[(.+)\]:([0-9]+)$")
_NAME_PORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$")


def split_port(pattern: str) -> tuple[str, int | None]:
    """The host part of a host pattern and its port (None: none given). Raises InventoryError for
    what is no host name, IPv4 or IPv6 address (with or without ranges)."""
    host, port = pattern, None
    for shape in (_BRACKETED_PORT, _NAME_PORT):
        match = shape.match(host)
        if match:
            host, port = match.group(1), int(match.group(2))
    if not any(shape.match(host) for shape in (_IPV4, _IPV6, _HOSTNAME)):
        raise InventoryError(f"not a valid network hostname: {host}")
    return host, port


def host_and_port(pattern: str) -> tuple[list[str], int | None]:
    """The hosts a pattern names and the port they share, as Ansible's inventory plugins read a
    host key: a pattern that is no host name keeps its whole text (and no port)."""
    try:
        host, port = split_port(pattern)
    except InventoryError:
        host, port = pattern, None
    return expand(host), port


def expand(pattern: str) -> list[str]:
    """Every name a pattern with `[begin:end(:step)]` ranges names (numbers, zero padding kept,
    or single letters); a pattern without ranges is its own one name. Raises InventoryError for
    a malformed range."""
    if "[" not in pattern:
        return [pattern]
    head, _, rest = pattern.partition("[")
    bounds_text, _, tail = rest.partition("]")
    bounds = bounds_text.split(":")
    if len(bounds) not in (2, 3):
        raise InventoryError(f"host range must be begin:end or begin:end:step: {pattern}")
    begin, end = bounds[0] or "0", bounds[1]
    step = bounds[2] if len(bounds) == 3 else "1"
    if not end:
        raise InventoryError(f"host range must specify end value: {pattern}")
    names = [name for middle in _sequence(begin, end, step, pattern) for name in expand(f"{head}{middle}{tail}")]
    if len(names) > MAX_HOSTS_PER_PATTERN:
        raise InventoryError(f"{pattern} names {len(names)} hosts, more than {MAX_HOSTS_PER_PATTERN} are read")
    return names


def _sequence(begin: str, end: str, step: str, pattern: str) -> list[str]:
    width = len(begin) if begin.startswith("0") and len(begin) > 1 else 0
    if width and width != len(end):
        raise InventoryError(f"host range must specify equal-length begin and end formats: {pattern}")
    try:
        stride = int(step)
        if (
            begin.isdigit()
            and end.isdigit()
            and stride > 0
            and (int(end) - int(begin)) // stride > MAX_HOSTS_PER_PATTERN
        ):
            raise InventoryError(f"{pattern} names more than {MAX_HOSTS_PER_PATTERN} hosts")
        if begin in string.ascii_letters and end in string.ascii_letters:
            first, last = string.ascii_letters.index(begin), string.ascii_letters.index(end)
            if first > last:
                raise InventoryError(f"host range must have begin <= end: {pattern}")
            return list(string.ascii_letters[first : last + 1 : stride])
        return [str(number).zfill(width) for number in range(int(begin), int(end) + 1, stride)]
    except ValueError as exc:
        if isinstance(exc, InventoryError):
            raise
        raise InventoryError(f"host range {begin}:{end}:{step} is not numbers or letters: {pattern}") from None
