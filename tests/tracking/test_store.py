"""Several processes sharing one SQLite store: real `ragtrack run` processes, real SQLite, no mocks.

The simultaneous processes all score the demo's eval set, so besides racing the schema
migration of a fresh store they race to log the same new eval-set version as a dataset
input.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, cast

import pytest
from filelock import FileLock, Timeout
from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ragtrack.tracking.store import is_conflict, lock_path, log_inputs_idempotent, open_client, sqlite_path

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent
EXPERIMENT = "ragtrack-demo"
COMBOS = list(product(("base", "lora_a", "lora_b"), ("v1", "v2")))
# stages.dev_seed: unused by the single stage, it only doubles the sweep's jobs (12, more than its 8 workers)
SEEDS = ("0", "1")
ARTIFACTS = {
    "cases.parquet",
    "cases_table.json",
    "report.md",
    "manifest.json",
    "config.yaml",
    "inputs/0/questions.json",
    "inputs/1/qaset.json",
    "reports/eval_json_v2.md",
    "reports/refusal_citation.md",
}


# ------------------------------------------------------------------ real processes


@dataclass(frozen=True)
class Finished:
    """A `ragtrack run` process that has exited."""

    returncode: int
    output: str


@dataclass(frozen=True)
class Store:
    """A store the processes of one fixture wrote to."""

    uri: str
    db: Path
    processes: list[Finished]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [BIN / "ragtrack", "run", *args], cwd=ROOT, env=_env(), stdout=out, stderr=subprocess.STDOUT
        )


def _wait(procs: list[tuple[subprocess.Popen[bytes], Path]]) -> list[Finished]:
    return [Finished(p.wait(timeout=900), log.read_text(errors="replace")) for p, log in procs]


@pytest.fixture(scope="module")
def simultaneous(tmp_path_factory) -> Store:
    """Six `ragtrack run`s (3 adapters x 2 prompts, one eval set) started at once on a fresh directory."""
    tmp = tmp_path_factory.mktemp("simultaneous")
    db = tmp / "store" / "mlflow.db"  # the directory does not exist yet either
    uri = f"sqlite:///{db}"
    procs = [
        (
            _start(
                [f"adapter={a}", f"prompt={p}", f"tracking.uri={uri}", f"hydra.run.dir={tmp / f'hydra{i}'}"],
                tmp / f"{i}.log",
            ),
            tmp / f"{i}.log",
        )
        for i, (a, p) in enumerate(COMBOS)
    ]
    return Store(uri, db, _wait(procs))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Store:
    """A 12-job `hydra/launcher=joblib` sweep with 8 parallel jobs on a fresh store."""
    tmp = tmp_path_factory.mktemp("sweep")
    db = tmp / "mlflow.db"
    uri = f"sqlite:///{db}"
    args = [
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=8",
        "adapter=base,lora_a,lora_b",
        "prompt=v1,v2",
        f"stages.dev_seed={','.join(SEEDS)}",
        f"tracking.uri={uri}",
        f"hydra.sweep.dir={tmp / 'hydra'}",
    ]
    return Store(uri, db, _wait([(_start(args, tmp / "sweep.log"), tmp / "sweep.log")]))


@pytest.fixture(scope="module")
def expected_metrics() -> dict[tuple[str, str], int]:
    """Metrics each demo combination logs: its non-NaN aggregates and its timings, scored in-process without
    MLflow."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from ragtrack.app.hydra_app import CONF_DIR
    from ragtrack.inputs.config import RunConfig
    from ragtrack.run.runner import run_job

    out = {}
    cwd = os.getcwd()
    os.chdir(ROOT)  # the demo's paths are relative to the repository
    try:
        for a, p in COMBOS:
            with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
                cfg = compose("config", overrides=[f"adapter={a}", f"prompt={p}", "tracking.enabled=false"])
            (result,) = run_job(
                RunConfig.from_container(cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=True)))
            )
            out[a, p] = sum(not math.isnan(v) for v in result.metrics.values()) + len(result.timings)
    finally:
        os.chdir(cwd)
    return out


def _runs(store: Store, stage: str = "full"):
    client = MlflowClient(store.uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    assert exp is not None
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("ragtrack.stage") == stage]


def _combo(run) -> tuple[str, str]:
    return run.data.params["adapter"], run.data.params["prompt_version"]


def _artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for f in client.list_artifacts(run_id, path):
        out |= _artifacts(client, run_id, f.path) if f.is_dir else {f.path}
    return out


def _missing_artifacts(store: Store) -> dict[str, set[str]]:
    client = MlflowClient(store.uri)
    missing = {}
    for run in _runs(store):
        adapter, prompt = _combo(run)
        lacking = ARTIFACTS | {f"prompt/{prompt}.md", f"predictions/{adapter}__{prompt}.jsonl"}
        lacking -= _artifacts(client, run.info.run_id)
        if lacking:
            missing[run.info.run_id] = lacking
    return missing


def _alembic_tmp_tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE name LIKE '_alembic_tmp_%'")]


def test_every_simultaneous_process_succeeds(simultaneous):
    assert [p.returncode for p in simultaneous.processes] == [0] * len(COMBOS), "\n".join(
        p.output[-3000:] for p in simultaneous.processes
    )


def test_every_simultaneous_process_lands_one_finished_run(simultaneous):
    runs = _runs(simultaneous)
    assert sorted((_combo(r), r.info.status) for r in runs) == sorted((c, "FINISHED") for c in COMBOS)


def test_every_simultaneous_run_has_all_its_metrics(simultaneous, expected_metrics):
    assert {_combo(r): len(r.data.metrics) for r in _runs(simultaneous)} == expected_metrics


def test_simultaneous_runs_share_one_dataset_per_eval_file(simultaneous):
    runs = _runs(simultaneous)
    datasets = {(d.dataset.name, d.dataset.digest) for r in runs for d in r.inputs.dataset_inputs}
    assert (len(datasets), [len(r.inputs.dataset_inputs) for r in runs]) == (2, [2] * len(COMBOS))


def test_every_simultaneous_run_has_its_artifacts(simultaneous):
    assert _missing_artifacts(simultaneous) == {}


def test_simultaneous_processes_make_one_version_per_configuration(simultaneous):
    client = MlflowClient(simultaneous.uri)
    models = client.search_logged_models([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    combos = [(m.params["adapter_id"], m.params["prompt_version"]) for m in models]
    assert (len(combos), len(set(combos))) == (len(COMBOS), len(COMBOS))


def test_simultaneous_processes_register_each_prompt_content_once(simultaneous):
    versions = MlflowClient(simultaneous.uri).search_prompt_versions(f"{EXPERIMENT}-prompt")
    assert sorted(v.tags["ragtrack.prompt_version"] for v in versions) == ["v1", "v2"]


def test_simultaneous_processes_create_one_evaluation_dataset(simultaneous):
    client = MlflowClient(simultaneous.uri)
    datasets = client.search_datasets(
        experiment_ids=[client.get_experiment_by_name(EXPERIMENT).experiment_id]
    )
    assert len(datasets) == 1


def test_simultaneous_processes_leave_no_half_migrated_table(simultaneous):
    assert _alembic_tmp_tables(simultaneous.db) == []


def test_store_takes_a_further_run_afterwards(simultaneous, tmp_path):
    args = [
        "tracking.experiment=afterwards",
        f"tracking.uri={simultaneous.uri}",
        f"hydra.run.dir={tmp_path / 'hydra'}",
    ]
    (after,) = _wait([(_start(args, tmp_path / "after.log"), tmp_path / "after.log")])
    client = MlflowClient(simultaneous.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("afterwards").experiment_id])
    assert (after.returncode, run.info.status) == (0, "FINISHED")


def test_joblib_sweep_succeeds(sweep):
    assert sweep.processes[0].returncode == 0, sweep.processes[0].output[-5000:]


def test_joblib_sweep_has_one_finished_parent(sweep):
    assert [r.info.status for r in _runs(sweep, "sweep")] == ["FINISHED"]


def test_all_12_sweep_jobs_finish_under_the_parent(sweep):
    (parent,) = _runs(sweep, "sweep")
    children = _runs(sweep)
    jobs = {r.data.tags["ragtrack.hydra_overrides"] for r in children}
    assert (len(jobs), {(r.info.status, r.data.tags["mlflow.parentRunId"]) for r in children}) == (
        len(COMBOS) * len(SEEDS),
        {("FINISHED", parent.info.run_id)},
    )


def test_every_sweep_job_has_all_its_metrics(sweep, expected_metrics):
    assert {(_combo(r), len(r.data.metrics)) for r in _runs(sweep)} == set(expected_metrics.items())


def test_sweep_jobs_of_one_configuration_share_one_version(sweep):
    client = MlflowClient(sweep.uri)
    exp = client.get_experiment_by_name(EXPERIMENT).experiment_id
    keys = [m.tags["ragtrack.version_key"] for m in client.search_logged_models([exp])]
    assert (len(keys), len(set(keys))) == (
        6,
        6,
    )  # 12 jobs, 6 configurations (the seed is unused by a single stage)


def test_every_sweep_job_has_its_artifacts(sweep):
    assert _missing_artifacts(sweep) == {}


# ------------------------------------------------------------------ open_client


def test_open_client_holds_the_lock_beside_the_database_while_it_creates_the_store(tmp_path):
    db = tmp_path / "mlflow.db"
    worker = threading.Thread(target=open_client, args=(f"sqlite:///{db}",))
    worker.start()
    while not list(tmp_path.glob("mlflow.db.creating-*")) and worker.is_alive():  # the schema is being built
        time.sleep(0.005)
    try:
        FileLock(lock_path(db), timeout=0).acquire()
        held = False
    except Timeout:
        held = True
    worker.join(timeout=120)
    assert (held, lock_path(db).name) == (True, "mlflow.db.lock")


def test_open_client_puts_a_sqlite_store_in_wal_mode(tmp_path):
    open_client(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with sqlite3.connect(tmp_path / "mlflow.db") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_open_client_creates_the_database_directory(tmp_path):
    open_client(f"sqlite:///{tmp_path / 'a' / 'b' / 'mlflow.db'}").search_experiments()
    assert (tmp_path / "a" / "b" / "mlflow.db").is_file()


def test_open_client_is_cached_per_uri(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert open_client(uri) is open_client(uri)


@pytest.mark.parametrize(
    "uri", ["http://127.0.0.1:5000", "postgresql://u@h/db", "sqlite:///:memory:", "sqlite://"]
)
def test_only_sqlite_files_get_a_lock(uri):
    assert sqlite_path(uri) is None


def test_relative_sqlite_path_is_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///sub/mlflow.db") == tmp_path.resolve() / "sub" / "mlflow.db"


# ------------------------------------------------------------------ dataset inputs


def _dataset(name: str) -> DatasetInput:
    ds = Dataset(
        name=name, digest=uuid.uuid4().hex[:36], source_type="local", source=json.dumps({"uri": "file:///x"})
    )
    return DatasetInput(ds, [InputTag("mlflow.data.context", "eval")])


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> MlflowClient:
    """One store for these tests (creating one takes seconds); each test works in an experiment of its own."""
    return open_client(f"sqlite:///{tmp_path_factory.mktemp('inputs') / 'mlflow.db'}")


def _new_runs(client: MlflowClient, n: int) -> list[str]:
    exp = client.create_experiment(f"e-{uuid.uuid4().hex}")
    return [client.create_run(exp).info.run_id for _ in range(n)]


def _n_datasets(client: MlflowClient, run_id: str) -> int:
    """Dataset rows of the run's experiment."""
    exp = client.get_run(run_id).info.experiment_id
    path = sqlite_path(client.tracking_uri)
    assert path is not None
    with sqlite3.connect(path) as con:
        return con.execute("SELECT COUNT(*) FROM datasets WHERE experiment_id = ?", (exp,)).fetchone()[0]


def _at_once(n: int, fn) -> list[BaseException]:
    """Call `fn(i)` for i < n from n threads released together; the exceptions they raised."""
    barrier, errors = threading.Barrier(n), []

    def go(i: int) -> None:
        barrier.wait()
        try:
            fn(i)
        except BaseException as e:  # collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_logging_the_same_inputs_twice_keeps_one_dataset_and_one_input(client):
    (run_id,) = _new_runs(client, 1)
    inputs = [_dataset("questions")]
    log_inputs_idempotent(client, run_id, inputs)
    log_inputs_idempotent(client, run_id, inputs)
    assert (_n_datasets(client, run_id), len(client.get_run(run_id).inputs.dataset_inputs)) == (1, 1)


def test_runs_logging_a_new_dataset_at_once_all_link_to_one_row(client):
    run_ids = _new_runs(client, 8)
    inputs = [_dataset("questions"), _dataset("qaset")]
    errors = _at_once(len(run_ids), lambda i: log_inputs_idempotent(client, run_ids[i], inputs))
    per_run = [len(client.get_run(r).inputs.dataset_inputs) for r in run_ids]
    assert (errors, _n_datasets(client, run_ids[0]), per_run) == ([], 2, [2] * len(run_ids))


def test_concurrent_calls_for_one_run_leave_one_input(client):
    (run_id,) = _new_runs(client, 1)
    inputs = [_dataset("questions")]
    errors = _at_once(6, lambda _: log_inputs_idempotent(client, run_id, inputs))
    assert (errors, len(client.get_run(run_id).inputs.dataset_inputs)) == ([], 1)


def test_an_error_other_than_a_conflict_is_raised(client):
    (run_id,) = _new_runs(client, 1)
    client.delete_run(run_id)
    with pytest.raises(MlflowException, match="active"):
        log_inputs_idempotent(client, run_id, [_dataset("questions")])


@pytest.mark.parametrize(
    "message",
    [
        "(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, datasets.name, "
        "datasets.digest",
        '(psycopg.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk"',
        "(pymysql.err.IntegrityError) (1062, \"Duplicate entry '1-questions-abc' for key "
        "'datasets.PRIMARY'\")",
    ],
)
def test_unique_violations_of_each_backend_are_conflicts(message):
    assert is_conflict(MlflowException(message))


def test_a_missing_run_is_not_a_conflict():
    assert not is_conflict(MlflowException("Run with id=abc not found"))
