"""The sweep summary in the parent run, and sweep re-use, through real `ragtrack run -m` processes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import clone_store, sweep_overrides, write_demo_files
from tests.processes import run, runs

FN = "tests.generators.sample_fns"
M = "eval_json_v2/eval_score_avg"


def _summary(uri: str, parent_run_id: str, tmp: Path) -> pd.DataFrame:
    return pd.read_parquet(
        MlflowClient(uri).download_artifacts(parent_run_id, "sweep_summary.parquet", str(tmp))
    )


@pytest.fixture(scope="module")
def failing_sweep(tmp_path_factory, _migrated_store):
    """Six demo jobs, the last of which raises: (uri, parent run, child runs, summary frame, process)."""
    root = tmp_path_factory.mktemp("failing_sweep")
    uri = clone_store(_migrated_store, root)
    targets = ",".join([f"{FN}:echo"] * 5 + [f"{FN}:broken"])
    proc = run(
        [
            "run",
            "-m",
            "generator=callable",
            f"generator.params.target={targets}",
            f"tracking.uri={uri}",
            "tracking.traces_max_cases=0",
        ]
    )  # traces are not what this sweep tests
    (parent,) = [r for r in runs(uri) if r.data.tags["ragtrack.stage"] == "sweep"]
    children = [r for r in runs(uri) if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    return uri, parent, children, _summary(uri, parent.info.run_id, root), proc


def test_parent_of_a_sweep_with_a_failed_job_ends_failed(failing_sweep):
    _, parent, _, _, proc = failing_sweep
    assert (proc.returncode, parent.info.status) == (1, "FAILED")


def test_summary_lists_the_failed_job_with_its_error(failing_sweep):
    *_, frame, _ = failing_sweep
    failed = frame[frame["status"] == "FAILED"]
    assert list(failed["job"]) == [5] and "model server said no" in failed["error"].iloc[0]


def test_summary_has_the_five_finished_jobs_with_intervals(failing_sweep):
    _, _, children, frame, _ = failing_sweep
    done = frame[frame["status"] == "FINISHED"]
    finished_runs = {r.info.run_id for r in children if r.info.status == "FINISHED"}
    assert set(done["run_id"]) == finished_runs and len(finished_runs) == 5
    assert (
        (done[f"{M}/ci_low"] <= done[M]).all()
        and (done[M] <= done[f"{M}/ci_high"]).all()
        and (done["n_cases"] == 44).all()
    )


def test_five_jobs_with_the_same_answers_are_tied_and_no_best_is_named(failing_sweep):
    _, parent, children, frame, _ = failing_sweep
    finished = {r.info.run_id for r in children if r.info.status == "FINISHED"}
    tags = parent.data.tags
    assert (tags["ragtrack.sweep_verdict"], "ragtrack.best_run_id" in tags, frame["best"].any()) == (
        "tied",
        False,
        False,
    )
    assert set(tags["ragtrack.tied_run_ids"].split(",")) == finished


def test_the_parent_copies_no_child_metric(failing_sweep):
    _, parent, *_ = failing_sweep
    assert sorted(parent.data.metrics) == ["sweep/n_failed", "sweep/n_jobs", "sweep/n_reused"]


def test_parent_has_the_markdown_table_and_the_chart(failing_sweep, tmp_path):
    uri, parent, *_ = failing_sweep
    client = MlflowClient(uri)
    md = Path(client.download_artifacts(parent.info.run_id, "sweep_summary.md", str(tmp_path))).read_text(
        encoding="utf-8"
    )
    png = Path(client.download_artifacts(parent.info.run_id, "sweep_summary.png", str(tmp_path))).read_bytes()
    assert md.count("| FINISHED |") == 5 and "| FAILED: " in md and png.startswith(b"\x89PNG")


@pytest.fixture(scope="module")
def repeated_sweep(tmp_path_factory, _migrated_store):
    """The same two-job sweep twice: (uri, runs after each sweep). `tracking.force`: tests/test_jobkey.py."""
    root = tmp_path_factory.mktemp("repeated_sweep")
    files = write_demo_files(root)
    clone_store(_migrated_store, root)
    args = ["run", "-m", "adapter=base,lora_a", *sweep_overrides(files)]
    uri = f"sqlite:///{root / 'mlflow.db'}"
    after = []
    for _ in range(2):
        proc = run(args, cwd=root)
        assert proc.returncode == 0, proc.stderr
        after.append(runs(uri))
    return uri, after


def _jobs(rs) -> set[str]:
    return {r.info.run_id for r in rs if r.data.tags["ragtrack.stage"] != "sweep"}


def test_identical_sweep_creates_no_new_job_runs(repeated_sweep):
    _, (first, second) = repeated_sweep
    assert _jobs(second) == _jobs(first) and len(_jobs(first)) == 2


def test_rerun_summary_links_the_reused_runs(repeated_sweep, tmp_path):
    uri, (first, second) = repeated_sweep
    (parent,) = [
        r
        for r in second
        if r.data.tags["ragtrack.stage"] == "sweep" and r.info.run_id not in {x.info.run_id for x in first}
    ]
    frame = _summary(uri, parent.info.run_id, tmp_path)
    assert (
        set(frame["run_id"]) == _jobs(first)
        and frame["reused"].all()
        and parent.data.metrics["sweep/n_reused"] == 2
    )


def test_secret_in_a_failed_jobs_error_is_masked_in_the_summary(fresh_store, tmp_path):
    from ragtrack.analysis.summary import SweepJob
    from ragtrack.inputs.config import TrackingConfig
    from ragtrack.tracking import start_sweep_parent
    from ragtrack.tracking.sweep_summary import log_sweep_summary

    secret = "sk-test-9f8e7d6c5b4a3f2e1d0c"
    parent = start_sweep_parent(fresh_store, "sweep-test", "sweep", {})
    job = SweepJob(
        index=0, overrides=["adapter=base"], status="FAILED", error=f"RuntimeError: rejected key {secret}"
    )
    log_sweep_summary(fresh_store, parent, [job], TrackingConfig(), ["eval_json_v2"])
    frame = _summary(fresh_store, parent, tmp_path)
    assert secret not in frame["error"].iloc[0] and "rejected key" in frame["error"].iloc[0]


def test_the_compare_link_opens_the_finished_jobs_side_by_side(failing_sweep):
    from urllib.parse import unquote

    from ragtrack.analysis.summary import SweepJob, summarize
    from ragtrack.tracking.sweep_summary import compare_link
    from ragtrack.tracking.ui_links import UI

    uri, parent, children, *_ = failing_sweep
    jobs = [
        SweepJob(index=i, overrides=[f"x={i}"], status=r.info.status, run_id=r.info.run_id)
        for i, r in enumerate(children)
    ]
    link = unquote(compare_link(uri, parent.info.run_id, summarize(jobs, {}, M, n_resamples=10)))
    finished = sorted(r.info.run_id for r in children if r.info.status == "FINISHED")
    assert (
        link.startswith(f"{UI}/#/compare-runs?runs=[")
        and sorted(link.split("runs=")[1].split("&")[0][1:-1].replace('"', "").split(",")) == finished
    )
