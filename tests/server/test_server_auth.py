"""ragtrack against `mlflow server --app-name basic-auth`: credentials from the environment only.

A representative subset of the server suite (a two-job sweep: parent, children, params,
metrics, dataset inputs, artifacts in the bucket), the admin's password as a canary that
must appear nowhere, and a wrong or missing password as one clear line.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any, cast
from unittest import mock

import pytest
import requests
from mlflow.tracking import MlflowClient

from ragtrack.core.errors import InputError
from ragtrack.tracking.reaper import HOST_TAG, PID_TAG, reap_dead_runs
from ragtrack.tracking.remote import check_store
from tests.processes import run
from tests.server.stack import PASSWORD, Target, one_error_line

EXPERIMENT = "server-auth"


@pytest.fixture(scope="module")
def sweep(auth: Target):
    """`ragtrack run -m adapter=base,lora_a` as the admin: (process, runs)."""
    proc = run(
        ["run", "-m", "adapter=base,lora_a", f"tracking.experiment={EXPERIMENT}"],
        **cast("dict[str, Any]", auth.env()),
    )
    assert proc.returncode == 0, proc.stderr
    return proc, auth.runs(EXPERIMENT)


def test_sweep_lands_with_credentials_from_the_environment(sweep, auth):
    children = [r for r in sweep[1] if r.data.tags["ragtrack.stage"] == "full"]
    assert sorted(r.info.status for r in sweep[1]) == ["FINISHED"] * 3
    assert all(
        r.data.metrics["eval_json_v2/eval_score_avg"] > 0 and r.inputs.dataset_inputs for r in children
    )
    assert all({"report.md", "manifest.json", "config.yaml"} <= auth.bucket_files(r) for r in children)


def _store_text(runs) -> str:
    """Everything the store holds about the runs, as text."""
    parts = []
    for r in runs:
        parts += [r.info.run_name, *r.data.params.items(), *r.data.tags.items(), *r.data.metrics]
        for d in r.inputs.dataset_inputs:
            parts += [
                d.dataset.name,
                d.dataset.source,
                d.dataset.profile or "",
                *(f"{t.key}={t.value}" for t in d.tags),
            ]
    return "\n".join(map(str, parts))


def test_password_reaches_no_console_line_param_tag_or_dataset(sweep):
    proc, runs = sweep
    assert PASSWORD not in proc.stdout + proc.stderr and PASSWORD not in _store_text(runs)


def test_password_reaches_no_artifact_in_the_bucket(sweep, auth):
    s3 = auth.s3.client()
    keys = auth.s3.keys(auth.bucket, auth.prefix + "/")
    leaked = [k for k in keys if PASSWORD.encode() in s3.get_object(Bucket=auth.bucket, Key=k)["Body"].read()]
    assert len(keys) >= 20 and leaked == []


def test_wrong_password_is_one_line_naming_the_uri(auth):
    wrong = "wrong-" + PASSWORD[::-1]
    proc = run(["run", "tracking.experiment=server-auth-wrong"], **auth.env(**auth.credentials(wrong)))
    line = one_error_line(proc)
    assert f"tracking URI {auth.url}: the tracking server refused the credentials of user 'admin'" in line
    assert wrong not in proc.stdout + proc.stderr and auth.runs("server-auth-wrong") == []


def test_missing_credentials_say_which_variables_to_set(auth, monkeypatch):
    for key in auth.credentials():
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(
        InputError, match="requires credentials: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
    ):
        check_store(auth.url)


def test_another_users_dead_run_is_said_and_skipped_not_fatal(auth, caplog):
    """A shared login node: bob's reaping finds admin's run of a vanished process, which bob may not end."""
    bob = ("bob", f"bob-{secrets.token_hex(8)}")
    created = requests.post(
        f"{auth.url}/api/2.0/mlflow/users/create",
        json=dict(zip(("username", "password"), bob, strict=True)),
        auth=auth.server.auth,
        timeout=30,
    )
    created.raise_for_status()
    with auth.reading() as client:
        exp = client.create_experiment("server-auth-admin")
        dead = client.create_run(exp, tags={HOST_TAG: socket.gethostname(), PID_TAG: "999999999"}).info.run_id
    with mock.patch.dict(os.environ, MLFLOW_TRACKING_USERNAME=bob[0], MLFLOW_TRACKING_PASSWORD=bob[1]):
        reaped = reap_dead_runs(MlflowClient(auth.url))  # what bob's next command does first
    with auth.reading() as client:
        assert reaped == [] and client.get_run(dead).info.status == "RUNNING"
    assert f"run {dead} " in caplog.text and "it is not ours to end" in caplog.text
