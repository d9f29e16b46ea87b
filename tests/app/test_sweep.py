"""The tracked sweeper under Hydra's launchers (joblib; submitit_local, submitit's Slurm code path run
locally): parent/child linkage, failures counted in the launching process, signals stop everything."""

from __future__ import annotations

import signal
import subprocess

import psutil
import pytest
from mlflow.tracking import MlflowClient

from ragtrack.tracking.reaper import reap_dead_runs
from tests.processes import ROOT, markers_at_least, run, runs, start_slow, wait_for

FN = "tests.generators.sample_fns"
JOBLIB = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
LAUNCHERS = {"joblib": JOBLIB, "submitit_local": ["hydra/launcher=submitit_local"]}


def _by_stage(uri: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in runs(uri):
        out.setdefault(r.data.tags["ragtrack.stage"], []).append(r)
    return out


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout


@pytest.fixture(scope="module", params=sorted(LAUNCHERS))
def failing_sweep(request, tmp_path_factory):
    """Two jobs, the second failing, under each launcher: (launcher, finished process, store uri, TMPDIR, git
    status before)."""
    tmp = tmp_path_factory.mktemp(request.param)
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    before = _git_status()
    proc = run(
        [
            "run",
            "-m",
            *LAUNCHERS[request.param],
            "generator=callable",
            f"generator.params.target={FN}:echo,{FN}:broken",
            f"tracking.uri={uri}",
        ],
        TMPDIR=str(tmp),
    )
    return request.param, proc, uri, tmp, before


def test_failing_job_fails_the_sweep(failing_sweep):
    _, proc, uri, *_ = failing_sweep
    stages = _by_stage(uri)
    (parent,) = stages["sweep"]
    children = sorted(r.info.status for r in stages["full"])
    assert proc.returncode == 1, proc.stderr
    assert children == ["FAILED", "FINISHED"]
    assert (parent.info.status, parent.data.tags["ragtrack.failed_jobs"]) == ("FAILED", "1")


def test_children_nest_under_the_parent_in_its_experiment(failing_sweep):
    _, _, uri, *_ = failing_sweep
    stages = _by_stage(uri)
    (parent,) = stages["sweep"]
    links = {(r.data.tags["mlflow.parentRunId"], r.info.experiment_id) for r in stages["full"]}
    assert links == {(parent.info.run_id, parent.info.experiment_id)}


def test_each_failed_job_is_one_line_naming_it(failing_sweep):
    _, proc, *_ = failing_sweep
    lines = [x for x in proc.stderr.splitlines() if " failed: " in x]
    assert lines == [
        f"[hydra] job #1 (generator.params.target={FN}\\:broken) failed: RuntimeError: "
        f"{FN}:broken failed on case 'q01': ValueError: model server said no"
    ]
    assert "Traceback" not in proc.stderr


def test_launcher_files_stay_in_tmpdir_and_the_work_tree_clean(failing_sweep):
    launcher, _, _, tmp, before = failing_sweep
    job_folders = list((tmp / "ragtrack-hydra" / "multirun" / ".submitit").glob("*/*_result.pkl"))
    assert len(job_folders) == (2 if launcher == "submitit_local" else 0)
    assert _git_status() == before


def test_bad_input_job_under_joblib_is_reported_not_fatal(tmp_path):
    # InputError crosses the process boundary pickled; a good job beside it still finishes.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = run(
        [
            "run",
            "-m",
            *JOBLIB,
            "generator.params.path=experiments/demo/predictions/base__v1.jsonl,nope.jsonl",
            f"tracking.uri={uri}",
        ]
    )
    stages = _by_stage(uri)
    assert [r.info.status for r in stages["full"]] == ["FINISHED"]
    assert "failed: InputError: nope.jsonl: file not found" in proc.stderr and "Traceback" not in proc.stderr


def test_job_whose_process_dies_stops_the_sweep_in_one_line_and_leaves_nothing_running(tmp_path):
    # The OOM killer takes a joblib worker: the launcher fails as a whole (TerminatedWorkerError).
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = run(
        [
            "run",
            "-m",
            *JOBLIB,
            "generator=callable",
            f"generator.params.target={FN}:echo,{FN}:killed",
            f"tracking.uri={uri}",
        ],
        TMPDIR=str(tmp_path),
    )
    stopped = [x for x in proc.stderr.splitlines() if "sweep stopped" in x]
    statuses = {stage: sorted(r.info.status for r in rs) for stage, rs in _by_stage(uri).items()}
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert len(stopped) == 1 and "the launcher failed" in stopped[0] and "TerminatedWorkerError" in stopped[0]
    assert statuses["sweep"] == ["FAILED"] and "RUNNING" not in statuses["full"]


def _slow_jobs_under_way(tmp_path, launcher: str, adapters: str = "base,lora_a", **env: str):
    """A sweep of `slow` jobs, all started: (launcher process, store uri, every process under the
    launcher)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    markers = tmp_path / "started"
    proc = start_slow(
        ["run", "-m", *LAUNCHERS[launcher], f"adapter={adapters}", f"tracking.uri={uri}"],
        markers,
        TMPDIR=str(tmp_path),
        **env,
    )
    wait_for(markers_at_least(markers, len(adapters.split(","))), what="every job to start")
    return proc, uri, psutil.Process(proc.pid).children(recursive=True)


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_sigterm_stops_a_sweep_and_ends_every_run_killed(tmp_path, launcher):
    proc, uri, workers = _slow_jobs_under_way(tmp_path, launcher)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    statuses = {stage: sorted(r.info.status for r in rs) for stage, rs in _by_stage(uri).items()}
    assert proc.returncode == 143, err
    assert statuses == {"sweep": ["KILLED"], "full": ["KILLED", "KILLED"]}
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


def test_joblib_workers_stop_when_the_launcher_is_sigkilled_and_nothing_stays_running(tmp_path):
    proc, uri, workers = _slow_jobs_under_way(tmp_path, "joblib")
    proc.kill()  # the launcher only: SIGKILL cannot be passed on
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=30)
    run(["run", "adapter=lora_b", "prompt=v2", f"tracking.uri={uri}"])  # any later command on the store
    statuses = {stage: sorted(r.info.status for r in rs) for stage, rs in _by_stage(uri).items()}
    assert alive == [] and statuses == {"sweep": ["KILLED"], "full": ["FINISHED", "KILLED", "KILLED"]}


def test_submitit_jobs_outlive_a_sigkilled_launcher_and_nothing_stays_running(tmp_path):
    # As on Slurm, a submitit job belongs to its executor, not to the launching process: it
    # finishes its run; the parent that nobody can end is reaped by the next command.
    proc, uri, workers = _slow_jobs_under_way(tmp_path, "submitit_local", adapters="base", SLOW_SECONDS="2")
    proc.kill()
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=60)
    reap_dead_runs(MlflowClient(uri))  # what the next ragtrack command on the store does first
    statuses = {
        stage: [(r.info.status, r.data.tags.get("ragtrack.reaped")) for r in rs]
        for stage, rs in _by_stage(uri).items()
    }
    assert alive == [] and statuses == {"sweep": [("KILLED", "true")], "full": [("FINISHED", None)]}


def test_bad_tracking_setting_stops_a_sweep_in_one_line_before_any_run(tmp_path):
    db = tmp_path / "mlflow.db"
    proc = run(
        ["run", "-m", "adapter=base,lora_a", "tracking.bootstrap_resamples=0", f"tracking.uri=sqlite:///{db}"]
    )
    assert (proc.returncode, db.exists(), "Traceback" in proc.stderr) == (2, False, False)
    assert "tracking.bootstrap_resamples: Input should be greater than or equal to 1" in proc.stderr


def test_sweep_to_a_tracking_server_that_does_not_answer_is_one_line():
    from ragtrack.app.devserver import free_port

    proc = run(["run", "-m", "adapter=base,lora_a"], MLFLOW_TRACKING_URI=f"http://127.0.0.1:{free_port()}")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "the tracking server does not answer" in lines[0], (
        proc.stderr
    )


# ------------------------------------------------------------------ workers and cores


def _launcher(n_jobs: object):
    from omegaconf import OmegaConf

    return OmegaConf.create({"hydra": {"launcher": {"n_jobs": n_jobs}}})


def test_more_workers_than_cores_is_said():
    import os

    from ragtrack.app.sweep import oversubscribed

    cores = len(os.sched_getaffinity(0))
    assert f"n_jobs={cores + 1} asks for more workers than the {cores} cores here" in oversubscribed(
        _launcher(cores + 1)
    )


@pytest.mark.parametrize("n_jobs", [1, -1, None])
def test_workers_within_the_cores_are_not_a_warning(n_jobs):
    from ragtrack.app.sweep import oversubscribed

    assert oversubscribed(_launcher(n_jobs)) is None
