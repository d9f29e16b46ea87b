"""A SIGKILLed owner leaves no server behind: real PostgreSQL, moto and `mlflow server` started by a process
we kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.processes import ROOT, env

# The owner: the stack's components started the way the fixtures and `make server` start them, then idle.
OWNER = """
import json, sys, time
from pathlib import Path
from ragtrack.app.devserver import MotoS3, Postgres, TrackingServer
root = Path(sys.argv[1])
pg = Postgres(); pg.start()
s3 = MotoS3(root); s3.start(); s3.create_bucket("guarded")
server = TrackingServer(root, pg.create_database("m"), "s3://guarded/a", s3.endpoint, workers=1)
server.start()
postmaster = int((pg.dir / "data" / "postmaster.pid").read_text().split()[0])
print(json.dumps({"pids": [postmaster, s3.proc.pid, server.proc.pid], "pg_dir": str(pg.dir)}), flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def killed_owner(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("owner")
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(root)],
        cwd=ROOT,
        env=env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert owner.stdout is not None and owner.stderr is not None
    line = owner.stdout.readline()
    if not line:
        pytest.skip(f"the stack did not start: {owner.stderr.read()[-500:]}")
    started = json.loads(line)
    groups = [os.getpgid(pid) for pid in started["pids"]]
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (_left(groups) or Path(started["pg_dir"]).exists()):
        time.sleep(0.5)
    return {**started, "groups": groups, "left": _left(groups)}


def _left(groups: list[int]) -> list[str]:
    """The live processes of `groups` (a zombie holds no port and no file: it is gone)."""
    left = []
    for p in psutil.process_iter(["status", "cmdline"]):
        try:
            if os.getpgid(p.pid) in groups and p.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:80]}")
        except (ProcessLookupError, psutil.Error):
            continue
    return left


def test_no_process_of_a_killed_owners_servers_is_left(killed_owner):
    assert killed_owner["left"] == []


def test_a_killed_owners_postgres_folder_is_removed(killed_owner):
    assert not Path(killed_owner["pg_dir"]).exists()
