"""The run's Markdown report: who it is about, what was missing, why cases lost points."""

from __future__ import annotations

import json

from ragtrack.run.report import render_report
from ragtrack.run.runner import run
from tests.conftest import make_config, write_jsonl


def test_title_names_the_base_model_when_there_is_no_adapter(demo_files):
    result = run(make_config(demo_files, adapter={"name": "base", "id": "none"}))
    assert (
        render_report(result).splitlines()[0]
        == "# ragtrack report: Qwen/Qwen2.5-7B-Instruct (no adapter) · prompt v1 · full"
    )


def test_missing_and_unmatched_predictions_are_listed_by_id(demo_files):
    text = render_report(run(make_config(demo_files, predictions="bad")))
    assert "scored as empty answers): `a2`" in text and "match no case: `zz`" in text


def test_lowest_cases_name_the_subscores_that_lost_points(demo_files):
    text = render_report(run(make_config(demo_files, predictions="bad")))
    row = next(line for line in text.splitlines() if line.startswith("| a1 |"))
    assert "schema: " in row  # a1's answer has prose before the JSON


def test_reason_lists_subscores_by_points_lost(demo_files):
    good = [json.loads(line) for line in demo_files["good"].read_text(encoding="utf-8").splitlines()]
    obj = json.loads(good[0]["answer"])
    obj["sub_topic"] = "完全不同的主题"
    good[0]["answer"] = json.dumps(obj, ensure_ascii=False)
    write_jsonl(demo_files["good"], good)
    text = render_report(run(make_config(demo_files)))
    row = next(line for line in text.splitlines() if line.startswith("| a1 |"))
    assert "sub_topic 0 (-10.0)" in row


def _table(n: int) -> str:
    return "\n".join(
        ["## s", "", "| id | x |", "|---|---|", *(f"| c{i} | {i} |" for i in range(n)), "", "after"]
    )


def test_a_long_per_case_table_is_cut_saying_how_many_rows_are_not_shown():
    from ragtrack.run.report import capped_tables

    lines = capped_tables(_table(12), limit=10).splitlines()
    assert lines[4:14] == [f"| c{i} | {i} |" for i in range(10)]
    assert (
        "… and 2 more rows, not shown here: every case's row is in `cases.parquet`." in lines
        and lines[-1] == "after"
    )


def test_a_table_within_the_limit_is_unchanged():
    from ragtrack.run.report import capped_tables

    assert capped_tables(_table(10), limit=10) == _table(10)
