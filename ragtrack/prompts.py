"""Prompt files: loading, hashing (`prompt_sha256`) and rendering.

Templates use `{{name}}` placeholders (`{{question}}`, `{{context}}`), so that JSON
examples with single braces can stand in a prompt unescaped.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ragtrack.errors import InputError
from ragtrack.hashing import sha256_bytes
from ragtrack.types import ContextChunk, EvalCase

__all__ = ["PLACEHOLDERS", "Prompt", "fill", "format_context", "load_prompt", "render_prompt"]

PLACEHOLDERS = ("question", "context")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class Prompt(BaseModel):
    """A prompt file with its version label and the sha256 of its bytes."""

    model_config = ConfigDict(frozen=True)

    path: str
    version: str
    text: str
    sha256: str


def load_prompt(path: str | Path, version: str, *, placeholders: tuple[str, ...] = PLACEHOLDERS, field: str = "prompt.path") -> Prompt:
    """Read a prompt file; unknown placeholders are an error naming file and line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError.from_os_error(path, e, field=field) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _PLACEHOLDER.finditer(line):
            if m.group(1) not in placeholders:
                raise InputError(
                    str(path), f"unknown placeholder {{{{{m.group(1)}}}}}; known: {', '.join(placeholders)}",
                    where=f"line {lineno}",
                )
    return Prompt(path=str(path), version=version, text=text, sha256=sha256_bytes(data))


def format_context(chunks: list[ContextChunk]) -> str:
    """Chunks as the model sees them: a `[source_path]` header line above each text."""
    return "\n\n".join(f"[{c.source_path or c.id or i}]\n{c.text}" for i, c in enumerate(chunks, 1))


def fill(template: str, values: dict[str, str]) -> str:
    """Replace each `{{name}}` by `values[name]` (in one pass: a value's own braces stay as they are)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def render_prompt(template: str, case: EvalCase, contexts: list[ContextChunk] | None = None) -> str:
    """Fill `{{question}}` and `{{context}}`."""
    return fill(template, {"question": case.question, "context": format_context(contexts or [])})
