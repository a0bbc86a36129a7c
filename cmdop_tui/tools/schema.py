"""Validate tool input against the small JSON-Schema subset our tools declare.

The model sometimes sends wrong or missing arguments; short messages naming the field let it
correct itself on the next turn. Supported: `type` (object, string, integer, number, boolean,
array, null, or a list of these), `properties`, `required`, `additionalProperties` (false or a
schema), `enum`, `minimum`, `maximum`, `items`. Other keywords are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["object_schema", "prop", "validate"]

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    # JSON has no separate boolean-as-number, so `True` is not an integer here.
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}
_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def validate(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Every problem with `instance`, one short message each; empty when it is valid."""
    errors: list[str] = []
    _check(instance, schema, "", errors)
    return errors


def _label(path: str) -> str:
    """How a message names the value: `'field'`, `'a.b'`, `'items[2]'`, or `input` at the root."""
    return f"'{path}'" if path else "input"


def _child(path: str, key: str | int) -> str:
    """The path of a property or array element below `path`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _check(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    """Append the problems of `value` at `path`; stop at a wrong type (the rest would be noise)."""
    if not _check_type(value, schema, path, errors):
        return
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        options = ", ".join(json.dumps(option) for option in schema["enum"])
        errors.append(f"{_label(path)} must be one of {options}")
    _check_range(value, schema, path, errors)
    if isinstance(value, dict):
        _check_object(value, schema, path, errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check(item, schema["items"], _child(path, index), errors)


def _check_type(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> bool:
    """Whether `value` has one of the schema's types (true when the schema names none)."""
    declared = schema.get("type")
    if declared is None:
        return True
    types = [declared] if isinstance(declared, str) else list(declared)
    if any(_TYPE_CHECKS.get(name, lambda _: True)(value) for name in types):
        return True
    wanted = " or ".join(_TYPE_NAMES.get(name, name) for name in types)
    errors.append(f"{_label(path)} must be {wanted}")
    return False


def _same(value: Any, option: Any) -> bool:
    """Equality that does not confuse `True` with `1` or `1` with `1.0`."""
    return type(value) is type(option) and value == option


def _check_range(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    """`minimum` and `maximum` for numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{_label(path)} must be >= {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{_label(path)} must be <= {schema['maximum']}")


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[str]) -> None:
    """`required`, `properties` and `additionalProperties` for an object."""
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"missing required field {_label(_child(path, name))}")
    extra_schema = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], _child(path, name), errors)
        elif extra_schema is False:
            errors.append(f"unexpected field {_label(_child(path, name))}")
        elif isinstance(extra_schema, dict):
            _check(item, extra_schema, _child(path, name), errors)


def prop(kind: str, description: str, **constraints: Any) -> dict[str, Any]:
    """One property's schema, e.g. `prop("integer", "Last line.", minimum=1)`."""
    return {"type": kind, "description": description, **constraints}


def object_schema(properties: dict[str, dict[str, Any]], required: Iterable[str] = ()) -> dict[str, Any]:
    """A tool's input schema: an object with these properties and no others."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


MACHINE_PROPERTY = prop(
    "string",
    "The machine to work on: a name from the machines list. Default: the session's machine.",
)
