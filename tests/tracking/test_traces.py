"""Per-case traces in a real SQLite store: every trace and assessment of a 200-case run is counted back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracing.client import TracingClient
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import execute
from ragtrack.inputs.config import RunConfig
from ragtrack.inputs.eval_sets import MAX_CASE_ID
from ragtrack.tracking.traces import CASE_ID_KEY, count_run_traces, request_preview
from tests.conftest import ANSWER_EXAMPLES, clone_store, write_jsonl

N = 200


def _files(root: Path, n: int = N, id_width: int = 3) -> dict[str, Path]:
    """`n` question_v2 cases (the two fixture examples, repeated); every third answer is not JSON."""
    questions, preds = [], []
    for i in range(n):
        ex = ANSWER_EXAMPLES["a1" if i % 2 else "a2"]
        cid = f"c{i:0{id_width}d}"
        questions.append(
            {
                "id": cid,
                "question": f"{ex['question']} #{i}",
                "expected": {"answer_example": ex["answer_example"], "source_map": []},
            }
        )
        answer = "no JSON here" if i % 3 == 0 else json.dumps(ex["answer_example"], ensure_ascii=False)
        preds.append(
            {"id": cid, "answer": answer, "contexts": [{"source_path": ex["file"], "text": ex["chunk"]}]}
        )
    (root / "questions.json").write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    write_jsonl(root / "preds.jsonl", preds)
    (root / "prompt.md").write_text("Answer in JSON.\n", encoding="utf-8")
    (root / "chunks.jsonl").write_text("{}\n", encoding="utf-8")
    return {p.stem: p for p in root.iterdir()}


def _config(root: Path, n: int = N, id_width: int = 3, **tracking) -> RunConfig:
    files = _files(root, n, id_width)
    return RunConfig.from_container(
        {
            "model": {"id": "m"},
            "adapter": {"name": "a", "id": "a@1"},
            "index": {"name": "i", "path": str(files["chunks"])},
            "prompt": {"version": "v1", "path": str(files["prompt"])},
            "eval_set": {"name": "big", "files": [str(files["questions"])]},
            "generator": {"name": "replay", "params": {"path": str(files["preds"])}},
            "scorers": {"eval_json_v2": {}},
            "tracking": {"uri": f"sqlite:///{root / 'mlflow.db'}", "experiment": "traces", **tracking},
        }
    )


@pytest.fixture(scope="module")
def traced(tmp_path_factory, _migrated_store):
    """A tracked 200-case run: (uri, experiment id, run id, result)."""
    root = tmp_path_factory.mktemp("traces")
    clone_store(_migrated_store, root)
    cfg = _config(root)
    (result,) = execute(cfg)
    return (cfg.tracking.uri, *_run(cfg), result)


def _run(cfg: RunConfig) -> tuple[str, str]:
    """(experiment id, run id) of the one run in the config's experiment."""
    client = MlflowClient(cfg.tracking.uri)
    experiment = client.get_experiment_by_name(cfg.tracking.experiment)
    assert experiment is not None
    exp = experiment.experiment_id
    (run,) = client.search_runs([exp])
    return exp, run.info.run_id


def test_every_trace_and_assessment_is_read_back(traced):
    uri, exp, run_id, result = traced
    columns = [
        v
        for out in result.outputs
        for cs in out.cases
        for k, v in cs.values.items()
        if v is not None and not k.endswith("/error")
    ]
    assert count_run_traces(uri, exp, run_id).model_dump() == {"traces": N, "assessments": len(columns)}


def test_trace_carries_the_case_question_answer_and_run(traced):
    uri, exp, run_id, result = traced
    (trace,) = TracingClient(uri).search_traces(
        locations=[exp], run_id=run_id, filter_string="trace.client_request_id = 'c003'"
    )
    case = next(c for c in result.eval_set.cases if c.id == "c003")
    assert trace.info.trace_metadata[CASE_ID_KEY] == "c003" and trace.info.request_preview == request_preview(
        case.question
    )
    assert trace.data.spans[0].outputs == "no JSON here"


def test_assessment_is_linked_to_the_run_with_the_scorer_error_as_rationale(traced):
    uri, exp, run_id, _ = traced
    (trace,) = TracingClient(uri).search_traces(
        locations=[exp], run_id=run_id, filter_string="trace.client_request_id = 'c003'"
    )
    score = next(a for a in trace.info.assessments if a.name == "eval_json_v2/score")
    assert (score.value, score.metadata["mlflow.assessment.sourceRunId"]) == (0.0, run_id)
    assert score.rationale.startswith("not JSON")


def test_above_the_limit_no_traces_and_the_report_says_so(tmp_path, fresh_store):
    cfg = _config(tmp_path, traces_max_cases=N - 1)
    execute(cfg)
    exp, run_id = _run(cfg)
    report = Path(
        MlflowClient(cfg.tracking.uri).download_artifacts(run_id, "report.md", str(tmp_path))
    ).read_text()
    assert count_run_traces(cfg.tracking.uri, exp, run_id).traces == 0
    assert f"Not logged: {N} cases > tracking.traces_max_cases={N - 1}" in report


def test_cases_with_the_longest_ids_are_all_traced(tmp_path, fresh_store):
    cfg = _config(tmp_path, n=3, id_width=MAX_CASE_ID - 1)
    execute(cfg)
    exp, run_id = _run(cfg)
    traces = TracingClient(cfg.tracking.uri).search_traces(locations=[exp], run_id=run_id)
    assert sorted(len(t.info.trace_metadata[CASE_ID_KEY]) for t in traces) == [MAX_CASE_ID] * 3
