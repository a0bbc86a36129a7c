"""An elicitation's form: a server's flat schema read as fields, and answers checked against it."""

from __future__ import annotations

import pytest

from cmdop_tui.mcp.forms import MAX_OPTIONS, FormError, checked, form_fields, read_text

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "email": {"type": "string", "format": "email"},
        "born": {"type": "string", "format": "date"},
        "age": {"type": "integer", "minimum": 1, "maximum": 120, "default": 42},
        "ratio": {"type": "number"},
        "agree": {"type": "boolean"},
        "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
        "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
        "fish": {
            "type": "array",
            "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2"}]},
            "maxItems": 1,
        },
    },
    "required": ["name"],
}


def test_a_flat_schema_becomes_fields_in_order():
    fields = form_fields(SCHEMA)
    assert [f.name for f in fields] == ["name", "email", "born", "age", "ratio", "agree", "pet", "hero", "fish"]
    by_name = {f.name: f for f in fields}
    assert by_name["name"].required and by_name["name"].label == "Name" and by_name["name"].min_length == 2
    assert by_name["age"].kind == "integer" and (by_name["age"].minimum, by_name["age"].maximum) == (1, 120)
    assert by_name["age"].default == 42
    assert by_name["pet"].kind == "choice" and by_name["pet"].options == (("p1", "Cats"), ("p2", "Dogs"))
    assert by_name["hero"].options == (("h1", "Superman"),)
    assert by_name["fish"].kind == "choices" and by_name["fish"].options == (("f1", "Tuna"), ("f2", "f2"))


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"deep": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"nums": {"type": "array", "items": {"type": "number"}}}},
        {"type": "array"},
        {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(51)}},
    ],
)
def test_a_schema_that_is_not_flat_is_refused_with_why(schema):
    with pytest.raises(FormError):
        form_fields(schema)


def test_typed_text_is_read_as_the_fields_kind():
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert read_text(fields["age"], " 7 ") == 7
    assert read_text(fields["ratio"], "2.5") == 2.5 and read_text(fields["ratio"], "3") == 3
    assert read_text(fields["name"], "  ") is None
    with pytest.raises(FormError, match="age: a whole number"):
        read_text(fields["age"], "seven")


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({}, "Name: required"),
        ({"name": "A"}, "Name: at least 2 characters"),
        ({"name": "Ada", "email": "nope"}, "email: an email address"),
        ({"name": "Ada", "born": "31/05/2024"}, "born: a date such as 2024-05-31"),
        ({"name": "Ada", "age": 121}, "age: at most 120"),
        ({"name": "Ada", "age": True}, "age: a number"),
        ({"name": "Ada", "agree": "yes"}, "agree: yes or no"),
        ({"name": "Ada", "pet": "p9"}, "pet: one of the choices"),
        ({"name": "Ada", "fish": ["f1", "f2"]}, "fish: choose at most 1"),
        ({"name": "Ada", "fish": ["f9"]}, "fish: only the choices offered"),
    ],
)
def test_an_answer_that_does_not_fit_names_the_field_and_why(values, problem):
    with pytest.raises(FormError, match=problem):
        checked(form_fields(SCHEMA), values)


def test_answers_that_fit_are_kept_and_empty_ones_left_out():
    values = {"name": "Ada", "email": "ada@example.com", "age": 36, "agree": False, "fish": [], "ratio": None}
    assert checked(form_fields(SCHEMA), values) == {
        "name": "Ada",
        "email": "ada@example.com",
        "age": 36,
        "agree": False,
    }


def test_a_choice_of_thousands_of_options_is_a_form_the_app_cannot_show():
    schema = {"type": "object", "properties": {"pick": {"type": "string", "enum": [str(i) for i in range(100_000)]}}}
    with pytest.raises(FormError, match="choices"):
        form_fields(schema)
    many = {"type": "array", "items": {"enum": [str(i) for i in range(MAX_OPTIONS + 1)]}}
    with pytest.raises(FormError, match="choices"):
        form_fields({"type": "object", "properties": {"picks": many}})


@pytest.mark.parametrize("typed", ["nan", "inf", "-Infinity", "1e999"])
def test_a_number_that_is_not_finite_is_no_number(typed):
    field = form_fields({"type": "object", "properties": {"n": {"type": "number"}}})[0]
    with pytest.raises(FormError, match="a number"):
        checked([field], {"n": read_text(field, typed)})
    with pytest.raises(FormError, match="a number"):
        checked([field], {"n": float(typed)})  # the library's answer, too
