"""A store reached over the network: one line naming the URI when it cannot be used, fast."""

from __future__ import annotations

import os
import time

import pytest

from ragtrack.app.devserver import free_port
from ragtrack.core.errors import InputError
from ragtrack.tracking.remote import RETRY_ENV, check_store, use_restart_budget
from tests.processes import run


def test_uri_that_does_not_answer_is_one_line_and_fails_fast():
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    proc = run(["run"], MLFLOW_TRACKING_URI=url)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert (
        f"error: tracking URI {url}: the tracking server does not answer (Connection refused; 3 attempts)"
        in lines[0]
    )
    assert time.monotonic() - started < 60  # MLflow's own retries take about 4 minutes


def test_database_that_refuses_names_the_uri_without_its_password():
    pytest.importorskip("psycopg", reason="the `server` extra (psycopg) is not installed")
    port = free_port()
    with pytest.raises(InputError) as e:
        check_store(f"postgresql+psycopg://mlflow:hunter2-pw@127.0.0.1:{port}/mlflow")
    assert str(e.value).startswith(
        f"tracking URI postgresql+psycopg://mlflow:***@127.0.0.1:{port}/mlflow: cannot connect"
    )
    assert "Connection refused" in str(e.value) and "hunter2" not in str(e.value)


def test_credentials_in_a_tracking_url_are_refused():
    with pytest.raises(
        InputError, match=r"^tracking URI http://admin:\*\*\*@127.0.0.1:5000: credentials in the URI"
    ):
        check_store("http://admin:hunter2-pw@127.0.0.1:5000")


def test_restart_budget_leaves_the_users_settings(monkeypatch):
    for key in RETRY_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "9")
    use_restart_budget()
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "9"
    assert os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == RETRY_ENV["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"]
