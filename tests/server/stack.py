"""The tracking servers the server-mode tests run against, and reading back what landed in them.

One PostgreSQL cluster and one S3 stand-in serve two `mlflow server`s, each with its own
database and bucket, started side by side once per session (tests/server/conftest.py):
`plain`, and `auth` (MLflow's basic-auth app).
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from ragtrack.app.devserver import ComponentError, MotoS3, Postgres, TrackingServer

ADMIN = "admin"
PASSWORD = f"canary-{secrets.token_hex(10)}"  # the basic-auth admin's password: must never land anywhere


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single line a command that met bad input printed (exit 2, no traceback); fails otherwise."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


class Target:
    """One tracking server under test: its URL, its credentials, where its artifacts land."""

    def __init__(self, server: TrackingServer, s3: MotoS3, bucket: str) -> None:
        self.server, self.s3, self.bucket = server, s3, bucket
        self.prefix = "artifacts"  # the server's artifact destination: s3://<bucket>/artifacts
        self.error: ComponentError | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def credentials(self, password: str | None = None) -> dict[str, str]:
        """MLflow's credential variables for this server (`password` to try a wrong one)."""
        if self.server.auth is None:
            return {}
        return {
            "MLFLOW_TRACKING_USERNAME": self.server.auth[0],
            "MLFLOW_TRACKING_PASSWORD": password or self.server.auth[1],
        }

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a `ragtrack` process logging here."""
        return {"MLFLOW_TRACKING_URI": self.url, **self.credentials(), **extra}

    @contextmanager
    def reading(self) -> Iterator[MlflowClient]:
        """A client reading this server as its admin (MLflow takes credentials from the environment only)."""
        with mock.patch.dict(os.environ, self.credentials()):
            yield MlflowClient(self.url)

    def runs(self, experiment: str) -> list[Run]:
        with self.reading() as client:
            exp = client.get_experiment_by_name(experiment)
            return client.search_runs([exp.experiment_id]) if exp else []

    def artifact_paths(self, run_id: str) -> set[str]:
        """Every file among a run's artifacts, as MLflow lists them (recursively)."""
        with self.reading() as client:
            todo, files = [""], set()
            while todo:
                for f in client.list_artifacts(run_id, todo.pop() or None):
                    (todo.append(f.path) if f.is_dir else files.add(f.path))
            return files

    def bucket_files(self, run: Run) -> set[str]:
        """The run's artifact files as objects in the bucket (paths below
        `<prefix>/<exp>/<run>/artifacts/`)."""
        prefix = f"{self.prefix}/{run.info.experiment_id}/{run.info.run_id}/artifacts/"
        return {k[len(prefix) :] for k in self.s3.keys(self.bucket, prefix)}


class Stack:
    """PostgreSQL + the S3 stand-in + the servers; `start` launches them all, `target` waits for one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pg = Postgres()
        self.s3 = MotoS3(root)
        self.targets: dict[str, Target] = {}

    def start(self) -> None:
        self.pg.start()
        self.s3.start()
        for name, auth in (("plain", None), ("auth", (ADMIN, PASSWORD))):
            bucket = f"ragtrack-{name}"
            self.s3.create_bucket(bucket)
            server = TrackingServer(
                self.root,
                self.pg.create_database(name),
                f"s3://{bucket}/artifacts",
                self.s3.endpoint,
                auth=auth,
                workers=1,
            )
            self.targets[name] = Target(server, self.s3, bucket)
        for t in self.targets.values():
            t.server.launch()

    def target(self, name: str) -> Target:
        """The named server, once it answers; `ComponentError` if it did not start (remembered)."""
        t = self.targets[name]
        if t.error is None:
            try:
                t.server.wait_ready()
            except ComponentError as e:
                t.error = e
        if t.error is not None:
            raise t.error
        return t

    def settle(self) -> None:
        """Wait until no server is starting any more (each answers, or its failure is remembered)."""
        for name in self.targets:
            try:
                self.target(name)
            except ComponentError:
                pass

    def stop(self) -> None:
        with ThreadPoolExecutor() as pool:  # each takes seconds to shut down: side by side
            list(pool.map(lambda t: t.server.stop(), self.targets.values()))
        self.s3.stop()
        self.pg.stop()
