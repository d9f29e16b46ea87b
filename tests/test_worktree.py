"""The work tree stays clean: ragtrack writes its store, artifacts and Hydra folders where git ignores
them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.processes import ROOT, run

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)


def _git(*args: str, cwd=ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_no_run_output_is_committed():
    assert _git("ls-files", "mlruns", "mlartifacts", "mlflow.db", ".ragtrack", "outputs", "multirun") == ""


def test_fresh_clone_stays_clean_after_runs_sweeps_and_failures(tmp_path):
    clone = tmp_path / "clone"
    _git("clone", "-q", str(ROOT), str(clone))
    commands = [
        ["run"],  # the default run, into ./mlflow.db
        ["run", "-m", "adapter=base,lora_b", "prompt=v2"],  # a sweep
        ["run", "experiment=staged_demo", "adapter=lora_b", "prompt=v2"],
        ["run", "generator.params.path=nope.jsonl"],  # bad input
        ["run", "adaptr=lora_b"],  # a typo
    ]
    for args in commands:
        run(args, cwd=clone, PYTHONPATH=str(clone), TMPDIR=str(tmp_path))
    assert (clone / "mlflow.db").exists() and _git("status", "--porcelain", cwd=clone) == ""
