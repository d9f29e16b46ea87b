"""Functions the `callable` generator tests point at (`tests.generators.sample_fns:<name>`)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ragtrack.core.types import EvalCase


def echo(case: EvalCase, prompt: str) -> str:
    return f"{case.id}: {prompt}"


def structured(case: EvalCase, prompt: str) -> dict:
    return {"answer": "not in context", "contexts": [{"source_path": "a.md", "text": "t"}], "citations": [1]}


def broken(case: EvalCase, prompt: str) -> str:
    raise ValueError("model server said no")


def killed(case: EvalCase, prompt: str) -> str:
    """The job's process dies as under the OOM killer."""
    os.kill(os.getpid(), signal.SIGKILL)
    return ""


def wrong_type(case: EvalCase, prompt: str) -> int:
    return 42


_slept: set[int] = set()


def slow(case: EvalCase, prompt: str) -> str:
    """Sleeps `$SLOW_SECONDS` (60) on its first call in a process, having touched `$SLOW_MARKER/<pid>` (if
    set) so that a test knows the run is under way; later calls answer at once."""
    if os.getpid() not in _slept:
        _slept.add(os.getpid())
        if marker := os.environ.get("SLOW_MARKER"):
            Path(marker, str(os.getpid())).touch()
        time.sleep(float(os.environ.get("SLOW_SECONDS", "60")))
    return ""


not_callable = 3


def gated(case: EvalCase, prompt: str) -> str:
    """Like `echo`, once the file `$GATE_FILE` exists (waits at most 120 s); first touches
    `$SLOW_MARKER/<pid>`.

    A test holds a run at this point (created, params logged, nothing else) to act on the store meanwhile.
    """
    if marker := os.environ.get("SLOW_MARKER"):
        Path(marker, str(os.getpid())).touch()
    gate = Path(os.environ["GATE_FILE"])
    deadline = time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return echo(case, prompt)
