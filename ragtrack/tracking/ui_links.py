"""Links into the MLflow UI for what ragtrack logged, by run id so that they open at any number of runs.

A local store is served by `make ui` at `UI`; a server's UI is the server itself. Two
routes take runs by id whatever else the experiment holds: compare-runs (runs side by
side, every metric and param) and a run's Traces tab with `compareToRunUuid` (two runs'
cases side by side, with their assessments). The Evaluation runs page's own link
(`selectedRunUuid=…&compareToRunUuid=…`) does not: it loads the experiment's 50 newest
runs and opens the comparison only when both runs are among them (MLflow 3.17).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

from ragtrack.core.redact import redact_text
from ragtrack.tracking.remote import is_http

__all__ = ["UI", "cases_link", "compare_runs_link", "served_where"]

UI = "http://127.0.0.1:5000"  # where `make ui` serves a local store


def _base(uri: str) -> str:
    return redact_text(uri.rstrip("/")) if is_http(uri) else UI


def served_where(uri: str) -> str:
    """What the reader must start first to open a link to a local store ("" for a server)."""
    return "" if is_http(uri) else " (after `make ui`, or `mlflow ui` on this store)"


def compare_runs_link(uri: str, experiment_id: str, run_ids: Sequence[str]) -> str:
    """The compare-runs page of `run_ids`: every metric and param side by side."""
    runs, experiments = (
        quote(json.dumps(v, separators=(",", ":"))) for v in (list(run_ids), [experiment_id])
    )
    return f"{_base(uri)}/#/compare-runs?runs={runs}&experiments={experiments}"


def cases_link(uri: str, experiment_id: str, run_a: str, run_b: str) -> str:
    """Run B's Traces tab compared to run A: each case one row with both answers and both runs'
    assessments."""
    return f"{_base(uri)}/#/experiments/{experiment_id}/runs/{run_b}/evaluations?compareToRunUuid={run_a}"
