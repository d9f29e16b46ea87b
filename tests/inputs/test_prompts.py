"""Prompt files: `prompt_sha256` of the bytes, placeholder checks, rendering (SPEC §1 reproducibility
record)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import ContextChunk, EvalCase
from ragtrack.inputs.prompts import load_prompt, render_prompt

TEMPLATE = (
    '你是助手。只输出 JSON，例如 {"main_topic": "...", "source_map": [{"refs": []}]}\n'
    "问题：{{question}}\n"
    "资料：\n{{ context }}\n"
)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_sha256_of_file_bytes(tmp_path: Path) -> None:
    path = write(tmp_path / "v1.md", TEMPLATE)
    p = load_prompt(path, "v1")
    assert p.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (p.version, p.path, p.text) == ("v1", str(path), TEMPLATE)


def test_sha256_changes_with_one_byte(tmp_path: Path) -> None:
    a = load_prompt(write(tmp_path / "a.md", TEMPLATE), "v1").sha256
    b = load_prompt(write(tmp_path / "b.md", TEMPLATE + " "), "v1").sha256
    assert a != b


def test_unknown_placeholder_names_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.md", "line one {{question}}\n\nline three {{answer}}\n")
    with pytest.raises(InputError) as ei:
        load_prompt(path, "v1")
    e = ei.value
    assert (e.file, e.where) == (str(path), "line 3")
    assert "answer" in str(e)


def test_missing_prompt_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.md"
    with pytest.raises(InputError) as ei:
        load_prompt(path, "v1")
    assert ei.value.file == str(path) and "not found" in str(ei.value)


def test_prompt_path_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as ei:
        load_prompt(tmp_path, "v1")
    assert str(ei.value) == f"{tmp_path}: prompt.path: cannot read: Is a directory"


def test_render_fills_question_and_context(tmp_path: Path) -> None:
    text = load_prompt(write(tmp_path / "v1.md", TEMPLATE), "v1").text
    case = EvalCase(id="1", question="退款多久到账？")
    out = render_prompt(text, case, [ContextChunk(source_path="policies/refund.md", text="7个工作日内到账")])
    assert "问题：退款多久到账？" in out
    assert "[policies/refund.md]\n7个工作日内到账" in out
    assert "{{" not in out


def test_render_leaves_single_brace_json_untouched() -> None:
    case = EvalCase(id="1", question="Q")
    out = render_prompt(TEMPLATE, case, [])
    assert '{"main_topic": "...", "source_map": [{"refs": []}]}' in out


def test_render_does_not_interpret_backslashes_or_placeholders_in_values() -> None:
    case = EvalCase(id="1", question=r"path C:\new\1 and {{context}}")
    out = render_prompt("Q: {{question}}|C: {{context}}", case, [ContextChunk(text="ctx")])
    assert out.startswith(r"Q: path C:\new\1 and {{context}}|C: ")
