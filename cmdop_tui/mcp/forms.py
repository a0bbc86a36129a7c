"""An elicitation's form: the flat JSON schema a server sends, as fields, and the person's answers
checked against it.

MCP keeps these schemas flat: an object whose properties are strings (with `minLength`,
`maxLength`, a `format` of email, uri, date or date-time), numbers and integers (`minimum`,
`maximum`), booleans, and choices: a string with `enum` (labels in `enumNames`) or `oneOf`
`{const, title}`, or an array of such choices (`items.enum` / `items.anyOf`, `minItems`,
`maxItems`). Anything else (a nested object, an array of numbers), or more than MAX_FIELDS
fields or MAX_OPTIONS choices in one, makes the form unusable, and the server is told so. A
number must be finite (NaN is no JSON).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

FormValue = str | int | float | bool | list[str]
Kind = Literal["string", "number", "integer", "boolean", "choice", "choices"]

MAX_FIELDS = 50
MAX_OPTIONS = 500  # of one choice: more is no choice a person makes from a list
MAX_TEXT = 10_000  # characters of one answer
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


class FormError(ValueError):
    """A schema the app cannot show, or an answer that does not fit it; the message says which."""


@dataclass(frozen=True)
class FormField:
    name: str
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    default: FormValue | None = None
    options: tuple[tuple[str, str], ...] = ()  # (value, label) of a choice
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str = ""
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        return self.title or self.name


def form_fields(schema: Mapping[str, Any]) -> tuple[FormField, ...]:
    """The fields of a flat schema, in its order. Raises FormError for one the app cannot show."""
    properties = schema.get("properties") or {}
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping):
        raise FormError("the form is not an object of fields")
    if len(properties) > MAX_FIELDS:
        raise FormError(f"the form has {len(properties)} fields (at most {MAX_FIELDS})")
    required = schema.get("required") or []
    return tuple(_field(str(name), spec, name in required) for name, spec in properties.items())


def _field(name: str, spec: Any, required: bool) -> FormField:
    if not isinstance(spec, Mapping):
        raise FormError(f"the field {name!r} has no schema")
    kind, options = _kind(name, spec)
    raw_items = spec.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    return FormField(
        name=name,
        kind=kind,
        title=str(spec.get("title") or ""),
        description=str(spec.get("description") or ""),
        required=required,
        default=spec.get("default") if _is_value(spec.get("default")) else None,
        options=options,
        minimum=_number(spec.get("minimum")),
        maximum=_number(spec.get("maximum")),
        min_length=_count(spec.get("minLength")),
        max_length=_count(spec.get("maxLength")),
        format=str(spec.get("format") or ""),
        min_items=_count(spec.get("minItems", items.get("minItems"))),
        max_items=_count(spec.get("maxItems", items.get("maxItems"))),
    )


def _kind(name: str, spec: Mapping[str, Any]) -> tuple[Kind, tuple[tuple[str, str], ...]]:
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        options = _options(items) if isinstance(items, Mapping) else ()
        if not options:
            raise FormError(f"the field {name!r} is a list of something other than choices")
        return "choices", _few(name, options)
    if kind == "string" and (options := _options(spec)):
        return "choice", _few(name, options)
    if kind in ("string", "number", "integer", "boolean"):
        return kind, ()
    raise FormError(f"the field {name!r} is of a kind a form cannot show ({kind or 'no type'})")


def _few(name: str, options: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    if len(options) > MAX_OPTIONS:
        raise FormError(f"the field {name!r} has {len(options):,} choices (at most {MAX_OPTIONS})")
    return options


def _options(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A choice's (value, label) pairs: `enum` (with `enumNames`), or `oneOf` / `anyOf` consts."""
    if isinstance(spec.get("enum"), list):
        values = [str(value) for value in spec["enum"]]
        names = spec.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else values
        return tuple(zip(values, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        if isinstance(spec.get(key), list):
            found = [item for item in spec[key] if isinstance(item, Mapping) and "const" in item]
            return tuple((str(item["const"]), str(item.get("title") or item["const"])) for item in found)
    return ()


def _is_value(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    return isinstance(value, str | int | float | bool)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# --- answers ---------------------------------------------------------------------------------------


def read_text(field: FormField, text: str) -> FormValue | None:
    """What the person typed for a text, number or integer field, as its value (None: left
    empty). Raises FormError when it is not one."""
    text = text.strip()
    if not text:
        return None
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise FormError(f"{field.label}: a whole number, please") from None
    if field.kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise FormError(f"{field.label}: a number, please") from None
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    return text


def checked(fields: Sequence[FormField], values: Mapping[str, FormValue | None]) -> dict[str, FormValue]:
    """The answers that fit the form, left-empty ones out. Raises FormError naming the first
    field that does not fit (a required one left empty, a number out of range, a bad email...)."""
    answers: dict[str, FormValue] = {}
    for field in fields:
        value = values.get(field.name)
        if value is None or value == [] or value == "":
            if field.required:
                raise FormError(f"{field.label}: required")
            continue
        problem = _problem(field, value)
        if problem:
            raise FormError(f"{field.label}: {problem}")
        answers[field.name] = value
    return answers


def _problem(field: FormField, value: FormValue) -> str | None:
    """What is wrong with `value` for `field`, or None."""
    if field.kind == "boolean":
        return None if isinstance(value, bool) else "yes or no"
    if field.kind in ("number", "integer"):
        return _number_problem(field, value)
    if field.kind == "choices":
        return _choices_problem(field, value)
    if not isinstance(value, str):
        return "text, please"
    if field.kind == "choice":
        return None if value in {v for v, _ in field.options} else "one of the choices, please"
    return _text_problem(field, value)


def _number_problem(field: FormField, value: FormValue) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "a number, please"
    if field.kind == "integer" and not float(value).is_integer():
        return "a whole number, please"
    if field.minimum is not None and value < field.minimum:
        return f"at least {field.minimum:g}"
    if field.maximum is not None and value > field.maximum:
        return f"at most {field.maximum:g}"
    return None


def _choices_problem(field: FormField, value: FormValue) -> str | None:
    if not isinstance(value, list):
        return "a list of choices"
    allowed = {v for v, _ in field.options}
    if any(item not in allowed for item in value):
        return "only the choices offered"
    if field.min_items is not None and len(value) < field.min_items:
        return f"choose at least {field.min_items}"
    if field.max_items is not None and len(value) > field.max_items:
        return f"choose at most {field.max_items}"
    return None


def _text_problem(field: FormField, value: str) -> str | None:
    if len(value) > MAX_TEXT:
        return f"at most {MAX_TEXT} characters"
    if field.min_length is not None and len(value) < field.min_length:
        return f"at least {field.min_length} characters"
    if field.max_length is not None and len(value) > field.max_length:
        return f"at most {field.max_length} characters"
    return _format_problem(field.format, value)


def _format_problem(kind: str, value: str) -> str | None:
    if kind == "email" and not _EMAIL.match(value):
        return "an email address, please"
    if kind == "uri" and not _URI.match(value):
        return "a URI (such as https://example.com), please"
    try:
        if kind == "date":
            date.fromisoformat(value)
        elif kind == "date-time":
            datetime.fromisoformat(value)
    except ValueError:
        return f"a {kind} such as {'2024-05-31' if kind == 'date' else '2024-05-31T14:30:00'}, please"
    return None
