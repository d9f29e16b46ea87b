"""The sweep summary, logged into the sweep's parent run when the sweep ends (see
`ragtrack.analysis.summary`).

Each job's run is the one its task returned (for a reused job, the earlier run), else the
parent's child tagged with its job number (`ragtrack.sweep_job`; a failed job's run). Its
per-case terms come from its `cases.parquet` (a staged job's: the furthest stage's run).
The parent gets `sweep_summary.parquet`, `sweep_summary.md` and `sweep_summary.png`, the
counts `sweep/n_jobs|n_failed|n_reused` (its own metrics: it copies no child's, which would
chart as one more bar), and the tags `ragtrack.headline_metric`, `ragtrack.sweep_verdict`
(`best`, `tied` or `none`) with its sentence (`ragtrack.sweep_verdict_text`), and
`ragtrack.best_run_id` when one job beats every other significantly, else
`ragtrack.tied_run_ids` (see `ragtrack.analysis.summary`: who won).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from mlflow.entities import Metric, Run, RunTag
from mlflow.tracking import MlflowClient

from ragtrack.analysis.summary import (
    JobScores,
    SweepJob,
    SweepSummary,
    headline_metric,
    headline_terms,
    plot_summary,
    render_summary,
    summarize,
    summary_frame,
    verdict,
)
from ragtrack.core.errors import InputError
from ragtrack.core.redact import redact_text
from ragtrack.inputs.config import TrackingConfig
from ragtrack.tracking.reader import read_cases
from ragtrack.tracking.search import all_runs
from ragtrack.tracking.session import connect
from ragtrack.tracking.ui_links import compare_runs_link

__all__ = [
    "BEST_RUN_TAG",
    "SWEEP_JOB_TAG",
    "TIED_RUNS_TAG",
    "VERDICT_TAG",
    "compare_link",
    "log_sweep_summary",
]

BEST_RUN_TAG = "ragtrack.best_run_id"  # only when that job beats every other significantly
VERDICT_TAG = "ragtrack.sweep_verdict"  # best | tied | none
TIED_RUNS_TAG = "ragtrack.tied_run_ids"  # the top job and those it does not beat, comma-separated
MAX_TAG = 8000
SWEEP_JOB_TAG = "ragtrack.sweep_job"  # a sweep child's job number (set by the Hydra task)


def _children_by_job(client: MlflowClient, experiment_id: str, parent_run_id: str) -> dict[str, Run]:
    children = all_runs(client, [experiment_id], f"tags.`mlflow.parentRunId` = '{parent_run_id}'")
    return {c.data.tags[SWEEP_JOB_TAG]: c for c in children if SWEEP_JOB_TAG in c.data.tags}


def _scored_run(client: MlflowClient, run: Run) -> Run:
    """The run holding the job's per-case table: a staged job's furthest stage, else the run itself."""
    if run.data.tags.get("ragtrack.stage") != "staged":
        return run
    reached = run.data.tags.get("ragtrack.reached_stage", "")
    stages = client.search_runs(
        [run.info.experiment_id],
        filter_string=(
            f"tags.`mlflow.parentRunId` = '{run.info.run_id}' and tags.`ragtrack.stage` = '{reached}'"
        ),
    )
    return stages[0] if stages else run


def _scores(uri: str, client: MlflowClient, run: Run, metric: str, finished: bool) -> JobScores:
    """The job's metrics and, when it finished, the headline metric's per-case terms with their case ids,
    from its per-case table (none when the run has no table: not ragtrack's)."""
    if not finished:
        return JobScores(metrics=run.data.metrics)
    try:
        frame = read_cases(uri, _scored_run(client, run).info.run_id)
    except InputError:
        return JobScores(metrics=run.data.metrics)
    terms = headline_terms(metric, {c: frame[c].tolist() for c in frame.columns})
    return JobScores(
        metrics=run.data.metrics, terms=terms, case_ids=[str(i) for i in frame["id"]] if terms else None
    )


def log_sweep_summary(
    uri: str, parent_run_id: str, jobs: Sequence[SweepJob], settings: TrackingConfig, scorers: Sequence[str]
) -> SweepSummary:
    """Summarise the sweep's jobs into its parent run (a sweep whose jobs all failed too: they are listed)."""
    client = connect(uri)
    experiment_id = client.get_run(parent_run_id).info.experiment_id
    children = _children_by_job(client, experiment_id, parent_run_id)
    resolved: list[SweepJob] = []
    runs: dict[int, Run] = {}
    for job in jobs:
        job = job.model_copy(update={"error": redact_text(job.error) if job.error else None})
        run = client.get_run(job.run_id) if job.run_id else children.get(str(job.index))
        if run is not None:
            runs[job.index] = run
            job = job.model_copy(
                update={
                    "run_id": run.info.run_id,
                    "run_name": run.info.run_name,
                    "status": run.info.status if job.status == "FINISHED" else job.status,
                    "stage": run.data.tags.get("ragtrack.reached_stage"),
                }
            )
        resolved.append(job)
    finished = [runs[j.index].data.metrics for j in resolved if j.index in runs and j.status == "FINISHED"]
    metric = headline_metric(settings.headline_metric, scorers, finished)
    scores = {
        j.index: _scores(uri, client, runs[j.index], metric, j.status == "FINISHED")
        for j in resolved
        if j.index in runs
    }
    summary = summarize(
        resolved, scores, metric, seed=settings.bootstrap_seed, n_resamples=settings.bootstrap_resamples
    )
    out = Path(tempfile.mkdtemp(prefix="ragtrack-sweep-"))
    try:
        summary_frame(summary).to_parquet(out / "sweep_summary.parquet", index=False)
        (out / "sweep_summary.md").write_text(
            redact_text(render_summary(summary, parent_run_id)), encoding="utf-8"
        )
        plot_summary(summary, out / "sweep_summary.png")
        client.log_artifacts(parent_run_id, str(out))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    _log_best(client, parent_run_id, summary)
    return summary


def _log_best(client: MlflowClient, parent_run_id: str, summary: SweepSummary) -> None:
    now = int(time.time() * 1000)
    counts = {
        "sweep/n_jobs": len(summary.rows),
        "sweep/n_failed": sum(r.status != "FINISHED" for r in summary.rows),
        "sweep/n_reused": sum(r.reused for r in summary.rows),
    }
    metrics = [Metric(k, float(v), now, 0) for k, v in counts.items()]
    winner = summary.winner
    outcome = "best" if winner is not None else "tied" if summary.best is not None else "none"
    tags = [
        RunTag("ragtrack.headline_metric", summary.metric),
        RunTag(VERDICT_TAG, outcome),
        RunTag("ragtrack.sweep_verdict_text", verdict(summary)[:MAX_TAG]),
    ]
    if winner is not None and winner.run_id:
        tags.append(RunTag(BEST_RUN_TAG, winner.run_id))
    elif summary.best is not None:
        run_of = {r.job: r.run_id for r in summary.rows}
        tags.append(
            RunTag(TIED_RUNS_TAG, ",".join(str(run_of[j]) for j in summary.tied if run_of.get(j))[:MAX_TAG])
        )
    client.log_batch(parent_run_id, metrics=metrics, tags=tags, synchronous=True)


def compare_link(uri: str, parent_run_id: str, summary: SweepSummary) -> str:
    """The MLflow UI page comparing the sweep's finished jobs side by side (`ui_links.compare_runs_link`)."""
    experiment_id = connect(uri).get_run(parent_run_id).info.experiment_id
    return compare_runs_link(
        uri, experiment_id, [r.run_id for r in summary.rows if r.status == "FINISHED" and r.run_id]
    )
