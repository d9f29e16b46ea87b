"""Concurrent `ragtrack run`s against one fresh SQLite store: does every run land?

    python bench/stress_store.py [--trials 5] [--procs 6] [--sweeps 1] [--existing-store] [--root DIR]

Each trial starts `--procs` real `ragtrack run` processes at once (the demo's adapter x
prompt combinations, all on the same eval set) on a fresh directory, then reads the
store back with plain `sqlite3` (not MLflow, which would try to migrate a broken store)
and prints: runs FINISHED / expected, runs with the wrong number of metrics, dataset
inputs or artifacts, the failures with their error lines, "database is locked" lines,
wall time, and whether the store is usable afterwards (no `_alembic_tmp_*` table, and a
further `ragtrack run` succeeds). `--sweeps N` adds N 24-job
`hydra/launcher=joblib hydra.launcher.n_jobs=8` sweeps, each on a fresh store.
`--existing-store` creates each store (with one run in another experiment) before the
processes start, which leaves only the races after migration: the dataset inputs of a
new eval-set version, and write contention.

`--root` points at another checkout (e.g. an export of an older commit) to measure its
code instead of this one. The exit status is 1 when anything was lost.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from urllib.parse import unquote, urlparse

ADAPTERS = ("base", "lora_a", "lora_b")
PROMPTS = ("v1", "v2")
SWEEP_KEY = ("stages.dev_seed", ("0", "1", "2", "3"))  # unused by the single stage: only multiplies the jobs
EXPERIMENT = "ragtrack-demo"
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
ERROR_LINE = re.compile(
    r"(Error|Exception|UNIQUE constraint|already exists|duplicate column|expected to match)"
)
LOCKED = "database is locked"


@dataclass(frozen=True)
class Job:
    """One `ragtrack run` process of a trial."""

    adapter: str
    prompt: str


@dataclass
class RunRow:
    """One run as read back from the store."""

    run_id: str
    experiment: str
    status: str
    stage: str
    parent: str | None
    adapter: str | None
    prompt: str | None
    n_metrics: int
    n_inputs: int
    artifacts: set[str]


@dataclass
class StoreState:
    """What a trial left behind."""

    runs: list[RunRow] = field(default_factory=list)
    n_datasets: int = 0
    alembic_tmp: list[str] = field(default_factory=list)
    error: str | None = None  # the store could not even be read


@dataclass
class Trial:
    """The figures of one trial."""

    name: str
    expected: int
    wall_s: float
    state: StoreState
    failures: list[str]
    locked_lines: int
    usable: bool
    usable_error: str = ""

    def lost(self, n_metrics: int) -> list[str]:
        """Every way this trial fell short, one line each (empty: all landed)."""
        out = []
        full = [r for r in self.state.runs if r.stage == "full"]
        finished = [r for r in full if r.status == "FINISHED"]
        if len(finished) != self.expected or len(full) != self.expected:
            out.append(f"{len(finished)}/{self.expected} runs FINISHED ({len(full)} created)")
        for r in finished:
            problems = []
            if r.n_metrics != n_metrics:
                problems.append(f"{r.n_metrics} metrics")
            if r.n_inputs != 2:
                problems.append(f"{r.n_inputs} dataset inputs")
            missing = _expected_artifacts(r) - r.artifacts
            if missing:
                problems.append(f"missing artifacts {sorted(missing)}")
            if problems:
                out.append(f"run {r.adapter}-{r.prompt}: " + ", ".join(problems))
        if self.state.n_datasets != 2:
            out.append(f"{self.state.n_datasets} dataset rows (expected 2)")
        if self.state.alembic_tmp:
            out.append(f"left-over tables {self.state.alembic_tmp}")
        if not self.usable:
            out.append(f"store unusable afterwards: {self.usable_error}")
        return out


def _expected_artifacts(r: RunRow) -> set[str]:
    return ARTIFACTS | {f"prompt/{r.prompt}.md", f"predictions/{r.adapter}__{r.prompt}.jsonl"}


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(PYTHONPATH=str(root), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


def _ragtrack(root: Path, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "ragtrack.app.cli", "run", *args],
            cwd=root,
            env=_env(root),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _error_lines(text: str) -> list[str]:
    """The distinctive lines of a failed process's output (the last line of each traceback and the like)."""
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ERROR_LINE.search(ln) and not ln.startswith((" ", "\t", "Error executing job"))
    ]
    return list(dict.fromkeys(ln[:300] for ln in lines))[-3:]


def read_store(db: Path) -> StoreState:
    """Runs, metrics, inputs and artifacts straight from the SQLite file and the artifact dirs."""
    state = StoreState()
    if not db.exists():
        state.error = "no database file"
        return state
    con = sqlite3.connect(db, timeout=60)  # read-write open: a read-only one fails on a WAL file without -shm
    try:
        state.alembic_tmp = [
            n
            for (n,) in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '_alembic_tmp_%'"
            )
        ]
        try:  # a half-migrated store may lack any of these tables
            rows = con.execute(
                "SELECT r.run_uuid, e.name, r.status, r.artifact_uri FROM runs r "
                "JOIN experiments e ON r.experiment_id = e.experiment_id"
            ).fetchall()
            tags = {(r, k): v for r, k, v in con.execute("SELECT run_uuid, key, value FROM tags")}
            params = {
                (r, k): v
                for r, k, v in con.execute(
                    "SELECT run_uuid, key, value FROM params WHERE key IN ('adapter', 'prompt_version')"
                )
            }
            metrics = dict(
                con.execute("SELECT run_uuid, COUNT(*) FROM latest_metrics GROUP BY run_uuid").fetchall()
            )
            inputs = dict(
                con.execute(
                    "SELECT destination_id, COUNT(*) FROM inputs WHERE source_type='DATASET' AND "
                    "destination_type='RUN' GROUP BY destination_id"
                ).fetchall()
            )
            state.n_datasets = con.execute(
                "SELECT COUNT(*) FROM datasets d JOIN experiments e ON d.experiment_id = e.experiment_id "
                "WHERE e.name = ?",
                (EXPERIMENT,),
            ).fetchone()[0]
        except sqlite3.Error as e:
            state.error = str(e)
            return state
    finally:
        con.close()
    for run_id, experiment, status, artifact_uri in rows:
        art_dir = Path(unquote(urlparse(artifact_uri).path))
        files = (
            {str(p.relative_to(art_dir)) for p in art_dir.rglob("*") if p.is_file()}
            if art_dir.is_dir()
            else set()
        )
        state.runs.append(
            RunRow(
                run_id=run_id,
                experiment=experiment,
                status=status,
                stage=tags.get((run_id, "ragtrack.stage"), "?"),
                parent=tags.get((run_id, "mlflow.parentRunId")),
                adapter=params.get((run_id, "adapter")),
                prompt=params.get((run_id, "prompt_version")),
                n_metrics=metrics.get(run_id, 0),
                n_inputs=inputs.get(run_id, 0),
                artifacts=files,
            )
        )
    return state


def _check_usable(root: Path, tmp: Path, uri: str, db: Path) -> tuple[bool, str]:
    """A further run against the store succeeds, and no half-migrated table is left."""
    log = tmp / "after.log"
    proc = _ragtrack(
        root,
        [
            "adapter=base",
            "prompt=v1",
            "tracking.run_name=after",
            f"tracking.uri={uri}",
            f"hydra.run.dir={tmp / 'hydra-after'}",
        ],
        log,
    )
    code = proc.wait(timeout=600)
    if code != 0:
        return False, " | ".join(_error_lines(log.read_text(errors="replace"))) or f"exit {code}"
    con = sqlite3.connect(db, timeout=60)  # read-write open: a read-only one fails on a WAL file without -shm
    try:
        left = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '_alembic_tmp_%'").fetchone()[
            0
        ]
        status = con.execute("SELECT status FROM runs WHERE name='after'").fetchone()
    except sqlite3.Error as e:
        return False, str(e)
    finally:
        con.close()
    if left or status != ("FINISHED",):
        return False, f"after-run status {status}, {left} _alembic_tmp_ tables"
    return True, ""


def _finish(
    name: str,
    root: Path,
    tmp: Path,
    uri: str,
    db: Path,
    procs: list[tuple[str, subprocess.Popen[bytes], Path]],
    t0: float,
    expected: int,
) -> Trial:
    failures, locked = [], 0
    for label, proc, log in procs:
        code = proc.wait(timeout=1800)
        text = log.read_text(errors="replace")
        locked += text.count(LOCKED)
        if code != 0:
            failures.append(f"{label}: exit {code}: " + " | ".join(_error_lines(text)))
    wall = time.perf_counter() - t0
    state = read_store(db)  # before the usability check's own run
    state.runs = [r for r in state.runs if r.experiment == EXPERIMENT]
    usable, why = _check_usable(root, tmp, uri, db)
    return Trial(name, expected, wall, state, failures, locked, usable, why)


def _create_store(root: Path, tmp: Path, uri: str) -> None:
    """One run in another experiment: the schema exists, the demo experiment and its datasets don't."""
    log = tmp / "create.log"
    args = ["tracking.experiment=warm-up", f"tracking.uri={uri}", f"hydra.run.dir={tmp / 'hydra-create'}"]
    if _ragtrack(root, args, log).wait(timeout=600) != 0:
        raise RuntimeError(f"could not create the store: {log.read_text(errors='replace')[-2000:]}")


def concurrent_trial(root: Path, tmp: Path, n: int, name: str, existing_store: bool = False) -> Trial:
    """`n` `ragtrack run`s started together on a fresh directory (or a fresh experiment of an existing
    store)."""
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    if existing_store:
        _create_store(root, tmp, uri)
    jobs = [Job(a, p) for a, p in product(ADAPTERS, PROMPTS)]
    jobs = [jobs[i % len(jobs)] for i in range(n)]
    t0 = time.perf_counter()
    procs = []
    for i, job in enumerate(jobs):
        log = tmp / f"proc{i}.log"
        args = [
            f"adapter={job.adapter}",
            f"prompt={job.prompt}",
            f"tracking.uri={uri}",
            f"hydra.run.dir={tmp / f'hydra{i}'}",
        ]
        procs.append((f"{job.adapter}-{job.prompt}", _ragtrack(root, args, log), log))
    return _finish(name, root, tmp, uri, tmp / "mlflow.db", procs, t0, n)


def sweep_trial(root: Path, tmp: Path, n_jobs: int) -> Trial:
    """One `-m hydra/launcher=joblib` sweep of 3 adapters x 2 prompts x 4 values of a harmless key."""
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    key, values = SWEEP_KEY
    args = [
        "-m",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={n_jobs}",
        f"adapter={','.join(ADAPTERS)}",
        f"prompt={','.join(PROMPTS)}",
        f"{key}={','.join(values)}",
        f"tracking.uri={uri}",
        f"hydra.sweep.dir={tmp / 'hydra'}",
    ]
    t0 = time.perf_counter()
    log = tmp / "sweep.log"
    return _finish(
        f"sweep n_jobs={n_jobs}",
        root,
        tmp,
        uri,
        tmp / "mlflow.db",
        [("sweep", _ragtrack(root, args, log), log)],
        t0,
        len(ADAPTERS) * len(PROMPTS) * len(values),
    )


def sweep_parent_problems(state: StoreState) -> list[str]:
    """One FINISHED parent, and every child under it."""
    parents = [r for r in state.runs if r.stage == "sweep"]
    if len(parents) != 1:
        return [f"{len(parents)} sweep parents"]
    (parent,) = parents
    out = [] if parent.status == "FINISHED" else [f"sweep parent {parent.status}"]
    orphans = [r for r in state.runs if r.stage == "full" and r.parent != parent.run_id]
    if orphans:
        out.append(f"{len(orphans)} children not under the parent")
    return out


def expected_metric_count(root: Path) -> int:
    """Metrics one demo run logs: its non-NaN aggregates plus its timings, scored in-process without
    MLflow."""
    sys.path.insert(0, str(root))
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from ragtrack.inputs.config import RunConfig
    from ragtrack.run.runner import run_job

    cwd = os.getcwd()
    os.chdir(root)
    try:
        with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
            cfg = compose("config", overrides=["tracking.enabled=false"])
        (result,) = run_job(RunConfig.from_container(OmegaConf.to_container(cfg, resolve=True)))
    finally:
        os.chdir(cwd)
    return sum(not math.isnan(v) for v in result.metrics.values()) + len(result.timings)


def _report(trial: Trial, n_metrics: int, extra: list[str]) -> bool:
    lost = trial.lost(n_metrics) + extra
    finished = sum(r.status == "FINISHED" for r in trial.state.runs if r.stage == "full")
    print(
        f"{trial.name}: {finished}/{trial.expected} FINISHED, {trial.wall_s:.1f} s, "
        f"store usable: {'yes' if trial.usable else 'no'}, '{LOCKED}' lines: {trial.locked_lines}"
        + (f", store unreadable: {trial.state.error}" if trial.state.error else "")
    )
    for f in trial.failures:
        print(f"    failed {f}")
    for line in lost:
        print(f"    lost: {line}")
    return not lost and not trial.failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5, help="trials of simultaneous processes (default 5)")
    ap.add_argument("--procs", type=int, default=6, help="processes per trial (default 6)")
    ap.add_argument(
        "--sweeps", type=int, default=0, help="24-job joblib sweeps to run, each on a fresh store (default 0)"
    )
    ap.add_argument(
        "--existing-store", action="store_true", help="create each trial's store before its processes start"
    )
    ap.add_argument("--n-jobs", type=int, default=8, help="joblib workers of the sweep (default 8)")
    ap.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="checkout whose ragtrack to run",
    )
    ap.add_argument("--keep", action="store_true", help="keep the trial directories (printed)")
    args = ap.parse_args()
    root = args.root.resolve()
    n_metrics = expected_metric_count(root)
    print(
        f"root {root}; {args.trials} trials of {args.procs} processes on a "
        f"{'fresh experiment of an existing' if args.existing_store else 'fresh'} store; {args.sweeps} "
        f"joblib sweeps (n_jobs={args.n_jobs}); per run expected: {n_metrics} metrics, 2 dataset inputs, "
        f"{len(ARTIFACTS) + 1} artifacts"
    )
    base = Path(tempfile.mkdtemp(prefix="ragtrack-stress-"))
    ok = trials = 0
    landed = expected = 0
    for t in range(args.trials):
        tmp = base / f"trial{t}"
        tmp.mkdir()
        trial = concurrent_trial(root, tmp, args.procs, f"trial {t + 1}", args.existing_store)
        ok += _report(trial, n_metrics, [])
        trials += 1
        landed += sum(r.status == "FINISHED" for r in trial.state.runs if r.stage == "full")
        expected += trial.expected
    if args.trials:
        print(
            f"TOTAL: {landed}/{expected} runs FINISHED; {ok}/{trials} trials with nothing lost and the store "
            "usable"
        )
    for t in range(args.sweeps):
        tmp = base / f"sweep{t}"
        tmp.mkdir()
        trial = sweep_trial(root, tmp, args.n_jobs)
        ok += _report(trial, n_metrics, sweep_parent_problems(trial.state))
        trials += 1
    if args.keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if ok == trials else 1


if __name__ == "__main__":
    sys.exit(main())
