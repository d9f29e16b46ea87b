"""Predictions JSONL (SPEC §6): loading, validation and matching to cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrack.errors import InputError
from ragtrack.predictions import PredictionRecord, load_predictions, match_predictions, parse_prediction
from ragtrack.types import EvalCase, Generation

CASES = [
    EvalCase(id="1", question="What is the refund period?"),
    EvalCase(id="2", question="Who founded Lumen?"),
    EvalCase(id="3", question="What uptime is guaranteed?"),
]


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def records(tmp_path: Path, rows: list[Any]) -> list[PredictionRecord]:
    return load_predictions(write_lines(tmp_path / "preds.jsonl", rows))


def match(tmp_path: Path, rows: list[Any]) -> Generation:
    return match_predictions(CASES, records(tmp_path, rows))


def answers(gen: Generation) -> dict[str, str]:
    return {p.case_id: p.answer for p in gen.predictions}


def one(obj: Any) -> PredictionRecord:
    return parse_prediction(obj, "preds.jsonl", "line 1")


def load_error(tmp_path: Path, rows: list[Any]) -> InputError:
    path = write_lines(tmp_path / "preds.jsonl", rows)
    with pytest.raises(InputError) as ei:
        load_predictions(path)
    assert ei.value.file == str(path)
    return ei.value


# ---------------------------------------------------------------- matching


def test_match_by_id(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "2", "answer": "B"}])
    assert answers(gen)["2"] == "B"


def test_match_by_integer_id(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": 3, "answer": "C"}])
    assert answers(gen)["3"] == "C"


def test_match_by_qid(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"qid": "1", "answer": "A"}])
    assert answers(gen)["1"] == "A"


def test_match_by_q(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"q": "Who founded Lumen?", "answer": "B"}])
    assert answers(gen)["2"] == "B"


def test_match_by_question(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"question": "What uptime is guaranteed?", "answer": "C"}])
    assert answers(gen)["3"] == "C"


def test_q_takes_precedence_over_question(tmp_path: Path) -> None:
    # As the seed's reference scorer: p.get("q") or p.get("question").
    gen = match(tmp_path, [{"q": "Who founded Lumen?", "question": "What uptime is guaranteed?", "answer": "B"}])
    assert answers(gen)["2"] == "B"
    assert gen.predictions[2].missing


def test_empty_q_falls_back_to_question(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"q": "", "question": "Who founded Lumen?", "answer": "B"}])
    assert answers(gen)["2"] == "B"


def test_question_match_is_exact(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"question": "who founded lumen?", "answer": "B"}])
    assert gen.n_unmatched == 1 and gen.predictions[1].missing


def test_unknown_id_is_unmatched_without_question_fallback(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "zz", "question": "Who founded Lumen?", "answer": "B"}])
    assert gen.n_unmatched == 1
    assert gen.unmatched_keys == ["zz"]
    assert gen.predictions[1].missing


def test_unknown_question_is_unmatched(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"q": "Not a question of the set", "answer": "X"}])
    assert gen.n_unmatched == 1
    assert "Not a question of the set" in gen.unmatched_keys[0]


def test_cases_without_prediction_are_missing_and_counted(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "2", "answer": "B"}])
    assert gen.n_missing == 2
    assert [p.case_id for p in gen.predictions] == ["1", "2", "3"]
    missing = [p for p in gen.predictions if p.missing]
    assert [p.case_id for p in missing] == ["1", "3"]
    assert all(p.answer == "" and p.contexts == [] for p in missing)


def test_duplicate_later_replaces_earlier_and_is_counted(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "1", "answer": "first"}, {"q": "What is the refund period?", "answer": "second"}])
    assert answers(gen)["1"] == "second"
    assert gen.duplicates_dropped == 1
    assert gen.n_unmatched == 0


def test_matched_prediction_carries_case_id(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"question": "Who founded Lumen?", "answer": "B"}])
    assert gen.predictions[1].case_id == "2" and not gen.predictions[1].missing


# ---------------------------------------------------------------- fields


@pytest.mark.parametrize("key", ["contexts", "retrieved_contexts", "chunks"])
def test_contexts_read_from_each_key(key: str) -> None:
    r = one({"id": "1", "answer": "a", key: [{"source_path": "doc.md", "text": "T", "id": "c1"}]})
    c = r.prediction.contexts
    assert [(x.source_path, x.text, x.id) for x in c] == [("doc.md", "T", "c1")]


def test_bare_string_context_has_text_and_no_source_path() -> None:
    c = one({"id": "1", "answer": "a", "contexts": ["plain text"]}).prediction.contexts[0]
    assert (c.text, c.source_path) == ("plain text", None)


def test_integer_context_id_becomes_string() -> None:
    c = one({"id": "1", "contexts": [{"text": "T", "id": 4}]}).prediction.contexts[0]
    assert c.id == "4"


def test_citations_items_converted_with_str() -> None:
    assert one({"id": "1", "answer": "a", "citations": [1, "c2"]}).prediction.citations == ["1", "c2"]


@pytest.mark.parametrize("value", ["c1", {"a": 1}, 3])
def test_non_list_citations_treated_as_absent(value: Any) -> None:
    assert one({"id": "1", "answer": "a", "citations": value}).prediction.citations is None


def test_null_answer_becomes_empty_string() -> None:
    assert one({"id": "1", "answer": None}).prediction.answer == ""


def test_absent_answer_becomes_empty_string() -> None:
    assert one({"id": "1"}).prediction.answer == ""


def test_latency_and_usage_kept() -> None:
    p = one({"id": "1", "answer": "a", "latency_ms": 12.5, "usage": {"tokens": 3}}).prediction
    assert (p.latency_ms, p.usage) == (12.5, {"tokens": 3})


def test_blank_lines_ignored(tmp_path: Path) -> None:
    recs = records(tmp_path, [{"id": "1", "answer": "A"}, "", "   ", {"id": "2", "answer": "B"}])
    assert [r.key_id for r in recs] == ["1", "2"]


def test_answer_with_unicode_line_separator_loads(tmp_path: Path) -> None:
    recs = records(tmp_path, [{"id": "1", "answer": "line one\u2028line two"}])
    assert recs[0].prediction.answer == "line one\u2028line two"


# ---------------------------------------------------------------- errors


def test_invalid_json_line(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A"}, "", '{"id": "2", "answer": '])
    assert (e.where, e.field) == ("line 3", None)
    assert "not valid JSON" in str(e)


def test_line_not_an_object(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1"}, ["id", "2"]])
    assert (e.where, e.field) == ("line 2", None)
    assert "object" in str(e)


def test_no_id_and_no_question(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"answer": "orphan"}])
    assert e.where == "line 1"
    assert "id" in str(e) and "question" in str(e)


def test_answer_not_a_string(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": {"text": "A"}}])
    assert (e.where, e.field) == ("line 1", "answer")


def test_contexts_not_a_list(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A", "retrieved_contexts": "one chunk"}])
    assert (e.where, e.field) == ("line 1", "retrieved_contexts")


def test_context_item_that_is_a_number(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A", "contexts": ["ok", 5]}])
    assert (e.where, e.field) == ("line 1", "contexts[1]")


def test_context_text_not_a_string(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A", "chunks": [{"text": 5}]}])
    assert (e.where, e.field) == ("line 1", "chunks[0].text")


def test_latency_as_string(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A"}, {"id": "2", "answer": "B", "latency_ms": "12"}])
    assert (e.where, e.field) == ("line 2", "latency_ms")


def test_question_not_a_string(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"question": ["Q"], "answer": "A"}])
    assert (e.where, e.field) == ("line 1", "question")


def test_bool_id_is_error(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": True, "answer": "A"}])
    assert (e.where, e.field) == ("line 1", "id")


def test_message_reads_file_line_field_problem(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": 5}])
    assert str(e).startswith(f"{e.file}: line 1: answer: ")


def test_predictions_file_not_found(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as ei:
        load_predictions(path)
    assert ei.value.file == str(path) and "not found" in str(ei.value)
