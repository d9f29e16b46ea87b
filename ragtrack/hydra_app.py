"""The Hydra application behind `ragtrack run`: compose `conf/`, validate, run, track.

A sweep (`ragtrack run -m ...`) gets one MLflow parent run, created by
`SweepParentCallback` before the first job; its id reaches the jobs explicitly through
`RAGTRACK_PARENT_RUN_ID` (never `MLFLOW_RUN_ID`). Paths and the default tracking URI
are resolved against the directory ragtrack was started from (`hydra.job.chdir` is off).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ragtrack.config import RunConfig
from ragtrack.errors import InputError

if TYPE_CHECKING:
    from ragtrack.types import RunResult

__all__ = ["CONF_DIR", "PARENT_RUN_ENV", "SweepParentCallback", "execute", "main", "redact_overrides"]

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
PARENT_RUN_ENV = "RAGTRACK_PARENT_RUN_ID"
log = logging.getLogger("ragtrack")


_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.IGNORECASE)


def redact_overrides(overrides: Iterable[str]) -> str:
    """The command-line overrides as one tag value, values of secret-looking keys masked.

    Secrets belong in the environment; this keeps one typed on the command line by
    mistake out of MLflow.
    """
    out = []
    for o in overrides:
        key, eq, _ = o.partition("=")
        out.append(f"{key}=***" if eq and _SECRET_KEY.search(key) else o)
    return " ".join(out)[:5000]


def execute(cfg: RunConfig, *, base_dir: str | Path = ".", parent_run_id: str | None = None, tags: dict[str, str] | None = None) -> list[RunResult]:
    """Run one configured job, tracked in MLflow unless tracking is disabled."""
    from ragtrack.runner import run_job

    if not cfg.tracking.enabled:
        return run_job(cfg)
    from ragtrack.tracking import MlflowSink, resolve_tracking_uri

    uri = resolve_tracking_uri(cfg.tracking.uri, base_dir)
    sink = MlflowSink(cfg, uri=uri, parent_run_id=parent_run_id, tags=tags)
    results = run_job(cfg, sink)
    log.info("tracking uri: %s (experiment %r)", uri, cfg.tracking.experiment)
    for stage, run_id in sink.run_ids.items():
        log.info("mlflow run %s: %s", stage, run_id)
    return results


def _summary(results: list[RunResult]) -> None:
    """One block per stage: the stamps, each scorer's aggregates on one line, the gates."""
    for r in results:
        m = r.manifest
        log.info("%s · %s · prompt %s · %d cases · %s", m.stage, m.adapter_id, m.prompt_version, m.n_cases, m.eval_set_version)
        by_scorer: dict[str, list[str]] = {}
        for k, v in sorted(r.metrics.items()):
            scope, _, name = k.partition("/")
            if scope not in ("timing", "gate"):
                by_scorer.setdefault(scope, []).append(f"{name}={v:.4g}")
        for scope, parts in by_scorer.items():
            log.info("  %s: %s", scope, " ".join(parts))
        if r.gates:
            log.info("  gates: %s", " ".join(f"{g.name}={'skip' if g.skipped else 'pass' if g.passed else 'FAIL'}" for g in r.gates))


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> float | None:
    """Hydra task: returns `gate/all` (1.0, 0.0) or None when no gate was evaluated."""
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    hc = HydraConfig.get()
    tags = {"ragtrack.hydra_overrides": redact_overrides(hc.overrides.task)}
    if hc.mode.name == "MULTIRUN":
        tags["ragtrack.sweep_job"] = str(hc.job.num)
    try:
        run_cfg = RunConfig.from_container(container)
        results = execute(run_cfg, base_dir=hc.runtime.cwd, parent_run_id=os.environ.get(PARENT_RUN_ENV), tags=tags)
    except InputError as e:
        log.error("error: %s", e)
        if hc.mode.name == "MULTIRUN":
            raise  # Hydra records the failed job; the sweep's other jobs still run
        sys.exit(2)
    _summary(results)
    return results[-1].metrics.get("gate/all")


class SweepParentCallback(Callback):
    """Create one MLflow parent run per sweep; end it FINISHED, or FAILED if a job failed."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.uri: str | None = None
        self.failed = 0

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        tracking = config.get("tracking", {})
        if not tracking.get("enabled", True):
            return
        from ragtrack.tracking import resolve_tracking_uri, start_sweep_parent

        self.uri = resolve_tracking_uri(tracking.get("uri"), os.getcwd())
        overrides = redact_overrides(config.hydra.overrides.task)
        self.run_id = start_sweep_parent(
            self.uri, tracking.get("experiment", "ragtrack"), f"sweep {overrides}"[:250], {"ragtrack.hydra_overrides": overrides}
        )
        os.environ[PARENT_RUN_ENV] = self.run_id
        atexit.register(self._finish, "FAILED")  # a sweep that dies midway must not stay RUNNING
        log.info("sweep parent run: %s", self.run_id)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if job_return.status == JobStatus.FAILED:
            self.failed += 1

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._finish("FAILED" if self.failed else "FINISHED")

    def _finish(self, status: str) -> None:
        if self.run_id is None or self.uri is None:
            return
        from ragtrack.tracking import end_sweep_parent

        run_id, self.run_id = self.run_id, None
        os.environ.pop(PARENT_RUN_ENV, None)
        end_sweep_parent(self.uri, run_id, status, failed_jobs=self.failed)


def run_cli(args: list[str]) -> int:
    """`ragtrack run [overrides]`: hand the arguments to Hydra as if it were the program.

    `--overrides "<a=1 b=2>"` takes them as one shell-quoted string (as `mlflow run -P` passes them).
    """
    if args[:1] == ["--overrides"] and len(args) >= 2:
        import shlex

        args = [*shlex.split(args[1]), *args[2:]]
    sys.argv = ["ragtrack run", *args]
    main()
    return 0
