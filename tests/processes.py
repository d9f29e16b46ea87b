"""Real `ragtrack` processes for tests: start them in the demo, wait for run states, read runs back."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parent.parent
RAGTRACK = [sys.executable, "-m", "ragtrack.app.cli"]
PR_SET_PDEATHSIG = 1  # prctl(2)
SLOW = "generator=callable generator.params.target=tests.generators.sample_fns:slow".split()


def env(**extra: str) -> dict[str, str]:
    """The environment without MLflow/ragtrack variables of the calling process, tests importable."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    out.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    out.update(extra)
    return out


def die_with_parent() -> None:
    """In a child, before exec: SIGTERM when the test process dies (Linux), even SIGKILLed by `timeout -k`.

    A child in its own process group is out of reach of the signal `timeout` sends the test's group.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def as_foreground_job(ignore: tuple[signal.Signals, ...] = ()) -> Callable[[], None]:
    """A child's set-up before exec: it dies with its parent (`die_with_parent`), and SIGINT and SIGHUP
    are at their defaults, as in a job a terminal starts, whatever the test runner inherited (a CI job
    started in the background ignores SIGINT, and so would every process it starts); `ignore` ignores
    some, as `nohup` or a script's `cmd &` does."""

    def setup() -> None:
        die_with_parent()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        for sig in (signal.SIGINT, signal.SIGHUP):
            libc.signal(sig, int(signal.SIG_IGN if sig in ignore else signal.SIG_DFL))

    return setup


def start(args: list[str], *, cwd: Path = ROOT, **extra_env: str) -> subprocess.Popen[str]:
    """`ragtrack <args>` in its own process group, output captured, as a terminal's job
    (`as_foreground_job`); it ends when the test process does."""
    return _popen(args, cwd, env(**extra_env), as_foreground_job())


def _popen(
    args: list[str], cwd: Path, environment: dict[str, str], setup: Callable[[], None]
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*RAGTRACK, *args],
        cwd=cwd,
        env=environment,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=setup,
    )


def run(
    args: list[str], *, cwd: Path = ROOT, timeout: float = 300, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RAGTRACK, *args], cwd=cwd, env=env(**extra_env), text=True, capture_output=True, timeout=timeout
    )


def runs(uri: str) -> list:
    """Every run of every experiment in the store."""
    client = MlflowClient(uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    return client.search_runs(ids) if ids else []


def wait_for(predicate: Callable[[], bool], timeout: float = 120, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:  # the store may not exist yet
            pass
        time.sleep(0.3)
    raise TimeoutError(f"timed out waiting for {what}")


def start_slow(args: list[str], markers: Path, **extra_env: str) -> subprocess.Popen[str]:
    """`ragtrack <args>` with the `slow` generator, which touches `markers/<pid>` once its run is under way.

    Tests wait for the marker, not by polling the store: a second client creating the
    store while the process migrates it would be a race of the test's own making.
    """
    return _slow(args, markers, as_foreground_job(), extra_env)


def start_slow_ignoring(
    args: list[str], markers: Path, ignore: tuple[signal.Signals, ...]
) -> subprocess.Popen[str]:
    """`start_slow`, started ignoring the signals `ignore`, as `nohup` or a script's `cmd &` starts it."""
    return _slow(args, markers, as_foreground_job(ignore), {})


def _slow(
    args: list[str], markers: Path, setup: Callable[[], None], extra_env: dict[str, str]
) -> subprocess.Popen[str]:
    markers.mkdir(exist_ok=True)
    return _popen([*args, *SLOW], ROOT, env(SLOW_MARKER=str(markers), **extra_env), setup)


def markers_at_least(markers: Path, n: int = 1) -> Callable[[], bool]:
    return lambda: len(list(markers.iterdir())) >= n
