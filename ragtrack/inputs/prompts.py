"""Prompt files: loading, hashing (`prompt_sha256`) and rendering.

Templates use `{{name}}` placeholders (`{{question}}`, `{{context}}`), so that JSON
examples with single braces can stand in a prompt unescaped.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_bytes
from ragtrack.core.types import ContextChunk, EvalCase

__all__ = [
    "PLACEHOLDERS",
    "Prompt",
    "defuse",
    "fill",
    "fill_as_data",
    "format_context",
    "load_prompt",
    "prompt_of",
    "render_prompt",
]

PLACEHOLDERS = ("question", "context")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_CLOSING_TAG = re.compile(r"</([A-Za-z_][A-Za-z0-9_]*)>")


class Prompt(BaseModel):
    """A prompt file with its version label and the sha256 of its bytes."""

    model_config = ConfigDict(frozen=True)

    path: str
    version: str
    text: str
    sha256: str
    # the Prompt Registry version it was fetched from (`prompts:/name/3`), saved at `path`
    uri: str | None = None


def load_prompt(
    path: str | Path,
    version: str,
    *,
    placeholders: tuple[str, ...] = PLACEHOLDERS,
    field: str = "prompt.path",
) -> Prompt:
    """Read a prompt file; unknown placeholders are an error naming file and line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError.from_os_error(path, e, field=field) from None
    return prompt_of(data, str(path), version, placeholders=placeholders)


def prompt_of(
    data: bytes,
    where: str,
    version: str,
    *,
    placeholders: tuple[str, ...] = PLACEHOLDERS,
    uri: str | None = None,
) -> Prompt:
    """A prompt from its bytes, read from `where` (a file, or the registry version `uri` saved there)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(uri or where, f"not UTF-8 text (byte {e.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _PLACEHOLDER.finditer(line):
            if m.group(1) not in placeholders:
                raise InputError(
                    uri or where,
                    f"unknown placeholder {{{{{m.group(1)}}}}}; known: {', '.join(placeholders)}",
                    where=f"line {lineno}",
                )
    return Prompt(path=where, version=version, text=text, sha256=sha256_bytes(data), uri=uri)


def format_context(chunks: list[ContextChunk]) -> str:
    """Chunks as the model sees them: a `[source_path]` header line above each text."""
    return "\n\n".join(f"[{c.source_path or c.id or i}]\n{c.text}" for i, c in enumerate(chunks, 1))


def fill(template: str, values: dict[str, str]) -> str:
    """Replace each `{{name}}` by `values[name]` (in one pass: a value's own braces stay as they are)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def defuse(text: str, tags: tuple[str, ...]) -> str:
    """`text` with every `<tag>` / `</tag>` of `tags` defused (angle brackets made full-width), so data
    placed inside a delimited block of a prompt cannot close that block and speak as the prompt."""
    if not tags:
        return text
    pattern = re.compile(rf"<\s*/?\s*(?:{'|'.join(map(re.escape, tags))})\s*>", re.IGNORECASE)
    return pattern.sub(lambda m: m.group(0).replace("<", "＜").replace(">", "＞"), text)


def fill_as_data(template: str, values: dict[str, str]) -> str:
    """`fill` with each value defused against every delimiter tag the template closes (`</answer>` …)."""
    tags = tuple(dict.fromkeys(_CLOSING_TAG.findall(template)))
    return fill(template, {k: defuse(v, tags) for k, v in values.items()})


def render_prompt(template: str, case: EvalCase, contexts: list[ContextChunk] | None = None) -> str:
    """Fill `{{question}}` and `{{context}}`."""
    return fill(template, {"question": case.question, "context": format_context(contexts or [])})
