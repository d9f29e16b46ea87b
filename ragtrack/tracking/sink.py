"""One job's stages as MLflow runs.

`MlflowSink` implements the runner's `StageSink`: each stage is one MLflow run, created
with the client API and an explicit parent run id (never the process-global active run),
so parallel sweep jobs sharing one store cannot cross wires. Each run carries its host and
pid (see `reaper`). A stage that raises ends FAILED; one interrupted by Ctrl-C, SIGTERM or
SIGHUP ends KILLED; nothing is left RUNNING. A run is marked FINISHED only after its
params, metrics, dataset inputs, artifacts and per-case traces have all been logged.

Everything written here passes through `ragtrack.core.redact` except the archived data files and
the data in the per-case traces (questions, answers, contexts: see `tracking.traces`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import shutil
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ragtrack.core.errors import DiskFull, InputError, RunNotEnded, disk_full
from ragtrack.core.hashing import canonical_json, sha256_json
from ragtrack.core.redact import redact, redact_text
from ragtrack.core.termination import Terminated, deferred
from ragtrack.core.types import ComponentInfo, RunResult, TrackingRecord
from ragtrack.inputs.archive import write_archive
from ragtrack.inputs.config import RunConfig
from ragtrack.run.case_traces import case_traces
from ragtrack.run.jobkey import JOB_KEY_TAG
from ragtrack.run.report import render_report, render_scorer_report
from ragtrack.run.results import case_columns, head_frame, write_parquet
from ragtrack.tracking.eval_datasets import EVAL_DATASET_TAG, ensure_eval_dataset
from ragtrack.tracking.prompt_registry import link_prompt
from ragtrack.tracking.reaper import HOST_TAG, process_tags
from ragtrack.tracking.remote import summary
from ragtrack.tracking.search import all_runs, equals
from ragtrack.tracking.session import Placement, connect, place_run
from ragtrack.tracking.space import (
    RUN_BYTES,
    TABLE_BYTES_PER_CASE,
    TRACE_BYTES,
    local_dir,
    require,
    tree_bytes,
)
from ragtrack.tracking.store import log_inputs_idempotent, sqlite_path
from ragtrack.tracking.traces import log_case_traces
from ragtrack.tracking.versions import ensure_version, version_of

__all__ = [
    "MlflowSink",
    "default_tracking_uri",
    "end_run",
    "end_sweep_parent",
    "flat_params",
    "log_batches",
    "resolve_tracking_uri",
    "scorer_params",
    "start_sweep_parent",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

# MLflow's limits (mlflow.utils.validation): per log_batch call, and per value.
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_PER_BATCH = 100
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_RUN_NAME = 250
# cases in `cases_table.json` (the UI's table view: 1.3 KB each); all are in cases.parquet
UI_TABLE_ROWS = 10_000
MAX_DIGEST = 36  # MLflow caps dataset digests at 36 characters: a sha1 is cut to its first 36 hex digits
MODEL_ID_TAG = "ragtrack.model_id"  # the run's version (LoggedModel), see `tracking.versions`
# the run's prompt in the Prompt Registry, see `tracking.prompt_registry`
PROMPT_URI_TAG = "ragtrack.prompt_uri"


def default_tracking_uri(base_dir: str | Path) -> str:
    """`sqlite:///<absolute base_dir>/mlflow.db`."""
    return f"sqlite:///{Path(base_dir).resolve() / 'mlflow.db'}"


def resolve_tracking_uri(configured: str | None, base_dir: str | Path) -> str:
    """Config first, then `MLFLOW_TRACKING_URI`, then the embedded SQLite default."""
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(base_dir)


def flat_params(cfg: RunConfig, result: RunResult | None) -> dict[str, str]:
    """The run's params: version stamps, component versions and parameters."""
    params = {
        "model_id": cfg.model.stamp,
        "adapter": cfg.adapter.name,
        "adapter_id": cfg.adapter.id,
        "index": cfg.index.name,
        "prompt_version": cfg.prompt.label,
        "eval_set": cfg.eval_set.name,
        "generator": cfg.generator.name,
        "config_sha256": cfg.sha256,
    }
    if result is not None:
        m = result.manifest
        params.update(
            stage=m.stage,
            index_version=m.index_version,
            prompt_sha256=m.prompt_sha256,
            eval_set_version=m.eval_set_version,
            n_cases=str(m.n_cases),
            git_commit=m.git_commit,
            git_dirty=str(m.git_dirty).lower(),
            ragtrack_version=m.ragtrack_version,
        )
        params[f"generator/{m.generator.name}/version"] = m.generator.version
        params.update(
            {f"generator/{m.generator.name}/{k}": _param_value(v) for k, v in m.generator.params.items()}
        )
        params.update({f"generator/{m.generator.name}/{k}": v for k, v in m.generator_provenance.items()})
        for s in m.scorers:
            params.update(scorer_params(s))
        if m.subset is not None:
            params.update(
                subset_parent=m.subset.parent_version,
                subset_seed=str(m.subset.seed),
                subset_n=str(m.subset.n),
            )
    return params


def scorer_params(info: ComponentInfo) -> dict[str, str]:
    """A scorer's params: `scorer/<name>/version`, `…/code_sha256` (when known), `scorer/<name>/<parameter>`
    and its provenance."""
    out = {f"scorer/{info.name}/version": info.version}
    if info.code_sha256 is not None:
        out[f"scorer/{info.name}/code_sha256"] = info.code_sha256
    out.update({f"scorer/{info.name}/{k}": _param_value(v) for k, v in info.params.items()})
    out.update(
        {f"scorer/{info.name}/{k}": v for k, v in info.provenance.items()}
    )  # e.g. the embedding model's weights sha256
    return out


def _param_value(v: Any) -> str:
    text = v if isinstance(v, str) else canonical_json(v)
    return text if len(text) <= MAX_PARAM_VALUE else text[: MAX_PARAM_VALUE - 20] + "…(see manifest.json)"


def _redacted_params(params: Mapping[str, str]) -> dict[str, str]:
    return {k: redact(v, k) for k, v in params.items()}


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def log_batches(
    client: MlflowClient,
    run_id: str,
    *,
    params: Mapping[str, str] | None = None,
    metrics: Mapping[str, float] | None = None,
    tags: Mapping[str, str] | None = None,
    model_id: str | None = None,
    dataset: tuple[str, str] | None = None,
) -> None:
    """Params (redacted), metrics (NaN left out, sorted by name) and tags in as few `log_batch` calls as
    MLflow's limits allow; the metrics linked to the version `model_id` and the `dataset` (name, digest) when
    given."""
    todo = [Param(k, v) for k, v in _redacted_params(params or {}).items()]
    for chunk in _chunks(todo, MAX_PARAMS_PER_BATCH):
        client.log_batch(run_id, params=chunk, synchronous=True)
    now_ms = int(time.time() * 1000)
    name, digest = dataset or (None, None)
    entries = [
        Metric(k, float(v), now_ms, 0, model_id=model_id, dataset_name=name, dataset_digest=digest)
        for k, v in sorted((metrics or {}).items())
        if not math.isnan(v)
    ]
    run_tags = [RunTag(k, v) for k, v in (tags or {}).items()]
    for i, chunk in enumerate(_chunks(entries, MAX_METRICS_PER_BATCH)):
        client.log_batch(run_id, metrics=chunk, tags=run_tags if i == 0 else [], synchronous=True)
    if run_tags and not entries:
        client.log_batch(run_id, tags=run_tags, synchronous=True)


def end_run(client: MlflowClient, run_id: str, error: BaseException | None) -> None:
    """FINISHED, FAILED (with the error as a tag) or KILLED (Ctrl-C, SIGTERM, SIGHUP).

    A signal arriving meanwhile waits until the run is ended (see `termination.deferred`). A
    store that stopped answering (after MLflow's retries, see `remote`) is `RunNotEnded`.
    """
    with deferred(), _ending(run_id, error):
        if error is None:
            client.set_terminated(run_id, "FINISHED")
            return
        status = "KILLED" if isinstance(error, (KeyboardInterrupt, Terminated)) else "FAILED"
        try:
            text = f"{type(error).__name__}: {error}"
            if status == "FAILED" and not isinstance(error, InputError):
                text += "\n" + "".join(traceback.format_exception(error)[-6:])
            client.set_tag(run_id, "ragtrack.error", redact_text(text)[:MAX_TAG_VALUE])
        finally:
            client.set_terminated(run_id, status)


@contextmanager
def _ending(run_id: str, error: BaseException | None) -> Iterator[None]:
    """An MLflow error while ending run `run_id` as `RunNotEnded`: one line saying what became of the run."""
    try:
        yield
    except MlflowException as e:
        full = disk_full(e, Path.cwd(), None)
        if full is not None and isinstance(error, DiskFull):
            why, before = str(error), ""  # the disk that failed the run is still full
        else:
            why = str(full) if full is not None else summary(e)
            before = (
                f" (it had failed with {summary(error)})"
                if error is not None and summary(error) != why
                else ""
            )
        raise RunNotEnded(
            f"run {run_id} could not be ended: {why}{before}; it stays RUNNING until the next ragtrack "
            "command on this store, from this host, ends it KILLED"
        ) from e


class MlflowSink:
    """A `StageSink` that logs each stage of one job as an MLflow run."""

    def __init__(
        self,
        cfg: RunConfig,
        *,
        uri: str,
        parent_run_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        job_key: str | None = None,
        paths_shown_as: Mapping[str, str] | None = None,
    ) -> None:
        """`paths_shown_as`: local folders the run reads from that it records as another name (a rescore's
        downloaded archive as `runs:/<source run>`), in its params, manifest, config and report."""
        self.cfg = cfg
        self.paths_shown_as = dict(paths_shown_as or {})
        # the hash of the config as logged (= cfg.sha256 unless some paths are shown as other names)
        self.config_sha256 = sha256_json(self._shown(cfg.hashed()))
        self.uri = uri
        self.client = connect(uri)
        self.placement: Placement = place_run(self.client, uri, cfg.tracking.experiment, parent_run_id)
        self.tags = {k: redact(v, k) for k, v in (tags or {}).items()}
        self.job_key = job_key
        self._parents = [self.placement.parent_run_id] if self.placement.parent_run_id else []
        self.run_ids: dict[str, str] = {}
        self.top_run_id: str | None = None  # the job's outermost run: the "staged" parent, or its one run
        self._staged = False
        self._artifact_dirs: dict[str, Path | None] = {}  # run id -> its local artifact folder (None: remote)
        db = sqlite_path(uri)
        self._store_dir = db.parent if db is not None else None
        self._needed = RUN_BYTES  # what the stage being logged needs on disk, as far as known (see `space`)
        self.model_ids: dict[str, str] = {}  # run id -> the LoggedModel (version) its metrics are linked to

    @property
    def experiment_name(self) -> str:
        return self.placement.experiment_name

    def finished_run_with_key(self) -> str | None:
        """The latest FINISHED run of the experiment with this job's key, outside this job's own sweep.

        Jobs of one sweep never reuse each other: a sweep that repeats a job means to run it again.
        """
        if not self.job_key:
            return None
        runs = all_runs(
            self.client,
            [self.placement.experiment_id],
            f"tags.`{JOB_KEY_TAG}` = '{self.job_key}' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
        )
        sweep = self.placement.parent_run_id
        return next(
            (r.info.run_id for r in runs if sweep is None or r.data.tags.get("mlflow.parentRunId") != sweep),
            None,
        )

    def run_name(self, stage: str) -> str:
        """`<adapter>-<prompt>[-<built index>]` (or the configured name); a staged job: `… (staged)` with
        `…/dev`, `…/full` under it."""
        cfg = self.cfg
        base = cfg.tracking.run_name or "-".join(
            [cfg.adapter.name, cfg.prompt.label] + ([cfg.index.name] if cfg.index.built else [])
        )
        if stage == "staged":
            name = f"{base} (staged)"
        else:
            name = f"{base}/{stage}" if self._staged else base
        return redact_text(name)[:MAX_RUN_NAME]

    @contextmanager
    def __call__(self, stage: str) -> Iterator[Callable[[RunResult], None]]:
        tags = {"ragtrack.stage": stage, **self.tags, **process_tags()}
        if self._parents:
            tags["mlflow.parentRunId"] = self._parents[-1]
        outermost = self.top_run_id is None
        if outermost and self.job_key:
            tags[JOB_KEY_TAG] = self.job_key
        run = self.client.create_run(self.placement.experiment_id, run_name=self.run_name(stage), tags=tags)
        run_id = run.info.run_id
        self.run_ids[stage] = run_id
        self._artifact_dirs[run_id] = local_dir(run.info.artifact_uri)
        if outermost:
            self.top_run_id = run_id
        record = TrackingRecord(
            run_id=run_id,
            run_name=run.info.run_name or "",
            experiment_id=self.placement.experiment_id,
            experiment_name=self.placement.experiment_name,
            start_time=dt.datetime.fromtimestamp(run.info.start_time / 1000, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            parent_run_id=self._parents[-1] if self._parents else None,
        )
        self._parents.append(run_id)
        self._staged = self._staged or stage == "staged"
        error: BaseException | None = None
        try:
            log_batches(self.client, run_id, params=self._params(None))
            yield lambda result: self.log_result(run_id, result, stage, record)
        except BaseException as e:
            error = (
                disk_full(e, self._artifact_dirs[run_id] or self._store_dir or Path.cwd(), self._needed) or e
            )
            if error is e:
                raise
            raise error from e
        finally:
            self._parents.pop()
            end_run(self.client, run_id, error)
            if error is not None:  # the console line says what became of the run
                error.add_note(f"run {run_id} ended {'FAILED' if isinstance(error, Exception) else 'KILLED'}")

    # -------------------------------------------------------------- logging

    def _params(self, result: RunResult | None) -> dict[str, str]:
        return {**self._shown(flat_params(self.cfg, result)), "config_sha256": self.config_sha256}

    def _shown(self, value: T) -> T:
        """`value` with every local folder of `paths_shown_as` written as its shown name."""
        if isinstance(value, str):
            for local, shown in self.paths_shown_as.items():
                value = value.replace(local, shown)  # type: ignore[assignment]
            return value
        if isinstance(value, dict):
            return {k: self._shown(v) for k, v in value.items()}  # type: ignore[return-value]
        if isinstance(value, list):
            return [self._shown(v) for v in value]  # type: ignore[return-value]
        return value

    def log_result(self, run_id: str, result: RunResult, stage: str, record: TrackingRecord) -> None:
        """Params, metrics, dataset input and artifacts of one finished stage."""
        early = self._params(None)  # logged when the run was created
        log_batches(
            self.client, run_id, params={k: v for k, v in self._params(result).items() if k not in early}
        )
        metrics = dict(result.metrics)
        metrics.update({f"timing/{k}": v for k, v in result.timings.items()})
        tags = {
            "ragtrack.gates_passed": str(metrics.get("gate/all", 0.0) == 1.0).lower(),
            "ragtrack.reached_stage": result.manifest.stage,
        }
        version = version_of(self.cfg, result.manifest)
        model_id = ensure_version(self.client, self.placement.experiment_id, version, run_id)
        if model_id is not None:
            tags[MODEL_ID_TAG] = model_id
            self.model_ids[run_id] = model_id
        if (prompt_uri := self._link_prompt(run_id, result)) is not None:
            tags[PROMPT_URI_TAG] = prompt_uri
        if stage != "staged":
            m = result.manifest
            dataset_id = ensure_eval_dataset(
                self.client, self.placement.experiment_id, m.eval_set_version, result.eval_set.cases
            )
            if dataset_id is not None:
                tags[EVAL_DATASET_TAG] = dataset_id
        first = result.manifest.eval_files[0] if result.manifest.eval_files else None
        dataset = (
            (first.stem, first.sha1[:MAX_DIGEST]) if first is not None and model_id is not None else None
        )
        log_batches(self.client, run_id, metrics=metrics, tags=tags, model_id=model_id, dataset=dataset)
        if stage != "staged":
            self._log_dataset(run_id, result)
            traced = self._traces_wanted(result)
            self._log_artifacts(run_id, result, record, traced=traced)
            if traced:
                log_case_traces(
                    self.uri,
                    self.placement.experiment_id,
                    run_id,
                    case_traces(result),
                    model_id=self.model_ids.get(run_id),
                )

    def _link_prompt(self, run_id: str, result: RunResult) -> str | None:
        """The run's prompt as a version in MLflow's Prompt Registry (`tracking.prompt_registry`), linked to
        the run."""
        m = result.manifest
        try:
            template = Path(m.prompt_path).read_text(encoding="utf-8")
        except (
            OSError,
            UnicodeDecodeError,
        ):  # validated when the run was prepared; gone since: not registered
            return None
        return link_prompt(
            self.client,
            run_id,
            self.placement.experiment_name,
            self.placement.experiment_id,
            template,
            m.prompt_sha256,
            m.prompt_version,
            registered=m.prompt_uri,
        )

    def _traces_wanted(self, result: RunResult) -> bool:
        limit = self.cfg.tracking.traces_max_cases
        if 0 < limit < result.manifest.n_cases:
            log.warning(
                "per-case traces not logged: %d cases > tracking.traces_max_cases=%d "
                "(per-case results are in cases.parquet)",
                result.manifest.n_cases,
                limit,
            )
        return 0 < result.manifest.n_cases <= limit

    def _traces_note(self, result: RunResult, traced: bool) -> str:
        """The report's line on per-case traces: logged, or why not."""
        n, limit = result.manifest.n_cases, self.cfg.tracking.traces_max_cases
        if traced:
            return (
                f"Logged: one trace per case ({n}), each with its subscores as assessments; open the "
                "experiment's **Evaluation runs** view in the MLflow UI to see them, or to compare runs "
                "case by case."
            )
        if limit == 0:
            return "Not logged: tracking.traces_max_cases=0."
        return (
            f"Not logged: {n} cases > tracking.traces_max_cases={limit} (raise it to log them); "
            "every case's subscores are in cases.parquet."
        )

    def _log_dataset(self, run_id: str, result: RunResult) -> None:
        inputs = []
        for f in result.manifest.eval_files:
            ds = Dataset(
                name=f.stem,
                digest=f.sha1[:MAX_DIGEST],
                source_type="local",
                source=json.dumps({"uri": Path(f.path).resolve().as_uri()}),
                profile=json.dumps({"num_rows": f.n_items}),
            )
            tags = [
                InputTag("mlflow.data.context", "dev" if result.manifest.stage == "dev" else "eval"),
                InputTag("ragtrack.version", f.version),
                InputTag("ragtrack.format", f.format),
            ]
            inputs.append(DatasetInput(ds, tags))
        log_inputs_idempotent(self.client, run_id, inputs)

    def _log_artifacts(self, run_id: str, result: RunResult, record: TrackingRecord, *, traced: bool) -> None:
        """Stage the artifacts in a temporary folder, check there is room for them and the traces, then log
        them."""
        traces_note = self._traces_note(result, traced)
        tmp = Path(tempfile.mkdtemp(prefix="ragtrack-"))
        try:
            manifest = write_archive(result, tmp).model_copy(
                update={"tracking": record, "config_sha256": self.config_sha256}
            )
            result = result.model_copy(update={"manifest": manifest})
            columns = case_columns(result.eval_set.cases, result.generation.predictions, result.outputs)
            write_parquet(columns, tmp / "cases.parquet")
            report = render_report(result).rstrip("\n") + f"\n\n## Per-case traces\n\n{traces_note}\n"
            (tmp / "report.md").write_text(redact_text(self._shown(report)), encoding="utf-8")
            reports = tmp / "reports"
            reports.mkdir()
            for out in result.outputs:
                (reports / f"{out.info.name}.md").write_text(
                    render_scorer_report(result, out), encoding="utf-8"
                )
            (tmp / "manifest.json").write_text(
                json.dumps(
                    redact(self._shown(manifest.model_dump(mode="json"))), ensure_ascii=False, indent=2
                ),
                encoding="utf-8",
            )
            (tmp / "config.yaml").write_text(
                yaml.safe_dump(
                    redact(self._shown(self.cfg.model_dump(mode="json"))), sort_keys=False, allow_unicode=True
                ),
                encoding="utf-8",
            )
            table = head_frame(columns, UI_TABLE_ROWS)  # the UI's table; every case is in cases.parquet
            del columns
            self._require_space(
                run_id, tree_bytes(tmp) + len(table) * TABLE_BYTES_PER_CASE, traced * result.manifest.n_cases
            )
            self.client.log_artifacts(run_id, str(tmp))
            self.client.log_table(run_id, data=table, artifact_file="cases_table.json")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _require_space(self, run_id: str, artifact_bytes: int, traces: int) -> None:
        """`DiskFull` now, before any of it is written, unless the local folders have room for the artifacts
        and traces."""
        store_bytes = RUN_BYTES + traces * TRACE_BYTES
        self._needed = artifact_bytes + store_bytes
        needs: dict[Path, int] = {}
        for folder, n in ((self._artifact_dirs[run_id], artifact_bytes), (self._store_dir, store_bytes)):
            if folder is not None:
                needs[folder] = needs.get(folder, 0) + n
        require(needs)


def start_sweep_parent(uri: str, experiment: str, name: str, tags: Mapping[str, str]) -> str:
    """Create the parent run that groups a Hydra sweep's jobs; returns its id."""
    client = connect(uri)
    placement = place_run(client, uri, experiment, None)
    tags = {"ragtrack.stage": "sweep", **{k: redact(v, k) for k, v in tags.items()}, **process_tags()}
    if placement.parent_run_id:
        tags["mlflow.parentRunId"] = placement.parent_run_id
    run = client.create_run(placement.experiment_id, run_name=redact_text(name)[:MAX_RUN_NAME], tags=tags)
    return run.info.run_id


def end_sweep_parent(
    uri: str, run_id: str, status: str, *, failed_jobs: int, error: BaseException | None = None
) -> None:
    """End a sweep's parent run, recording how many of its jobs failed.

    A sweep that did not finish (killed, or its launcher failed) also ends its children that
    are still RUNNING on this host, with its own status (KILLED or FAILED): their workers went
    down with it. Children on other hosts (Slurm jobs) are left to end their own runs: the
    scheduler, not this process, stops them.
    """
    client = connect(uri)
    with deferred(), _ending(run_id, error):
        client.set_tag(run_id, "ragtrack.failed_jobs", str(failed_jobs))
        if status != "FINISHED" and error is not None:
            exp_id = client.get_run(run_id).info.experiment_id
            children = all_runs(
                client,
                [exp_id],
                f"tags.`mlflow.parentRunId` = '{run_id}' and attributes.status = 'RUNNING'"
                f" and {equals(f'tags.`{HOST_TAG}`', socket.gethostname())[0]}",
            )
            for child in children:
                end_run(client, child.info.run_id, error)
        if error is not None:
            end_run(client, run_id, error)
        else:
            client.set_terminated(run_id, status)
