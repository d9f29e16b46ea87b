"""A team server that cannot be used is one line naming the URI (exit 2, no run left RUNNING);
a server restarted in the middle of a sweep is outlasted: every run lands, fully logged."""

from __future__ import annotations

import pytest

from tests.processes import markers_at_least, run, start, wait_for
from tests.server.stack import Stack, Target, one_error_line

FN = "tests.generators.sample_fns"


@pytest.fixture
def bucket_gone(plain: Target):
    """The plain server's bucket deleted (its objects too) for the test, created again (empty) after it."""
    s3 = plain.s3.client()
    for key in plain.s3.keys(plain.bucket):
        s3.delete_object(Bucket=plain.bucket, Key=key)
    s3.delete_bucket(Bucket=plain.bucket)
    try:
        yield
    finally:
        plain.s3.create_bucket(plain.bucket)


def test_missing_bucket_is_one_line_and_no_run(plain, bucket_gone):
    proc = run(["run", "tracking.experiment=server-nobucket"], **plain.env())
    line = one_error_line(proc)
    assert (
        f"tracking URI {plain.url}: the server's artifact store fails" in line
        and "bucket does not exist" in line
    )
    assert plain.runs("server-nobucket") == []


@pytest.fixture
def database_down(stack: Stack, plain: Target):
    """PostgreSQL stopped (connections refused) for the test, started again after it.

    The server has answered before (a team server runs for a while before its database goes
    away); a server that never reached its database keeps retrying, and does not answer.
    """
    stack.settle()  # no server may be starting (migrating its database) meanwhile
    plain.runs("warm-up")
    stack.pg.pause()
    try:
        yield stack.pg
    finally:
        stack.pg.resume()


def test_server_whose_database_refuses_is_one_line_and_no_run(plain, database_down):
    proc = run(["run", "tracking.experiment=server-dbdown"], **plain.env())
    line = one_error_line(proc)
    assert (
        f"tracking URI {plain.url}: the tracking server answered HTTP 503" in line
        and "Connection refused" in line
    )
    database_down.resume()
    assert plain.runs("server-dbdown") == []


def test_sweep_lands_whole_when_the_server_restarts_mid_run(plain, tmp_path):
    markers, gate = tmp_path / "started", tmp_path / "go"
    markers.mkdir()
    proc = start(
        [
            "run",
            "-m",
            "adapter=base,lora_a",
            "generator=callable",
            f"generator.params.target={FN}:gated",
            "tracking.experiment=server-restart",
        ],
        SLOW_MARKER=str(markers),
        GATE_FILE=str(gate),
        **plain.env(),
    )
    wait_for(markers_at_least(markers), what="the first job's run to start")
    plain.server.stop()
    gate.touch()  # the job scores now and logs into a server that is down
    plain.server.start()
    _, err = proc.communicate(timeout=300)
    runs = plain.runs("server-restart")
    children = [r for r in runs if r.data.tags["ragtrack.stage"] == "full"]
    assert proc.returncode == 0 and "Retrying" in err, err  # urllib3 says each retry
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 3
    assert all(
        "gate/all" in r.data.metrics and {"report.md", "manifest.json"} <= plain.bucket_files(r)
        for r in children
    )
