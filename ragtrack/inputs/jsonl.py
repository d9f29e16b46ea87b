"""Reading JSON and JSONL input strictly, with the place of every problem.

Only standard JSON is accepted: `NaN`, `Infinity` and `-Infinity` (which Python's `json`
reads by default) and numbers too large for a float are errors naming the line or item
and the field where they stand. Nesting too deep for the parser is an error too, never
a `RecursionError`.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from ragtrack.core.errors import InputError

__all__ = ["StrictDecoder", "iter_jsonl", "loads"]


class _NonFinite:
    """Stands, in a parsed value, where a non-finite number was written."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def problem(self) -> str:
        if self.text in ("NaN", "Infinity", "-Infinity"):
            return f"{self.text} is not a JSON number"
        return f"{self.text} is too large for a number"


def _locate(obj: Any) -> tuple[list[str | int], _NonFinite] | None:
    """Path to the first `_NonFinite` in document order (iterative: the value may be deep)."""
    stack: list[tuple[list[str | int], Any]] = [([], obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _NonFinite):
            return path, value
        if isinstance(value, dict):
            stack.extend((path + [k], v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((path + [i], v) for i, v in reversed(list(enumerate(value))))
    return None


def _field(path: list[str | int]) -> str | None:
    """`contexts[2].score` from `["contexts", 2, "score"]`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or None


class StrictDecoder:
    """`json.loads`, strictly, with one decoder for many documents (a JSONL file's lines): errors name the
    file, `where` (or the line and column) and the field; a non-finite number (NaN, Infinity, 1e999) is an
    error."""

    def __init__(self) -> None:
        self._found: list[_NonFinite] = []
        self._decoder = json.JSONDecoder(parse_constant=self._constant, parse_float=self._number)

    def _constant(self, name: str) -> _NonFinite:
        self._found.append(_NonFinite(name))
        return self._found[-1]

    def _number(self, s: str) -> float | _NonFinite:
        value = float(s)
        return value if math.isfinite(value) else self._constant(s)

    def loads(self, text: str, file: str, where: str | None = None, *, items: bool = False) -> Any:
        """The document in `text`. With `items=True` it is a JSON array of items, and a non-finite number
        inside item `i` is placed at `item i` with its field path inside the item."""
        self._found.clear()
        try:
            obj = self._decoder.decode(text)
        except json.JSONDecodeError as e:
            raise InputError(
                file, f"not valid JSON: {e.msg}", where=where or f"line {e.lineno} column {e.colno}"
            ) from None
        except RecursionError:
            raise InputError(file, "not valid JSON: nested too deeply", where=where) from None
        if self._found:
            located = _locate(obj)
            assert located is not None
            path, bad = located
            if items and path and isinstance(path[0], int):
                where, path = f"item {path[0]}", path[1:]
            raise InputError(file, bad.problem, where=where, field=_field(path))
        return obj


def loads(text: str, file: str, where: str | None = None, *, items: bool = False) -> Any:
    """One document, as `StrictDecoder.loads`."""
    return StrictDecoder().loads(text, file, where, items=items)


def iter_jsonl(lines: Iterable[bytes], file: str) -> Iterator[tuple[int, bytes, Any]]:
    """`(line number, raw line, object)` for each non-blank line of a UTF-8 JSONL stream.

    `lines` are the raw lines as iterating a binary file gives them: they end at `b"\\n"`
    only, so U+2028 and friends, which `json.dumps(ensure_ascii=False)` writes raw inside
    strings, are text. A byte-order mark is tolerated at the start of the first line.
    """
    offset = 0
    decoder = StrictDecoder()
    for lineno, raw in enumerate(lines, 1):
        line = raw[len(codecs.BOM_UTF8) :] if lineno == 1 and raw.startswith(codecs.BOM_UTF8) else raw
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            byte = offset + len(raw) - len(line) + e.start
            raise InputError(file, f"not UTF-8 text (byte {byte})", where=f"line {lineno}") from None
        offset += len(raw)
        if text and not text.isspace():  # `text.strip()`, without copying the line
            yield lineno, raw, decoder.loads(text, file, f"line {lineno}")
