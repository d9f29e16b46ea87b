"""ragtrack against a team tracking server: `mlflow server` on PostgreSQL with artifacts in S3 (moto).

Real `ragtrack` processes log with `MLFLOW_TRACKING_URI=http://127.0.0.1:PORT`; the tests read
back params, metrics, dataset inputs, per-case traces and artifacts through MLflow, and the
artifacts as objects in the bucket. `compare`, `audit` and `rescore` run in-process on those runs.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any, cast

import pytest

from ragtrack.app.cli import main
from ragtrack.run.case_traces import RATIONALE_COLUMNS
from ragtrack.run.rescore import RESCORED_FROM_TAG
from ragtrack.tracking.reader import read_cases
from ragtrack.tracking.reaper import REAPED_TAG, reap_dead_runs
from ragtrack.tracking.traces import count_run_traces
from tests.processes import markers_at_least, run, start_slow, wait_for
from tests.server.stack import Target

ARCHIVE = {
    "report.md",
    "cases.parquet",
    "cases_table.json",
    "manifest.json",
    "config.yaml",
    "inputs/0/questions.json",
    "inputs/1/qaset.json",
    "prompt/v2.md",
    "predictions/lora_b__v2.jsonl",
}


@pytest.fixture(scope="module")
def single(plain: Target):
    """One `ragtrack run adapter=lora_b prompt=v2` logged to the server: (process, run)."""
    proc = run(
        ["run", "adapter=lora_b", "prompt=v2", "tracking.experiment=server-single"],
        **cast("dict[str, Any]", plain.env()),
    )
    assert proc.returncode == 0, proc.stderr
    (r,) = plain.runs("server-single")
    return proc, r


def test_run_finishes_on_the_server(single):
    assert single[1].info.status == "FINISHED"


def test_run_params_are_the_version_stamps(single):
    params = single[1].data.params
    assert (params["adapter_id"], params["prompt_version"], params["n_cases"]) == (
        "lumen/policy-qa-lora-b@v2",
        "v2",
        "52",
    )


def test_run_metrics_are_the_scores(single):
    metrics = single[1].data.metrics
    assert (round(metrics["eval_json_v2/eval_score_avg"], 2), metrics["gate/all"]) == (99.34, 1.0)


def test_run_metrics_are_linked_to_its_version_on_the_server(single, plain):
    _, r = single
    with plain.reading() as client:
        model = client.get_logged_model(r.data.tags["ragtrack.model_id"])
    assert model.name.startswith("Qwen2_5-7B-Instruct + lora_b · prompt v2") and any(
        m.run_id == r.info.run_id for m in model.metrics
    )


def test_run_prompt_is_a_version_in_the_servers_prompt_registry(single, plain):
    _, r = single
    with plain.reading() as client:
        (version,) = client.search_prompt_versions("server-single-prompt")
    assert r.data.tags["ragtrack.prompt_uri"] == version.uri == "prompts:/server-single-prompt/1"


def test_run_eval_set_is_an_evaluation_dataset_on_the_server(single, plain):
    _, r = single
    with plain.reading() as client:
        dataset = client.get_dataset(r.data.tags["ragtrack.eval_dataset_id"])
    assert dataset.name.startswith("questions@")


def test_run_eval_sets_are_dataset_inputs(single):
    inputs = {d.dataset.name: d.dataset.digest for d in single[1].inputs.dataset_inputs}
    assert sorted(inputs) == ["qaset", "questions"] and all(len(d) == 36 for d in inputs.values())


def test_run_artifacts_are_listed_by_mlflow(single, plain):
    assert plain.artifact_paths(single[1].info.run_id) >= ARCHIVE


def test_run_artifacts_are_objects_in_the_bucket(single, plain):
    r = single[1]
    assert plain.bucket_files(r) == plain.artifact_paths(r.info.run_id)


def _assessable_cells(frame) -> int:
    """The cells of a run's cases.parquet that `case_traces` turns into assessments: every cell of a column
    some case has a value in (one without a value says why), but an empty text."""
    cols = [c for c in frame.columns if "/" in c and c.rpartition("/")[2] not in RATIONALE_COLUMNS]
    valued = [c for c in cols if any(v is not None and v == v and v != "" for v in frame[c])]
    return sum(1 for c in valued for v in frame[c] if v != "")


def test_run_per_case_traces_and_their_assessments_are_on_the_server(single, plain):
    r = single[1]
    with plain.reading():
        counts = count_run_traces(plain.url, r.info.experiment_id, r.info.run_id)
        frame = read_cases(plain.url, r.info.run_id)
    assert counts.traces == len(frame) == 52 and counts.assessments == _assessable_cells(frame)


def _main(capsys, *args: str) -> str:
    """`ragtrack <args>` in-process, which must exit 0; its stdout."""
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_audit_of_a_server_run_passes_every_check(single, plain, capsys):
    out = _main(capsys, "audit", single[1].info.run_id, "--tracking-uri", plain.url)
    assert "all checks passed" in out and "re-derived bit for bit" in out


@pytest.fixture(scope="module")
def rescored(single, plain):
    """`ragtrack rescore` of the single run, on the server (a process: module fixtures have no capsys): the
    new run."""
    proc = run(["rescore", single[1].info.run_id], **plain.env())
    assert proc.returncode == 0, proc.stderr
    (new,) = [r for r in plain.runs("server-single") if r.data.tags.get(RESCORED_FROM_TAG)]
    return new


def test_rescore_lands_on_the_server_with_its_artifacts(rescored, single, plain):
    assert (rescored.info.status, rescored.data.tags[RESCORED_FROM_TAG]) == (
        "FINISHED",
        single[1].info.run_id,
    )
    assert (
        rescored.data.metrics["eval_json_v2/eval_score_avg"]
        == single[1].data.metrics["eval_json_v2/eval_score_avg"]
    )
    assert {"report.md", "cases.parquet", "manifest.json"} <= plain.bucket_files(rescored)


def test_compare_reads_both_runs_from_the_server(rescored, single, plain, capsys):
    out = _main(
        capsys, "compare", single[1].info.run_id, rescored.info.run_id, "--json", "--tracking-uri", plain.url
    )
    verdicts = {m["metric"]: m["verdict"] for m in json.loads(out)["metrics"]}
    assert verdicts["eval_json_v2/eval_score_avg"] == "no significant difference"


def test_sweep_children_finish_under_one_parent(plain):
    proc = run(["run", "-m", "adapter=base,lora_a", "tracking.experiment=server-sweep"], **plain.env())
    runs = plain.runs("server-sweep")
    (parent,) = [r for r in runs if r.data.tags["ragtrack.stage"] == "sweep"]
    children = [r for r in runs if r is not parent]
    assert proc.returncode == 0, proc.stderr
    assert {(r.info.status, r.data.tags["mlflow.parentRunId"]) for r in children} == {
        ("FINISHED", parent.info.run_id)
    }
    assert len(children) == 2 and parent.info.status == "FINISHED"


def test_staged_run_nests_dev_and_full_stages(plain):
    proc = run(
        ["run", "experiment=staged_demo", "adapter=lora_b", "prompt=v2", "tracking.experiment=server-staged"],
        **plain.env(),
    )
    runs = {r.data.tags["ragtrack.stage"]: r for r in plain.runs("server-staged")}
    assert proc.returncode == 0, proc.stderr
    assert sorted(runs) == ["dev", "full", "staged"]
    assert {runs[s].data.tags["mlflow.parentRunId"] for s in ("dev", "full")} == {runs["staged"].info.run_id}
    assert runs["dev"].data.params["n_cases"] == "20" and plain.bucket_files(runs["full"]) >= {
        "report.md",
        "manifest.json",
    }


def test_a_sigkilled_run_on_the_server_is_reaped_killed(plain, tmp_path):
    proc = start_slow(["run", "tracking.experiment=server-reap"], tmp_path / "started", **plain.env())
    wait_for(markers_at_least(tmp_path / "started"), what="the run to start")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with plain.reading() as client:
        reaped = reap_dead_runs(client)  # what the next ragtrack command on the server does first
    (r,) = plain.runs("server-reap")
    assert [x.run_id for x in reaped] == [r.info.run_id] and (r.info.status, r.data.tags[REAPED_TAG]) == (
        "KILLED",
        "true",
    )
