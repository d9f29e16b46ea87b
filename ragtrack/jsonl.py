"""Reading JSONL with line numbers for error messages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ragtrack.errors import InputError

__all__ = ["iter_jsonl"]


def iter_jsonl(text: str, file: str) -> Iterator[tuple[int, Any]]:
    """`(line number, object)` for each non-blank line. Lines end at `\n` only: U+2028 and
    friends, which `json.dumps(ensure_ascii=False)` writes raw inside strings, are text."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(file, f"not valid JSON: {e.msg}", where=f"line {lineno}") from None
