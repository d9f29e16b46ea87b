"""Runs whose process is gone: found by the host/pid tags every ragtrack run carries, ended KILLED.

SIGKILL (the OOM killer, `kill -9`, a machine losing power) leaves a run RUNNING for ever.
Each run records where it lives (`ragtrack.host`, `ragtrack.pid`, and the process's start
time, which tells a reused pid from the original); any later ragtrack command on the same
store ends such runs of this host KILLED with `ragtrack.reaped=true`, and says so.
Runs of other hosts are left alone: their processes cannot be seen from here. On a shared
server a run of another user may not be ours to end (basic-auth's PERMISSION_DENIED): that
is said and skipped, not fatal to the command.
"""

from __future__ import annotations

import logging
import os
import socket

import psutil
from mlflow.entities import RunStatus
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from pydantic import BaseModel, ConfigDict

from ragtrack.tracking.search import all_experiment_ids, all_runs, equals

__all__ = [
    "HOST_TAG",
    "PID_TAG",
    "REAPED_TAG",
    "STARTED_TAG",
    "ReapedRun",
    "process_alive",
    "process_tags",
    "reap_dead_runs",
]

log = logging.getLogger("ragtrack")

HOST_TAG = "ragtrack.host"
PID_TAG = "ragtrack.pid"
# the process's start time (epoch seconds): pid reuse shows as a different time
STARTED_TAG = "ragtrack.pid_started"
REAPED_TAG = "ragtrack.reaped"
_START_TOLERANCE_S = 1.0


class ReapedRun(BaseModel):
    """A run ended KILLED because its process was gone."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_name: str
    experiment_id: str
    pid: int


def _start_time(pid: int) -> float:
    return psutil.Process(pid).create_time()


def process_tags() -> dict[str, str]:
    """The tags that let a later command tell whether this run's process still exists."""
    return {
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(os.getpid()),
        STARTED_TAG: f"{_start_time(os.getpid()):.3f}",
    }


def process_alive(pid: int, started: float | None) -> bool:
    """Whether process `pid` exists and is the one that started at `started` (not a reused pid)."""
    try:
        actual = _start_time(pid)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True  # it exists; we may not look closer
    return started is None or abs(actual - started) <= _START_TOLERANCE_S


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def reap_dead_runs(client: MlflowClient) -> list[ReapedRun]:
    """End every RUNNING run of this host whose process is gone as KILLED; return them."""
    host = socket.gethostname()
    runs = all_runs(
        client,
        all_experiment_ids(client),
        f"attributes.status = 'RUNNING' and {equals(f'tags.`{HOST_TAG}`', host)[0]}",
    )
    reaped = []
    for run in runs:
        tags = run.data.tags
        try:
            pid = int(tags[PID_TAG])
        except (KeyError, ValueError):
            continue
        if process_alive(pid, _float(tags.get(STARTED_TAG))):
            continue
        try:
            client.set_tag(run.info.run_id, REAPED_TAG, "true")
            client.set_terminated(run.info.run_id, RunStatus.to_string(RunStatus.KILLED))
        except MlflowException as e:
            if e.error_code != "PERMISSION_DENIED":
                raise
            log.warning(
                "run %s (%s) was left RUNNING by process %d on %s, which is gone; it is not ours to end: %s",
                run.info.run_id,
                run.info.run_name,
                pid,
                host,
                str(e).splitlines()[0],
            )
            continue
        r = ReapedRun(
            run_id=run.info.run_id,
            run_name=run.info.run_name or "",
            experiment_id=run.info.experiment_id,
            pid=pid,
        )
        log.warning(
            "run %s (%s) was left RUNNING by process %d on %s, which is gone: "
            "ended it KILLED (ragtrack.reaped=true)",
            r.run_id,
            r.run_name,
            r.pid,
            host,
        )
        reaped.append(r)
    return reaped
