"""The shipped demo and the real processes around it: `ragtrack run`, Ctrl-C, `mlflow run`, `mlflow
server`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.tracking.traces import count_run_traces

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1", **extra)
    return env


def _runs(uri: str, experiment: str | None = None):
    client = MlflowClient(uri)
    if experiment:
        exp = client.get_experiment_by_name(experiment)
        assert exp is not None
        exps = [exp]
    else:
        exps = client.search_experiments()
    return [r for e in exps for r in client.search_runs([e.experiment_id])]


def test_demo_default_run_scores_all_52_cases(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = subprocess.run(
        [BIN / "ragtrack", "run", f"tracking.uri={uri}"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = _runs(uri, "ragtrack-demo")
    assert (run.data.params["n_cases"], run.data.metrics["predictions/n_missing"]) == ("52", 1.0)


def test_demo_best_combination_passes_every_gate(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [BIN / "ragtrack", "run", "adapter=lora_b", "prompt=v2", f"tracking.uri={uri}"]
    subprocess.run(args, cwd=ROOT, env=_env(), check=True, capture_output=True, timeout=300)
    (run,) = _runs(uri, "ragtrack-demo")
    assert run.data.metrics["gate/all"] == 1.0


def _mlflow_run(tmp_path, overrides: str):
    """`mlflow run <repo> --experiment-name ragtrack-demo`, started outside the repo (MLflow puts
    its default artifact root in the current directory)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = subprocess.run(
        [
            BIN / "mlflow",
            "run",
            str(ROOT),
            "--env-manager",
            "local",
            "--experiment-name",
            "ragtrack-demo",
            "-P",
            f"overrides={overrides}",
        ],
        cwd=tmp_path,
        env=_env(MLFLOW_TRACKING_URI=uri),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, _runs(uri)


@pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "ragtrack").exists(), reason="no .venv in the checkout (make builds it)"
)
def test_mlflow_project_runs_with_the_venv_not_activated(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "MLFLOW_TRACKING_URI": uri,
        "RAGTRACK_CACHE_DIR": os.environ.get("RAGTRACK_CACHE_DIR", str(tmp_path)),
    }
    proc = subprocess.run(
        [
            ROOT / ".venv" / "bin" / "mlflow",
            "run",
            str(ROOT),
            "--env-manager",
            "local",
            "-P",
            "overrides=adapter=lora_b prompt=v2",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "command not found" not in proc.stderr, proc.stderr[-2000:]


def test_mlflow_project_run_nests_under_the_project_run(tmp_path):
    _, runs = _mlflow_run(tmp_path, "adapter=lora_b prompt=v2")
    (child,) = [r for r in runs if r.data.tags.get("ragtrack.stage") == "full"]
    assert child.data.tags["mlflow.parentRunId"] in {r.info.run_id for r in runs if r is not child}


def test_mlflow_project_run_console_names_the_true_experiment(tmp_path):
    proc, runs = _mlflow_run(tmp_path, "adapter=lora_b prompt=v2")
    assert "(experiment 'ragtrack-demo')" in proc.stderr and {r.info.experiment_id for r in runs} == {
        MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
        .get_experiment_by_name("ragtrack-demo")
        .experiment_id
    }


def test_mlflow_project_sweep_keeps_every_run_in_one_experiment(tmp_path):
    _, runs = _mlflow_run(tmp_path, "-m adapter=base,lora_a")
    assert (
        len(runs) == 4 and len({r.info.experiment_id for r in runs}) == 1
    )  # project run, sweep parent, 2 jobs


def test_experiment_opens_on_the_runs_table(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    subprocess.run(
        [BIN / "ragtrack", "run", f"tracking.uri={uri}"],
        cwd=ROOT,
        env=_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    exp = MlflowClient(uri).get_experiment_by_name("ragtrack-demo")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [
            BIN / "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'server.db'}",
            "--artifacts-destination",
            str(tmp_path / "server-artifacts"),
            "--workers",
            "1",
        ],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2)
                break
            except OSError as err:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("mlflow server did not start") from err
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_run_logs_to_a_real_mlflow_server(mlflow_server, tmp_path):
    args = [BIN / "ragtrack", "run", "adapter=lora_a"]
    proc = subprocess.run(
        args,
        cwd=ROOT,
        env=_env(MLFLOW_TRACKING_URI=mlflow_server),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = _runs(mlflow_server, "ragtrack-demo")
    artifacts = {f.path for f in MlflowClient(mlflow_server).list_artifacts(run.info.run_id)}
    assert run.data.params["adapter"] == "lora_a" and {"report.md", "cases.parquet"} <= artifacts
    assert (
        count_run_traces(mlflow_server, run.info.experiment_id, run.info.run_id).traces == 52
    )  # per-case traces over REST
