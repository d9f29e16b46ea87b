"""Signals end runs KILLED with the shell's exit code: real `ragtrack run` processes, a real SQLite store."""

from __future__ import annotations

import signal
import time

import pytest

from ragtrack.core.termination import Terminated, exit_code, handle_termination
from tests.processes import markers_at_least, runs, start_slow, start_slow_ignoring, wait_for


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_signal_ends_the_run_killed_with_exit_code(tmp_path, sig, code):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_slow(["run", f"tracking.uri={uri}"], tmp_path / "started")
    wait_for(markers_at_least(tmp_path / "started"), what="the run to start")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    (r,) = runs(uri)
    assert (proc.returncode, r.info.status) == (code, "KILLED"), err


def test_ctrl_c_is_one_line_without_traceback(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_slow(["run", f"tracking.uri={uri}"], tmp_path / "started")
    wait_for(markers_at_least(tmp_path / "started"), what="the run to start")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    (r,) = runs(uri)
    assert (proc.returncode, err.strip().splitlines()[-1]) == (
        130,
        f"ragtrack: interrupted: run {r.info.run_id} ended KILLED",
    )
    assert "Traceback" not in err


def test_ctrl_c_before_any_run_exists_says_none_was_logged(tmp_path):
    # 1 s in, ragtrack is still starting (a run exists after 3-4 s): the Ctrl-C waits for the imports and
    # for Hydra's composition (`termination.hold`); should a run exist, the line must name it. A shell
    # reports exit 130 both for a process that exits 130 and for one a SIGINT ends: once the line is
    # printed, Python ends a few of these by SIGINT (1 of 23 trials under load; why is not understood)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_slow(["run", f"tracking.uri={uri}"], tmp_path / "started")
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    logged = runs(uri) if (tmp_path / "mlflow.db").exists() else []
    said = f"run {logged[0].info.run_id} ended KILLED" if logged else "no run was logged"
    assert proc.returncode in (130, -signal.SIGINT), err
    assert err.strip().splitlines()[-1] == f"ragtrack: interrupted: {said}"


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT], ids=["SIGHUP", "SIGINT"])
def test_a_signal_the_run_was_started_ignoring_stays_ignored(tmp_path, sig):
    # `nohup ragtrack run` ignores SIGHUP, a script's `ragtrack run &` SIGINT: neither may end the run
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_slow_ignoring(["run", f"tracking.uri={uri}"], tmp_path / "started", (sig,))
    wait_for(markers_at_least(tmp_path / "started"), what="the run to start")
    proc.send_signal(sig)
    time.sleep(2.0)
    still_running = proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert (still_running, proc.returncode) == (True, 143)


def test_exit_codes_follow_the_shell():
    assert [
        exit_code(Terminated(signal.SIGTERM)),
        exit_code(Terminated(signal.SIGHUP)),
        exit_code(KeyboardInterrupt()),
    ] == [143, 129, 130]


def test_sigterm_inside_the_block_raises_terminated():
    import os

    with pytest.raises(Terminated), handle_termination():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 1)  # give the handler a chance to run


def test_second_signal_is_held_back_during_cleanup():
    import os

    cleaned = []
    with pytest.raises(Terminated), handle_termination():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 1)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # e.g. a second `kill`: must not interrupt the clean-up
            signal.sigtimedwait([], 1)
            cleaned.append(True)
    assert cleaned == [True]


def test_a_signal_held_during_start_up_is_raised_on_release():
    import os

    from ragtrack.core.termination import hold, release

    held = []
    with pytest.raises(Terminated), handle_termination():
        hold()
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 1)
        held.append("start-up went on")
        release()
    assert held == ["start-up went on"]


def test_handlers_are_restored_after_the_block():
    before = signal.getsignal(signal.SIGTERM)
    with handle_termination():
        pass
    assert signal.getsignal(signal.SIGTERM) is before


def test_signal_inside_a_deferred_block_is_raised_when_it_ends():
    import os

    from ragtrack.core.termination import deferred

    done = []
    with pytest.raises(Terminated), handle_termination():
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 1)
            done.append("the block ran to its end")
    assert done == ["the block ran to its end"]
