"""Functions the `callable` generator tests point at (`tests.generators.sample_fns:<name>`)."""

from __future__ import annotations

import time

from ragtrack.types import EvalCase


def echo(case: EvalCase, prompt: str) -> str:
    return f"{case.id}: {prompt}"


def structured(case: EvalCase, prompt: str) -> dict:
    return {"answer": "not in context", "contexts": [{"source_path": "a.md", "text": "t"}], "citations": [1]}


def broken(case: EvalCase, prompt: str) -> str:
    raise ValueError("model server said no")


def wrong_type(case: EvalCase, prompt: str) -> int:
    return 42


def slow(case: EvalCase, prompt: str) -> str:
    time.sleep(60)
    return ""


not_callable = 3
