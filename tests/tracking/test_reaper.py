"""Runs of processes that vanished (SIGKILL) are ended KILLED by the next command on the store."""

from __future__ import annotations

import os
import signal

from mlflow.tracking import MlflowClient

from ragtrack.tracking.reaper import (
    PID_TAG,
    REAPED_TAG,
    STARTED_TAG,
    process_alive,
    process_tags,
    reap_dead_runs,
)
from tests.processes import markers_at_least, run, runs, start_slow, wait_for


def _killed_run(tmp_path):
    """A real `ragtrack run` SIGKILLed mid-run: its run is left RUNNING."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_slow(["run", f"tracking.uri={uri}"], tmp_path / "started")
    wait_for(markers_at_least(tmp_path / "started"), what="the run to start")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return uri


def test_sigkill_leaves_the_run_running(tmp_path):
    uri = _killed_run(tmp_path)
    assert [r.info.status for r in runs(uri)] == ["RUNNING"]


def test_next_command_reaps_the_run_as_killed(tmp_path):
    uri = _killed_run(tmp_path)
    proc = run(["run", "adapter=lora_b", "prompt=v2", f"tracking.uri={uri}"])
    statuses = sorted((r.data.tags.get(REAPED_TAG, "-"), r.info.status) for r in runs(uri))
    assert proc.returncode == 0 and statuses == [("-", "FINISHED"), ("true", "KILLED")]


def test_reaping_is_said_on_the_console(tmp_path):
    uri = _killed_run(tmp_path)
    proc = run(["run", "adapter=lora_b", "prompt=v2", f"tracking.uri={uri}"])
    assert "which is gone: ended it KILLED (ragtrack.reaped=true)" in proc.stderr


def _running_run(tmp_path, tags):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.create_experiment("e")
    return client, client.create_run(exp, tags=tags).info.run_id


def test_run_of_a_live_process_is_left_running(tmp_path):
    client, run_id = _running_run(tmp_path, process_tags())
    assert reap_dead_runs(client) == [] and client.get_run(run_id).info.status == "RUNNING"


def test_reused_pid_is_not_mistaken_for_the_original(tmp_path):
    tags = {**process_tags(), STARTED_TAG: "1000.000"}  # our pid, but a process that started in 1970
    client, run_id = _running_run(tmp_path, tags)
    assert [r.run_id for r in reap_dead_runs(client)] == [run_id]


def test_run_without_process_tags_is_left_alone(tmp_path):
    client, run_id = _running_run(tmp_path, {})
    assert reap_dead_runs(client) == [] and client.get_run(run_id).info.status == "RUNNING"


def test_run_of_another_host_is_left_alone(tmp_path):
    client, run_id = _running_run(
        tmp_path, {**process_tags(), "ragtrack.host": "elsewhere", PID_TAG: "999999"}
    )
    assert reap_dead_runs(client) == []


def test_process_alive_tells_a_dead_pid():
    assert not process_alive(2**22 + 12345, None)
