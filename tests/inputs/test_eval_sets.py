"""Eval-set input contracts (SPEC §6) and the eval-set version of the reproducibility record (SPEC §1)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.inputs.eval_sets import MAX_CASE_ID, detect_format, load_eval_file, load_eval_set

ANSWER_EXAMPLE = {
    "target_audience": "客户",
    "main_topic": "退款",
    "sub_topic": "到账时间",
    "detailed_description": ["退款在7个工作日内到账"],
    "original_evidence": "退款将在审核通过后7个工作日内原路退回至付款账户。",
    "predicted_questions": ["退款会退到哪里？"],
}


def qv2(question: str, cid: Any = ..., **answer_overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if cid is not ...:
        item["id"] = cid
    item["question"] = question
    item["expected"] = {"answer_example": {**ANSWER_EXAMPLE, **answer_overrides}, "source_map": []}
    return item


def qa(qid: Any, q: str, answerable: Any = True, gold_ids: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "qid": qid,
        "q": q,
        "answerable": answerable,
        "gold_ids": gold_ids if gold_ids is not None else [],
        **extra,
    }


def write_json(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as ei:
        load_eval_file(path)
    return ei.value


# ---------------------------------------------------------------- formats load


def test_question_v2_with_ids_loads(tmp_path: Path) -> None:
    lf = load_eval_file(write_json(tmp_path / "q.json", [qv2("Q1", "a1"), qv2("Q2", "a2")]))
    assert lf.file.format == "question_v2"
    assert [(c.id, c.question) for c in lf.cases] == [("a1", "Q1"), ("a2", "Q2")]
    assert lf.cases[0].expected is not None
    assert lf.cases[0].expected.answer_example.main_topic == "退款"


def test_question_v2_missing_id_becomes_index_string(tmp_path: Path) -> None:
    lf = load_eval_file(write_json(tmp_path / "q.json", [qv2("Q0"), qv2("Q1", "x"), qv2("Q2")]))
    assert [c.id for c in lf.cases] == ["0", "x", "2"]


def test_qaset_loads(tmp_path: Path) -> None:
    lf = load_eval_file(
        write_json(
            tmp_path / "qa.json", [qa("1", "Q1", True, ["c1"], gold_claim="seven days"), qa("2", "Q2", False)]
        )
    )
    assert lf.file.format == "qaset"
    c = lf.cases[0]
    assert (c.id, c.question) == ("1", "Q1")
    assert c.gold is not None and (c.gold.answerable, c.gold.gold_ids, c.gold.gold_claim) == (
        True,
        ["c1"],
        "seven days",
    )
    assert lf.cases[1].gold is not None and lf.cases[1].gold.answerable is False


RAG_ITEMS = [
    {
        "id": "r1",
        "question": "Q1",
        "ground_truth_answer": "A1",
        "ground_truth_contexts": ["ctx"],
        "graph_entities": ["E"],
        "metadata": {"k": 1},
    },
    {"id": "r2", "question": "Q2"},
]


def test_rag_json_array_loads(tmp_path: Path) -> None:
    lf = load_eval_file(write_json(tmp_path / "rag.json", RAG_ITEMS))
    assert lf.file.format == "rag"
    assert [c.id for c in lf.cases] == ["r1", "r2"]
    ref = lf.cases[0].reference
    assert ref is not None
    assert (ref.ground_truth_answer, ref.ground_truth_contexts, ref.graph_entities, ref.metadata) == (
        "A1",
        ["ctx"],
        ["E"],
        {"k": 1},
    )


def test_rag_jsonl_loads(tmp_path: Path) -> None:
    lf = load_eval_file(write_jsonl(tmp_path / "rag.jsonl", RAG_ITEMS))
    assert lf.file.format == "rag"
    assert lf.jsonl is True
    assert [c.id for c in lf.cases] == ["r1", "r2"]


def test_integer_ids_become_strings(tmp_path: Path) -> None:
    assert [
        c.id for c in load_eval_file(write_json(tmp_path / "r.json", [{"id": 7, "question": "Q"}])).cases
    ] == ["7"]
    assert [c.id for c in load_eval_file(write_json(tmp_path / "qa.json", [qa(3, "Q")])).cases] == ["3"]
    assert [c.id for c in load_eval_file(write_json(tmp_path / "q.json", [qv2("Q", 5)])).cases] == ["5"]


# ---------------------------------------------------------------- format detection


def test_detect_format_from_keys() -> None:
    assert detect_format(qv2("Q", "1")) == "question_v2"
    assert detect_format(qa("1", "Q")) == "qaset"
    assert detect_format({"q": "Q"}) == "qaset"
    assert detect_format({"id": "1", "question": "Q"}) == "rag"
    assert detect_format({"id": "1"}) is None


def test_undetectable_format_is_an_error(tmp_path: Path) -> None:
    path = write_json(tmp_path / "x.json", [{"id": "1", "text": "?"}])
    e = load_error(path)
    assert (e.file, e.where) == (str(path), "item 0")
    assert "format" in str(e)


def test_format_named_explicitly_overrides_detection(tmp_path: Path) -> None:
    # A question_v2 item read as `rag` keeps id and question only.
    lf = load_eval_file(write_json(tmp_path / "q.json", [qv2("Q", "1")]), fmt="rag")
    assert lf.file.format == "rag"
    assert lf.cases[0].expected is None and lf.cases[0].reference is not None


# ---------------------------------------------------------------- version


def test_version_is_stem_at_sha1_of_bytes(tmp_path: Path) -> None:
    path = write_json(tmp_path / "question_v2.json", [qv2("Q", "1")])
    lf = load_eval_file(path)
    assert lf.file.version == "question_v2@" + hashlib.sha1(path.read_bytes()).hexdigest()


def test_version_of_jsonl_uses_stem_without_suffix(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rag_set.jsonl", RAG_ITEMS)
    assert load_eval_file(path).file.version == "rag_set@" + hashlib.sha1(path.read_bytes()).hexdigest()


def test_byte_change_changes_version(tmp_path: Path) -> None:
    path = write_json(tmp_path / "q.json", [qv2("Q", "1")])
    before = load_eval_file(path).file.version
    path.write_bytes(path.read_bytes() + b"\n")  # same content, one more byte
    after = load_eval_file(path).file.version
    assert before != after
    assert after.startswith("q@")


# ---------------------------------------------------------------- errors


def test_not_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"id": "1", "question": "Q"},\n  {"id": \n]\n', encoding="utf-8")
    e = load_error(path)
    assert e.file == str(path)
    assert e.where is not None and e.where.startswith("line 4")
    assert e.field is None
    assert "not valid JSON" in str(e)


def test_not_an_array(tmp_path: Path) -> None:
    path = write_json(tmp_path / "obj.json", {"items": [qv2("Q", "1")]})
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), None, None)
    assert "array" in str(e)


def test_empty_set(tmp_path: Path) -> None:
    path = write_json(tmp_path / "empty.json", [])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), None, None)
    assert "empty" in str(e)


def test_empty_jsonl_is_empty_set(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert "empty" in str(load_error(path))


def test_item_not_an_object(tmp_path: Path) -> None:
    path = write_json(tmp_path / "r.json", [{"id": "1", "question": "Q"}, ["not", "an", "object"]])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 1", None)
    assert "object" in str(e)


def test_missing_question(tmp_path: Path) -> None:
    item = qv2("Q", "2")
    del item["question"]
    path = write_json(tmp_path / "q.json", [qv2("Q1", "1"), item])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 1", "question")


@pytest.mark.parametrize("value", [1, "true"], ids=["int", "string"])
def test_answerable_must_be_bool(tmp_path: Path, value: Any) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "Q1"), qa("2", "Q2", answerable=value)])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 1", "answerable")


def test_gold_ids_with_int(tmp_path: Path) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "Q1", gold_ids=["c1", 3])])
    e = load_error(path)
    assert (e.file, e.where) == (str(path), "item 0")
    assert e.field is not None and e.field.startswith("gold_ids")


def test_detailed_description_as_string(tmp_path: Path) -> None:
    path = write_json(tmp_path / "q.json", [qv2("Q", "1", detailed_description="one string")])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 0", "expected.answer_example.detailed_description")


def test_answer_example_string_field_with_number(tmp_path: Path) -> None:
    path = write_json(tmp_path / "q.json", [qv2("Q", "1", target_audience=5)])
    e = load_error(path)
    assert (e.where, e.field) == ("item 0", "expected.answer_example.target_audience")


def test_id_of_wrong_type_names_field_id(tmp_path: Path) -> None:
    path = write_json(tmp_path / "r.json", [{"id": True, "question": "Q"}])
    e = load_error(path)
    assert (e.where, e.field) == ("item 0", "id")


def test_duplicate_ids_name_first_occurrence(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "r.json",
        [{"id": "1", "question": "A"}, {"id": "2", "question": "B"}, {"id": 1, "question": "C"}],
    )
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 2", "id")
    assert "first at item 0" in str(e)


def test_duplicate_qid_names_field_qid(tmp_path: Path) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "A"), qa("1", "B")])
    e = load_error(path)
    assert (e.where, e.field) == ("item 1", "qid")


def test_duplicate_between_explicit_id_and_index_id(tmp_path: Path) -> None:
    # item 1 has no id and becomes "1", which item 0 already uses.
    path = write_json(tmp_path / "q.json", [qv2("A", "1"), qv2("B")])
    e = load_error(path)
    assert (e.where, e.field) == ("item 1", "id")
    assert "first at item 0" in str(e)


def test_mixed_formats_question_v2_then_qaset(tmp_path: Path) -> None:
    path = write_json(tmp_path / "mix.json", [qv2("Q1", "1"), qa("2", "Q2")])
    e = load_error(path)
    assert (e.file, e.where) == (str(path), "item 1")
    assert e.field is not None
    assert "one format per file" in str(e)


def test_mixed_formats_qaset_then_rag(tmp_path: Path) -> None:
    path = write_json(tmp_path / "mix.json", [qa("1", "Q1"), {"id": "2", "question": "Q2"}])
    e = load_error(path)
    assert (e.where, e.field) == ("item 1", "qid")
    assert "one format per file" in str(e)


def test_mixed_formats_rag_then_question_v2(tmp_path: Path) -> None:
    path = write_json(tmp_path / "mix.json", [{"id": "1", "question": "Q1"}, qv2("Q2", "2")])
    e = load_error(path)
    assert e.where == "item 1"
    assert "one format per file" in str(e)


def test_empty_question_text(tmp_path: Path) -> None:
    path = write_json(tmp_path / "r.json", [{"id": "1", "question": "Q"}, {"id": "2", "question": "   "}])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "item 1", "question")
    assert "empty" in str(e)


def test_empty_q_text_in_qaset_names_q(tmp_path: Path) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "")])
    e = load_error(path)
    assert (e.where, e.field) == ("item 0", "q")


def test_jsonl_bad_json_line_number_counts_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    path.write_text('{"id": "1", "question": "Q1"}\n\n{"id": "2", "question": \n', encoding="utf-8")
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "line 3", None)


def test_jsonl_bad_item_names_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rag.jsonl", [{"id": "1", "question": "Q1"}, {"id": "2"}])
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), "line 2", "question")


def test_jsonl_bad_item_line_number_counts_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    path.write_text('{"id": "1", "question": "Q1"}\n\n{"id": "2"}\n', encoding="utf-8")
    e = load_error(path)
    assert (e.where, e.field) == ("line 3", "question")


def test_jsonl_string_with_unicode_line_separator_loads(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rag.jsonl", [{"id": "1", "question": "first\u2028second"}])
    assert load_eval_file(path).cases[0].question == "first\u2028second"


def test_file_not_found(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    e = load_error(path)
    assert (e.file, e.where, e.field) == (str(path), None, None)
    assert "not found" in str(e)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"id": "1", "question": "café"}]'.encode("latin-1"))
    e = load_error(path)
    assert e.file == str(path)
    assert "UTF-8" in str(e)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_constant_in_json_names_item_and_field(tmp_path: Path, constant: str) -> None:
    path = tmp_path / "rag.json"
    path.write_text(
        '[{"id": "1", "question": "Q"}, {"id": "2", "question": "Q2", "metadata": {"w": [1, '
        f"{constant}]}}}}]",
        encoding="utf-8",
    )
    assert str(load_error(path)) == f"{path}: item 1: metadata.w[1]: {constant} is not a JSON number"


def test_non_finite_constant_in_jsonl_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    path.write_text(
        '{"id": "1", "question": "Q"}\n\n{"id": "2", "question": "Q2", "metadata": {"score": Infinity}}\n',
        encoding="utf-8",
    )
    assert str(load_error(path)) == f"{path}: line 3: metadata.score: Infinity is not a JSON number"


def test_non_finite_top_level_value_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text("NaN", encoding="utf-8")
    assert str(load_error(path)) == f"{path}: NaN is not a JSON number"


def test_deeply_nested_json_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    e = load_error(path)
    assert (e.file, e.problem) == (str(path), "not valid JSON: nested too deeply")


def test_deeply_nested_jsonl_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "1", "question": "Q"}\n' + "[" * 100_000 + "\n", encoding="utf-8")
    assert load_error(path).where == "line 2"


def test_directory_is_an_error_with_the_os_reason(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    path.mkdir()
    assert str(load_error(path)) == f"{path}: cannot read: Is a directory"


@pytest.mark.parametrize(
    "key", ["answer", "contexts", "retrieved_contexts", "chunks", "citations", "latency_ms"]
)
def test_predictions_file_given_as_eval_set_names_the_key(tmp_path: Path, key: str) -> None:
    path = write_jsonl(tmp_path / "preds.jsonl", [{"id": "1", "question": "Q", key: []}])
    e = load_error(path)
    assert (e.where, e.field) == ("line 1", key)
    assert "looks like a predictions file" in e.problem


def test_predictions_line_among_eval_items_names_its_item(tmp_path: Path) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "Q1"), {"qid": "2", "q": "Q2", "answer": "A"}])
    e = load_error(path)
    assert (e.where, e.field) == ("item 1", "answer")


def test_message_reads_file_where_field_problem(tmp_path: Path) -> None:
    path = write_json(tmp_path / "qa.json", [qa("1", "Q", answerable=1)])
    e = load_error(path)
    assert str(e).startswith(f"{path}: item 0: answerable: ")


# ---------------------------------------------------------------- merging files


def _v2_and_qaset(tmp_path: Path) -> tuple[Path, Path]:
    q = write_json(tmp_path / "questions.json", [qv2("Q1", "a1"), qv2("Q2", "a2")])
    g = write_json(
        tmp_path / "qaset.json", [qa("a1", "Q1", True, ["c1"]), qa("u1", "Q3", False), qa("a2", "Q2", True)]
    )
    return q, g


def test_merge_combines_sections_by_id(tmp_path: Path) -> None:
    es, _ = load_eval_set(list(_v2_and_qaset(tmp_path)))
    a1 = next(c for c in es.cases if c.id == "a1")
    assert a1.expected is not None and a1.gold is not None
    assert a1.gold.gold_ids == ["c1"]


def test_merge_adds_ids_only_in_second_file(tmp_path: Path) -> None:
    es, _ = load_eval_set(list(_v2_and_qaset(tmp_path)))
    assert [c.id for c in es.cases] == ["a1", "a2", "u1"]
    u1 = es.cases[2]
    assert u1.expected is None and u1.gold is not None and u1.gold.answerable is False


def test_merged_version_joins_file_versions(tmp_path: Path) -> None:
    es, loaded = load_eval_set(list(_v2_and_qaset(tmp_path)))
    assert es.version == "+".join(lf.file.version for lf in loaded)
    assert es.name == "questions"


def test_merge_question_mismatch_is_error(tmp_path: Path) -> None:
    q = write_json(tmp_path / "questions.json", [qv2("Q1", "a1")])
    g = write_json(tmp_path / "qaset.json", [qa("a1", "Q1 but different")])
    with pytest.raises(InputError) as ei:
        load_eval_set([q, g])
    e = ei.value
    assert (e.file, e.field) == (str(g), "question")
    assert e.where is not None and "a1" in e.where
    assert str(q) in str(e)


def test_merge_two_files_giving_gold_is_error(tmp_path: Path) -> None:
    g1 = write_json(tmp_path / "qaset1.json", [qa("a1", "Q1")])
    g2 = write_json(tmp_path / "qaset2.json", [qa("a1", "Q1", False)])
    with pytest.raises(InputError) as ei:
        load_eval_set([g1, g2])
    e = ei.value
    assert (e.file, e.field) == (str(g2), "gold")
    assert e.where is not None and "a1" in e.where


def test_merge_of_integer_and_string_ids(tmp_path: Path) -> None:
    q = write_json(tmp_path / "questions.json", [qv2("Q1", 1)])
    g = write_json(tmp_path / "qaset.json", [qa("1", "Q1")])
    es, _ = load_eval_set([q, g])
    assert len(es.cases) == 1 and es.cases[0].id == "1"
    assert es.cases[0].expected is not None and es.cases[0].gold is not None


# ------------------------------------------------------------------ ids MLflow can keep


@pytest.mark.parametrize("qid", ["", "   "])
def test_an_empty_id_is_bad_input_naming_the_item(tmp_path: Path, qid: str) -> None:
    e = load_error(write_json(tmp_path / "s.json", [qa("q1", "a?"), qa(qid, "b?")]))
    assert (e.where, e.field, e.problem) == ("item 1", "qid", "must not be empty")


def test_an_id_longer_than_mlflow_keeps_is_bad_input_naming_the_limit(tmp_path: Path) -> None:
    e = load_error(write_json(tmp_path / "s.json", [qv2("a?", cid="x" * (MAX_CASE_ID + 1))]))
    assert (e.where, e.field, f"at most {MAX_CASE_ID}" in e.problem) == ("item 0", "id", True)


def test_an_id_of_the_longest_length_loads(tmp_path: Path) -> None:
    cases = load_eval_file(write_json(tmp_path / "s.json", [qv2("a?", cid="x" * MAX_CASE_ID)])).cases
    assert [len(c.id) for c in cases] == [MAX_CASE_ID]


# ------------------------------------------------------------------ compressed files


def test_a_compressed_eval_file_loads_as_its_content(demo_files, tmp_path):
    import gzip

    packed = tmp_path / "questions.json.gz"
    packed.write_bytes(gzip.compress(demo_files["questions"].read_bytes()))
    plain, _ = load_eval_set([demo_files["questions"]])
    es, _ = load_eval_set([packed])
    assert (es.version, es.cases) == (plain.version, plain.cases)


def test_a_damaged_compressed_eval_file_is_one_error_naming_it(tmp_path):
    packed = tmp_path / "questions.json.gz"
    packed.write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(InputError, match=r"questions.json.gz: not a readable gzip file"):
        load_eval_file(packed)
