"""Predictions JSONL (SPEC §6): validation, streaming match to cases, and the dev-subset filter."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase, Generation
from ragtrack.inputs.predictions import (
    UNMATCHED_KEYS_LIMIT,
    PredictionRecord,
    filter_prediction_file,
    match_prediction_file,
    parse_prediction,
)

CASES = [
    EvalCase(id="1", question="What is the refund period?"),
    EvalCase(id="2", question="Who founded Lumen?"),
    EvalCase(id="3", question="What uptime is guaranteed?"),
]


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def match(tmp_path: Path, rows: list[Any], **kw: Any) -> Generation:
    return match_prediction_file(write_lines(tmp_path / "preds.jsonl", rows), CASES, **kw)


def answers(gen: Generation) -> dict[str, str]:
    return {p.case_id: p.answer for p in gen.predictions}


def one(obj: Any) -> PredictionRecord:
    return parse_prediction(obj, "preds.jsonl", "line 1")


def file_error(path: Path) -> InputError:
    with pytest.raises(InputError) as ei:
        match_prediction_file(path, CASES)
    assert ei.value.file == str(path)
    return ei.value


def load_error(tmp_path: Path, rows: list[Any]) -> InputError:
    return file_error(write_lines(tmp_path / "preds.jsonl", rows))


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


def test_every_prediction_carries_its_case_id(tmp_path: Path) -> None:
    # Matched by a string id, by an integer id, and by question text: each gets the id of the case it matched.
    rows = [{"id": "1", "answer": "A"}, {"id": 2, "answer": "B"}, {"q": CASES[2].question, "answer": "C"}]
    gen = match(tmp_path, rows)
    assert [(p.case_id, p.answer) for p in gen.predictions] == [("1", "A"), ("2", "B"), ("3", "C")]


def test_q_takes_precedence_over_question(tmp_path: Path) -> None:
    # As the seed's reference scorer: p.get("q") or p.get("question").
    gen = match(
        tmp_path, [{"q": "Who founded Lumen?", "question": "What uptime is guaranteed?", "answer": "B"}]
    )
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
    gen = match(
        tmp_path, [{"id": "1", "answer": "first"}, {"q": "What is the refund period?", "answer": "second"}]
    )
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
    c = one({"id": "1", "answer": "", "contexts": [{"text": "T", "id": 4}]}).prediction.contexts[0]
    assert c.id == "4"


def test_a_context_keeps_its_retriever_score() -> None:
    c = one(
        {"id": "1", "answer": "", "contexts": [{"text": "T", "score": 2.5}, {"text": "U"}]}
    ).prediction.contexts
    assert [x.score for x in c] == [2.5, None]


def test_citations_items_converted_with_str() -> None:
    assert one({"id": "1", "answer": "a", "citations": [1, "c2"]}).prediction.citations == ["1", "c2"]


@pytest.mark.parametrize("value", ["c1", {"a": 1}, 3])
def test_non_list_citations_treated_as_absent(value: Any) -> None:
    assert one({"id": "1", "answer": "a", "citations": value}).prediction.citations is None


def test_empty_answer_is_kept() -> None:
    assert one({"id": "1", "answer": ""}).prediction.answer == ""


def test_latency_and_usage_kept() -> None:
    p = one({"id": "1", "answer": "a", "latency_ms": 12.5, "usage": {"tokens": 3}}).prediction
    assert (p.latency_ms, p.usage) == (12.5, {"tokens": 3})


def test_blank_lines_ignored(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "1", "answer": "A"}, "", "   ", {"id": "2", "answer": "B"}])
    assert (answers(gen)["1"], answers(gen)["2"], gen.n_unmatched) == ("A", "B", 0)


def test_answer_with_unicode_line_separator_loads(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "1", "answer": "line one\u2028line two"}])
    assert answers(gen)["1"] == "line one\u2028line two"


# ---------------------------------------------------------------- errors


def test_invalid_json_line(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A"}, "", '{"id": "2", "answer": '])
    assert (e.where, e.field) == ("line 3", None)
    assert "not valid JSON" in str(e)


def test_line_not_an_object(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": ""}, ["id", "2"]])
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


def test_context_score_not_a_number(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A", "contexts": [{"text": "T", "score": "high"}]}])
    assert (e.where, e.field) == ("line 1", "contexts[0].score")


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
    assert "not found" in str(file_error(tmp_path / "nope.jsonl"))


def test_null_answer_is_an_error_naming_the_field(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A"}, {"id": "2", "answer": None}])
    assert (e.where, e.field) == ("line 2", "answer")
    assert str(e) == f'{e.file}: line 2: answer: null; a recorded empty answer is ""'


def test_missing_answer_is_an_error_naming_the_field(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "contexts": []}])
    assert str(e) == f'{e.file}: line 1: answer: missing; a recorded empty answer is ""'


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_constant_names_line_and_field(tmp_path: Path, constant: str) -> None:
    e = load_error(
        tmp_path, [{"id": "1", "answer": "A"}, "", f'{{"id": "3", "answer": "C", "latency_ms": {constant}}}']
    )
    assert str(e) == f"{e.file}: line 3: latency_ms: {constant} is not a JSON number"


def test_non_finite_constant_deep_in_a_line_names_its_path(tmp_path: Path) -> None:
    e = load_error(
        tmp_path, ['{"id": "1", "answer": "A", "contexts": [{"text": "t"}, {"text": "u", "score": NaN}]}']
    )
    assert (e.where, e.field) == ("line 1", "contexts[1].score")


def test_number_too_large_for_a_float_is_an_error(tmp_path: Path) -> None:
    e = load_error(tmp_path, ['{"id": "1", "answer": "A", "usage": {"tokens": 1e400}}'])
    assert (e.where, e.field) == ("line 1", "usage.tokens")
    assert "1e400" in e.problem


def test_deeply_nested_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    e = load_error(tmp_path, [{"id": "1", "answer": "A"}, "[" * 100_000])
    assert e.where == "line 2" and "nested too deeply" in e.problem


def test_directory_is_an_error_with_the_os_reason(tmp_path: Path) -> None:
    assert str(file_error(tmp_path)) == f"{tmp_path}: cannot read: Is a directory"


def test_byte_order_mark_on_first_line_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "1", "answer": "A"}).encode() + b"\n")
    assert answers(match_prediction_file(path, CASES))["1"] == "A"


def test_invalid_utf8_names_line_and_file_byte(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'{"id": "1", "answer": "A"}\n{"id": "2", "answer": "\xff"}\n')
    e = file_error(path)
    assert (e.where, e.problem) == ("line 2", "not UTF-8 text (byte 50)")


def test_bad_line_after_every_case_matched_is_still_an_error(tmp_path: Path) -> None:
    rows = [{"id": c.id, "answer": "x"} for c in CASES] + [{"id": "9", "answer": 1}]
    assert load_error(tmp_path, rows).where == "line 4"


def test_only_carriage_return_is_not_a_line_end(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'{"id": "1", "answer": "A"}\r{"id": "2", "answer": "B"}\n')
    assert "not valid JSON" in str(file_error(path))


# ---------------------------------------------------------------- empty files


@pytest.mark.parametrize("content", ["", "\n  \n\n"])
def test_empty_file_is_accepted_with_a_warning(tmp_path: Path, content: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(content, encoding="utf-8")
    gen = match_prediction_file(path, CASES)
    assert gen.warnings == [f"{path}: no predictions: every case is scored as missing"]


def test_empty_file_scores_every_case_as_missing(tmp_path: Path) -> None:
    gen = match(tmp_path, [])
    assert (gen.n_missing, gen.missing_ids) == (3, ["1", "2", "3"])


def test_file_with_predictions_has_no_warning(tmp_path: Path) -> None:
    assert match(tmp_path, [{"id": "zz", "answer": ""}]).warnings == []


# ---------------------------------------------------------------- streaming record


def test_provenance_is_the_sha1_of_the_file_bytes(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "preds.jsonl", [{"id": "1", "answer": "A"}, "", {"id": "zz", "answer": "B"}]
    )
    gen = match_prediction_file(path, CASES)
    assert gen.provenance == {"predictions_sha1": hashlib.sha1(path.read_bytes()).hexdigest()}


def test_missing_ids_in_case_order(tmp_path: Path) -> None:
    assert match(tmp_path, [{"id": "2", "answer": "B"}]).missing_ids == ["1", "3"]


def test_unmatched_keys_capped_and_all_counted(tmp_path: Path) -> None:
    n = UNMATCHED_KEYS_LIMIT + 7
    gen = match(tmp_path, [{"id": f"u{i}", "answer": ""} for i in range(n)])
    assert (gen.n_unmatched, len(gen.unmatched_keys), gen.unmatched_keys_omitted) == (
        n,
        UNMATCHED_KEYS_LIMIT,
        7,
    )


def test_unmatched_keys_keep_the_first_ones(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": f"u{i}", "answer": ""} for i in range(UNMATCHED_KEYS_LIMIT + 1)])
    assert gen.unmatched_keys[-1] == f"u{UNMATCHED_KEYS_LIMIT - 1}"


def test_long_unmatched_question_is_listed_cut(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"q": "x" * 10_000, "answer": ""}])
    assert len(gen.unmatched_keys[0]) < 200


# ---------------------------------------------------------------- keep (the dev subset)


def test_keep_gives_predictions_only_for_kept_cases(tmp_path: Path) -> None:
    gen = match(tmp_path, [{"id": "1", "answer": "A"}, {"id": "2", "answer": "B"}], keep={"2", "3"})
    assert ([p.case_id for p in gen.predictions], gen.missing_ids) == (["2", "3"], ["3"])


def test_prediction_outside_keep_is_counted_apart_not_unmatched(tmp_path: Path) -> None:
    gen = match(
        tmp_path,
        [{"id": "1", "answer": "A"}, {"q": "Who founded Lumen?", "answer": "B"}, {"id": "zz", "answer": ""}],
        keep={"3"},
    )
    assert (gen.n_outside_subset, gen.n_unmatched) == (2, 1)


def test_duplicates_counted_only_for_kept_cases(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "answer": "a"},
        {"id": "1", "answer": "b"},
        {"id": "2", "answer": "c"},
        {"id": "2", "answer": "d"},
    ]
    gen = match(tmp_path, rows, keep={"2"})
    assert (gen.duplicates_dropped, answers(gen)) == (1, {"2": "d"})


# ---------------------------------------------------------------- filter_prediction_file

FILTER_ROWS = [
    {"id": "1", "answer": "outside"},
    {"id": "2", "answer": "first"},
    "",
    {"q": "Who founded Lumen?", "answer": "second, by text"},
    {"id": "zz", "answer": "unmatched by id"},
    {"question": "Not in the set?", "answer": "unmatched by text \u2028 raw"},
    {"q": "What is the refund period?", "answer": "outside again"},
]


def _counts(gen: Generation) -> tuple[Any, ...]:
    return (
        gen.n_missing,
        gen.missing_ids,
        gen.n_unmatched,
        gen.unmatched_keys,
        gen.duplicates_dropped,
        [p.model_dump() for p in gen.predictions],
    )


def test_filtered_file_scores_like_the_dev_stage(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "src.jsonl", FILTER_ROWS)
    keep = {"2", "3"}
    dev = match_prediction_file(src, CASES, keep=keep)
    dst = tmp_path / "dst.jsonl"
    filter_prediction_file(src, dst, CASES, keep, dev.provenance["predictions_sha1"])
    subset = [c for c in CASES if c.id in keep]
    assert _counts(match_prediction_file(dst, subset)) == _counts(dev)


def test_filtered_file_copies_lines_byte_for_byte(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "src.jsonl", FILTER_ROWS)
    dst = tmp_path / "dst.jsonl"
    filter_prediction_file(src, dst, CASES, {"2", "3"}, hashlib.sha1(src.read_bytes()).hexdigest())
    lines = src.read_bytes().split(b"\n")
    assert dst.read_bytes() == b"".join(lines[i] + b"\n" for i in (1, 3, 4, 5))


def test_filter_refuses_a_changed_source(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "src.jsonl", FILTER_ROWS)
    with pytest.raises(InputError, match="changed during the run") as ei:
        filter_prediction_file(src, tmp_path / "dst.jsonl", CASES, {"2"}, "0" * 40)
    assert ei.value.file == str(src)


def test_filter_of_a_changed_source_writes_nothing(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "src.jsonl", FILTER_ROWS)
    with pytest.raises(InputError):
        filter_prediction_file(src, tmp_path / "dst.jsonl", CASES, {"2"}, "0" * 40)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.jsonl"]


# ---------------------------------------------------------------- memory

MEMORY_PROBE = """
import resource, sys
from ragtrack.inputs.predictions import match_prediction_file
from ragtrack.core.types import EvalCase
cases = [EvalCase(id=f"c{i}", question=f"Question {i}?") for i in range(5)]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
gen = match_prediction_file(sys.argv[1], cases)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after, gen.n_unmatched, gen.duplicates_dropped)
"""


def test_memory_stays_bounded_by_the_eval_set_not_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    answer = "长答案 long answer " * 120
    contexts = [{"source_path": f"doc{k}.md", "text": "context text " * 40} for k in range(4)]
    n = 0
    with path.open("w", encoding="utf-8") as f:
        while f.tell() < 60_000_000:
            f.write(
                json.dumps({"id": f"c{n % 40}", "answer": answer, "contexts": contexts}, ensure_ascii=False)
                + "\n"
            )
            n += 1
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path)], capture_output=True, text=True, check=True
    )
    before_kb, after_kb, n_unmatched, duplicates = map(int, proc.stdout.split())
    assert (n_unmatched, duplicates) == (n - n // 40 * 5 - min(n % 40, 5), n // 40 * 5 + min(n % 40, 5) - 5)
    assert after_kb - before_kb < 40_000, f"peak grew by {(after_kb - before_kb) // 1024} MB on a 60 MB file"


# ---------------------------------------------------------------- the shipped demo

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo"


@pytest.mark.parametrize("path", sorted((DEMO / "predictions").glob("*.jsonl")), ids=lambda p: p.stem)
def test_demo_predictions_still_load(path: Path) -> None:
    from ragtrack.inputs.eval_sets import load_eval_set

    es, _ = load_eval_set([DEMO / "questions.json", DEMO / "qaset.json"])
    gen = match_prediction_file(path, es.cases)
    assert gen.n_missing <= 1 and gen.warnings == []  # base__v1 leaves one case out on purpose


def test_a_compressed_predictions_file_matches_as_its_content(demo_files, tmp_path):
    import gzip

    from ragtrack.inputs.eval_sets import load_eval_set
    from ragtrack.inputs.predictions import match_prediction_file

    packed = tmp_path / "good.jsonl.gz"
    packed.write_bytes(gzip.compress(demo_files["good"].read_bytes()))
    es, _ = load_eval_set([demo_files["questions"], demo_files["qaset"]])
    plain, gz = match_prediction_file(demo_files["good"], es.cases), match_prediction_file(packed, es.cases)
    assert (gz.predictions, gz.provenance["predictions_sha1"]) == (
        plain.predictions,
        plain.provenance["predictions_sha1"],
    )
