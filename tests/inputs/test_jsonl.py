"""Strict JSON and JSONL reading: only standard JSON, every problem placed."""

from __future__ import annotations

import io

import pytest

from ragtrack.core.errors import InputError
from ragtrack.inputs.jsonl import iter_jsonl, loads


def error(text: str, **kw) -> InputError:
    with pytest.raises(InputError) as ei:
        loads(text, "f.json", **kw)
    return ei.value


def test_standard_json_loads() -> None:
    assert loads('{"a": [1, 2.5, -0.0, 1e300]}', "f.json") == {"a": [1, 2.5, -0.0, 1e300]}


def test_non_finite_field_path_with_keys_and_indices() -> None:
    e = error('{"a": [{"b": 1}, {"b": [0, -Infinity]}]}', where="line 4")
    assert (e.where, e.field, e.problem) == ("line 4", "a[1].b[1]", "-Infinity is not a JSON number")


def test_first_non_finite_in_document_order_is_named() -> None:
    assert error('{"x": {"y": NaN}, "z": Infinity}').field == "x.y"


def test_item_of_an_array_is_named_as_item() -> None:
    e = error('[{"a": 1}, {"a": 2}, {"b": {"c": NaN}}]', items=True)
    assert (e.where, e.field) == ("item 2", "b.c")


def test_number_overflowing_a_float_is_an_error() -> None:
    assert error('{"n": -1e999}').problem == "-1e999 is too large for a number"


def test_syntax_error_gives_line_and_column() -> None:
    assert error('{\n  "a": }').where == "line 2 column 8"


def test_jsonl_byte_order_mark_only_on_the_first_line() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\n\xef\xbb\xbf{"a": 2}\n'
    with pytest.raises(InputError) as ei:
        list(iter_jsonl(io.BytesIO(data), "f.jsonl"))
    assert ei.value.where == "line 2"


def test_jsonl_yields_raw_lines_and_skips_blank_ones() -> None:
    data = b'{"a": 1}\n \n{"a": 2}'
    assert list(iter_jsonl(io.BytesIO(data), "f.jsonl")) == [
        (1, b'{"a": 1}\n', {"a": 1}),
        (3, b'{"a": 2}', {"a": 2}),
    ]


def test_jsonl_skips_lines_of_any_whitespace() -> None:
    data = '\n\r\n \t\u3000\u00a0\x1c\r\n{"a": 1}\n\u2029'.encode()
    assert list(iter_jsonl(io.BytesIO(data), "f.jsonl")) == [(4, b'{"a": 1}\n', {"a": 1})]
