"""Functions the `callable` generator tests point at (`tests.generators.sample_fns:<name>`)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ragtrack.types import EvalCase


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
    """Sleeps `$SLOW_SECONDS` (60) on its first call in a process, having touched `$SLOW_MARKER/<pid>` (if set)
    so that a test knows the run is under way; later calls answer at once."""
    if os.getpid() not in _slept:
        _slept.add(os.getpid())
        if marker := os.environ.get("SLOW_MARKER"):
            Path(marker, str(os.getpid())).touch()
        time.sleep(float(os.environ.get("SLOW_SECONDS", "60")))
    return ""


not_callable = 3
