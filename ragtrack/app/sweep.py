"""The sweeper behind `ragtrack run -m`: Hydra's basic sweeper plus what a tracked sweep needs.

Everything here runs in the launching process, whatever launcher runs the jobs (in-process,
joblib workers, submitit):

- one MLflow parent run for the sweep, created after every job's config has composed; its
  id reaches the jobs explicitly (`RAGTRACK_PARENT_RUN_ID`), as does the launching pid
  (`RAGTRACK_SWEEP_PID`, so a worker can tell it is one and watch for its parent's death);
- failed jobs are counted from the job returns (worker-side callbacks cannot count them),
  each reported in one line; the parent ends FAILED with `ragtrack.failed_jobs`, and the
  command exits 1;
- a launcher that fails as a whole (a job's process was killed: joblib's
  `TerminatedWorkerError`, submitit's `UncompletedJobError`) is one line too, and exit 1;
  the parent ends FAILED, with its children on this host that are still RUNNING;
- when every job has returned, the parent run gets the sweep summary (one row per job with
  its headline metric and bootstrap interval, the best run; `ragtrack.tracking.sweep_summary`),
  also printed on the console; a job that reused an earlier run (`ragtrack.run.jobkey`) is
  listed with that run;
- interrupted (Ctrl-C, SIGTERM, SIGHUP), the parent ends KILLED together with any child
  still RUNNING;
- no `multirun.yaml`: Hydra's copy of the config would put override values, secrets
  included, on disk. The parent run records the (redacted) sweep overrides instead.

Hydra instantiates it as `hydra_plugins.ragtrack_sweeper.RagtrackSweeper` (plugins must be defined there).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf
from pydantic import ValidationError

from ragtrack.analysis.summary import JobOutcome, SweepJob, summary_lines
from ragtrack.core.errors import InputError, RunNotEnded, disk_full
from ragtrack.core.termination import release
from ragtrack.inputs.config import TrackingConfig

__all__ = ["PARENT_RUN_ENV", "SWEEP_PID_ENV", "TrackedSweeper", "raw_overrides"]

PARENT_RUN_ENV = "RAGTRACK_PARENT_RUN_ID"
SWEEP_PID_ENV = "RAGTRACK_SWEEP_PID"
log = logging.getLogger("ragtrack")


def raw_overrides(overrides: Any) -> list[str]:
    """Hydra's override list as typed: iterating it would resolve `${…}` inside the strings."""
    items = (
        cast("list[Any]", OmegaConf.to_container(overrides, resolve=False))  # of a ListConfig: a list
        if OmegaConf.is_config(overrides)
        else overrides
    )
    return [str(o) for o in items]


def oversubscribed(config: DictConfig) -> str | None:
    """The warning for a launcher asked for more parallel workers (`hydra.launcher.n_jobs`) than the cores
    this process may use, or None."""
    workers = OmegaConf.select(config, "hydra.launcher.n_jobs", default=None)
    cores = len(os.sched_getaffinity(0))
    if not isinstance(workers, int) or workers <= cores:
        return None
    return (
        f"hydra.launcher.n_jobs={workers} asks for more workers than the {cores} cores here: the jobs "
        "share them (each also imports MLflow and opens the store), so the sweep is no faster than with "
        f"n_jobs={cores}"
    )


def _one_line(error: BaseException) -> str:
    error = disk_full(error, Path.cwd(), None) or error
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


class TrackedSweeper(Sweeper):
    """`hydra/sweeper=ragtrack` (the default in conf/config.yaml): basic grid sweeps, tracked.

    The grid is Hydra's basic sweeper's (`BasicSweeper.split_arguments`); it is not
    subclassed because Hydra re-imports its core plugin modules while scanning for plugins.
    """

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        self.max_batch_size = max_batch_size
        self.params = params or {}
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.hydra_context, self.config = hydra_context, config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        assert self.config is not None and self.launcher is not None and self.hydra_context is not None
        from ragtrack.core.redact import redact_overrides

        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        grid = [f"{k}={v}" for k, v in self.params.items()] + arguments
        batches = BasicSweeper.split_arguments(parser.parse_overrides(grid), self.max_batch_size)
        for batch in batches:  # every job's config composes before anything is tracked
            self.validate_batch_is_legal(batch)
        if warning := oversubscribed(self.config):
            log.warning("%s", warning)
        sweep_overrides = " ".join(redact_overrides(raw_overrides(self.config.hydra.overrides.task)))
        release()  # start-up is over: a signal held during it is raised here, before any run exists
        try:
            parent = _Parent.start(self.config, sweep_overrides)
        except (
            InputError
        ) as e:  # a bad tracking setting or a store that cannot be used: Hydra would print a traceback
            log.error("error: %s", e)
            raise SystemExit(2) from None
        os.environ[SWEEP_PID_ENV] = str(os.getpid())
        returns: list[Sequence[JobReturn]] = []
        jobs: list[SweepJob] = []
        failed = total = 0
        shared = set.intersection(
            *(set(job) for batch in batches for job in batch)
        )  # shown once, not per job
        try:
            for batch in batches:
                results = self.launcher.launch(batch, initial_job_idx=total)
                for job_overrides, r in zip(batch, results, strict=True):
                    varying = redact_overrides([o for o in job_overrides if o not in shared] or job_overrides)
                    if r.status == JobStatus.FAILED:
                        failed += 1
                        # `_return_value`: `return_value` would print the raw overrides, then raise
                        error = _one_line(r._return_value)
                        log.error("job #%d (%s) failed: %s", total, " ".join(varying), error)
                        jobs.append(SweepJob(index=total, overrides=varying, status="FAILED", error=error))
                    else:
                        outcome = r.return_value
                        run_id, reused = (
                            (outcome.run_id, outcome.reused)
                            if isinstance(outcome, JobOutcome)
                            else (None, False)
                        )
                        jobs.append(
                            SweepJob(
                                index=total,
                                overrides=varying,
                                status="FINISHED",
                                run_id=run_id,
                                reused=reused,
                            )
                        )
                    total += 1
                returns.append(results)
        except Exception as e:  # the launcher itself failed, e.g. a job's process died (OOM killer, segfault)
            parent.end(e, failed_jobs=failed)
            where = f" (sweep run {parent.run_id})" if parent.run_id else ""
            log.error("sweep stopped: the launcher failed%s: %s", where, _one_line(e))
            raise SystemExit(1) from None
        except BaseException as e:
            parent.end(e, failed_jobs=failed)
            raise
        finally:
            os.environ.pop(PARENT_RUN_ENV, None)
            os.environ.pop(SWEEP_PID_ENV, None)
        try:
            parent.end(None, failed_jobs=failed, jobs=jobs)
        except RunNotEnded as e:  # the store went away: one line, not Hydra's traceback
            log.error("error: %s", e)
            raise SystemExit(1) from None
        if failed:
            where = f" (sweep run {parent.run_id})" if parent.run_id else ""
            log.error("%d of %d sweep jobs failed%s", failed, total, where)
            raise SystemExit(1)
        return returns


class _Parent:
    """The sweep's MLflow parent run (or nothing, when tracking is off)."""

    def __init__(
        self,
        uri: str | None,
        run_id: str | None,
        settings: TrackingConfig | None = None,
        scorers: Sequence[str] = (),
    ) -> None:
        self.uri, self.run_id = uri, run_id
        self.settings = settings or TrackingConfig()
        self.scorers = list(scorers)

    @classmethod
    def start(cls, config: Any, overrides: str) -> _Parent:
        tracking = OmegaConf.to_container(config.get("tracking") or {}, resolve=True)
        try:
            settings = TrackingConfig.model_validate(tracking)
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(
                "config", err["msg"], field=".".join(["tracking", *map(str, err["loc"])])
            ) from None
        if not settings.enabled:
            return cls(None, None)
        from ragtrack.tracking import resolve_tracking_uri, start_sweep_parent

        uri = resolve_tracking_uri(settings.uri, os.getcwd())
        run_id = start_sweep_parent(
            uri, settings.experiment, f"sweep {overrides}", {"ragtrack.hydra_overrides": overrides}
        )
        os.environ[PARENT_RUN_ENV] = run_id
        log.info("sweep parent run: %s", run_id)
        return cls(uri, run_id, settings, list(config.get("scorers") or {}))

    def end(
        self, error: BaseException | None, *, failed_jobs: int, jobs: Sequence[SweepJob] | None = None
    ) -> None:
        """Summarise the jobs (when every job returned) and end the parent run with the sweep's status."""
        if self.uri is None or self.run_id is None:
            return
        from ragtrack.core.termination import Terminated
        from ragtrack.tracking import end_sweep_parent

        if error is None and jobs is not None:
            try:
                self._summarize(jobs)
            except BaseException as e:  # the summary could not be logged: the sweep did not finish
                end_sweep_parent(self.uri, self.run_id, "FAILED", failed_jobs=failed_jobs, error=e)
                raise
        if error is None:
            status = "FAILED" if failed_jobs else "FINISHED"
        else:
            status = "KILLED" if isinstance(error, (KeyboardInterrupt, Terminated)) else "FAILED"
        end_sweep_parent(self.uri, self.run_id, status, failed_jobs=failed_jobs, error=error)
        if error is not None:
            error.add_note(
                f"run {self.run_id} (the sweep) ended {status}"
            )  # the console line says what became of it

    def _summarize(self, jobs: Sequence[SweepJob]) -> None:
        from ragtrack.tracking.sweep_summary import compare_link, log_sweep_summary
        from ragtrack.tracking.ui_links import served_where

        assert self.uri is not None and self.run_id is not None
        summary = log_sweep_summary(self.uri, self.run_id, jobs, self.settings, self.scorers)
        pct = f"{summary.confidence:.0%}"
        log.info(
            "sweep summary: %s, %s bootstrap interval (sweep_summary.md in run %s)",
            summary.metric,
            pct,
            self.run_id,
        )
        for line in summary_lines(summary):
            log.info("  %s", line)
        log.info(
            "compare the jobs side by side%s: %s",
            served_where(self.uri),
            compare_link(self.uri, self.run_id, summary),
        )
