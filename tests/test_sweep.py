"""The tracked sweeper under the joblib launcher: failures counted in the launching process, signals stop everything."""

from __future__ import annotations

import signal

import psutil

from tests.processes import markers_at_least, run, runs, start_slow, wait_for

FN = "tests.generators.sample_fns"
JOBLIB = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=4"]


def _by_stage(uri):
    out: dict[str, list] = {}
    for r in runs(uri):
        out.setdefault(r.data.tags["ragtrack.stage"], []).append(r)
    return out


def test_one_failing_job_among_ten_under_joblib(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    targets = ",".join([f"{FN}:echo"] * 9 + [f"{FN}:broken"])
    proc = run(["run", "-m", *JOBLIB, "generator=callable", f"generator.params.target={targets}", f"tracking.uri={uri}"])
    stages = _by_stage(uri)
    (parent,) = stages["sweep"]
    children = sorted(r.info.status for r in stages["full"])
    assert proc.returncode == 1, proc.stderr
    assert children == ["FAILED"] + ["FINISHED"] * 9
    assert (parent.info.status, parent.data.tags["ragtrack.failed_jobs"]) == ("FAILED", "1")


def test_bad_input_job_under_joblib_is_reported_not_fatal(tmp_path):
    # InputError crosses the process boundary pickled; a good job beside it still finishes.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = run(["run", "-m", *JOBLIB, "generator.params.path=experiments/demo/predictions/base__v1.jsonl,nope.jsonl",
                f"tracking.uri={uri}"])
    stages = _by_stage(uri)
    assert [r.info.status for r in stages["full"]] == ["FINISHED"]
    assert "failed: InputError: nope.jsonl: file not found" in proc.stderr and "Traceback" not in proc.stderr


def _two_slow_jobs_under_way(tmp_path):
    """A joblib sweep of two `slow` jobs, both started: (launcher process, store uri, worker processes)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    markers = tmp_path / "started"
    proc = start_slow(["run", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "adapter=base,lora_a",
                       f"tracking.uri={uri}"], markers)
    wait_for(markers_at_least(markers, 2), what="both jobs to start")
    return proc, uri, [psutil.Process(int(p.name)) for p in markers.iterdir()]


def test_sigterm_stops_a_joblib_sweep_and_ends_every_run_killed(tmp_path):
    proc, uri, workers = _two_slow_jobs_under_way(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    statuses = {stage: sorted(r.info.status for r in rs) for stage, rs in _by_stage(uri).items()}
    assert proc.returncode == 143, err
    assert statuses == {"sweep": ["KILLED"], "full": ["KILLED", "KILLED"]}
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


def test_workers_stop_when_the_launcher_is_sigkilled_and_nothing_stays_running(tmp_path):
    proc, uri, workers = _two_slow_jobs_under_way(tmp_path)
    proc.kill()  # the launcher only: SIGKILL cannot be passed on
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=30)
    run(["run", "adapter=lora_b", "prompt=v2", f"tracking.uri={uri}"])  # any later command on the store
    statuses = {stage: sorted(r.info.status for r in rs) for stage, rs in _by_stage(uri).items()}
    assert alive == [] and statuses == {"sweep": ["KILLED"], "full": ["FINISHED", "KILLED", "KILLED"]}
