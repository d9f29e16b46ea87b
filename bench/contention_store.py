"""Write contention on one SQLite store through MLflow: does any call fail with "database is locked"?

    python bench/contention_store.py [--procs 8] [--runs 60] [--journal wal|delete] [--plain-inputs]
        [--root DIR]

`--procs` processes, released together, each log `--runs` runs the way ragtrack's sink
does (create the run, params, 33 metrics with tags, dataset inputs, end it), as fast
as they can, into one already-migrated store. Run i of every process logs the same new
dataset version, so the dataset-insert race is exercised as well. Each
failed call is counted by kind: "database is locked" (SQLite gave up waiting), a
unique-constraint conflict, or other. `--journal delete` switches the file back to
the rollback journal and has the processes use a plain `MlflowClient`, to compare
with what `ragtrack.tracking.store.open_client` sets up (WAL). `--plain-inputs` logs the
dataset inputs with MLflow's `log_inputs` instead of ragtrack's retrying helper, to count
the insert conflicts that helper absorbs.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("locked", "conflict", "other")


def worker(
    uri: str, runs: int, journal: str, plain_inputs: bool, start_at: float, proc: int
) -> dict[str, object]:
    """Log `runs` runs; the counts of failed calls by kind, and the slowest call."""
    from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    from ragtrack.tracking.store import is_conflict, log_inputs_idempotent, open_client

    client = open_client(uri) if journal == "wal" else MlflowClient(uri)
    exp = client.get_experiment_by_name("contention").experiment_id
    counts = dict.fromkeys(KINDS, 0)
    examples: dict[str, str] = {}
    slowest = 0.0

    def call(fn, *args, **kwargs):
        """`fn(...)`, or None when it failed (counted by kind)."""
        nonlocal slowest
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # counted, the benchmark goes on
            kind = "locked" if "database is locked" in str(e) else "conflict" if is_conflict(e) else "other"
            counts[kind] += 1
            examples.setdefault(kind, str(e).splitlines()[0][:200])
            return None
        finally:
            slowest = max(slowest, time.perf_counter() - t0)

    time.sleep(max(0.0, start_at - time.time()))
    for i in range(runs):
        run = call(client.create_run, exp, run_name=f"p{proc}-{i}")
        if run is None:
            continue
        run_id = run.info.run_id
        call(client.log_batch, run_id, params=[Param(f"p{k}", str(k)) for k in range(20)], synchronous=True)
        now = int(time.time() * 1000)
        call(
            client.log_batch,
            run_id,
            metrics=[Metric(f"m{k}", float(k), now, 0) for k in range(33)],
            tags=[RunTag("ragtrack.gates_passed", "false")],
            synchronous=True,
        )
        # run i of every process logs the same new dataset version
        ds = DatasetInput(
            Dataset(name="questions", digest=f"{i:036d}", source_type="local", source="{}"),
            [InputTag("mlflow.data.context", "eval")],
        )
        if plain_inputs:
            call(client.log_inputs, run_id, datasets=[ds])
        else:
            call(log_inputs_idempotent, client, run_id, [ds])
        call(client.set_tag, run_id, "ragtrack.reached_stage", "full")
        call(client.set_terminated, run_id, "FINISHED")
    return {"counts": counts, "examples": examples, "slowest_s": round(slowest, 3)}


def _prepare(tmp: Path, journal: str, root: Path) -> str:
    """Create and migrate the store (and the experiment) once, outside the measurement."""
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    code = (
        "from ragtrack.tracking.store import open_client; "
        f"open_client({uri!r}).create_experiment('contention')"
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    if journal == "delete":
        with sqlite3.connect(tmp / "mlflow.db") as con:
            assert con.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    return uri


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=8, help="writer processes (default 8)")
    ap.add_argument("--runs", type=int, default=60, help="runs each process logs (default 60)")
    ap.add_argument(
        "--journal", choices=("wal", "delete"), default="wal", help="journal mode of the store (default wal)"
    )
    ap.add_argument(
        "--plain-inputs", action="store_true", help="MLflow's log_inputs instead of log_inputs_idempotent"
    )
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose ragtrack to use")
    ap.add_argument("--worker", nargs=4, metavar=("URI", "RUNS", "START_AT", "PROC"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        uri, runs, start_at, proc = args.worker
        print(json.dumps(worker(uri, int(runs), args.journal, args.plain_inputs, float(start_at), int(proc))))
        return 0
    root = args.root.resolve()
    with tempfile.TemporaryDirectory(prefix="ragtrack-contention-") as d:
        tmp = Path(d)
        uri = _prepare(tmp, args.journal, root)
        start_at = time.time() + 15  # after every process has imported mlflow and opened the store
        env = {**os.environ, "PYTHONPATH": str(root)}
        flags = ["--journal", args.journal, *(["--plain-inputs"] if args.plain_inputs else [])]
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, *flags, "--worker", uri, str(args.runs), str(start_at), str(i)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for i in range(args.procs)
        ]
        results = [json.loads(p.communicate(timeout=1800)[0].strip().splitlines()[-1]) for p in procs]
        wall = time.time() - start_at
        with sqlite3.connect(tmp / "mlflow.db") as con:
            finished = con.execute("SELECT COUNT(*) FROM runs WHERE status='FINISHED'").fetchone()[0]
            datasets = con.execute("SELECT COUNT(*) FROM datasets").fetchone()[0]
            inputs = con.execute("SELECT COUNT(*) FROM inputs WHERE source_type='DATASET'").fetchone()[0]
    total = {k: sum(r["counts"][k] for r in results) for k in KINDS}
    n = args.procs * args.runs
    print(
        f"journal={args.journal}{', plain log_inputs' if args.plain_inputs else ''}: {args.procs} processes "
        f"x {args.runs} runs = {n} runs ({n * 6} write calls) in {wall:.1f} s; FINISHED {finished}/{n}; "
        f"dataset rows {datasets} (expected {args.runs}), inputs {inputs}/{n}"
    )
    print(
        "  failed calls: "
        + ", ".join(f"{k} {v}" for k, v in total.items())
        + f"; slowest call {max(r['slowest_s'] for r in results):.2f} s"
    )
    for r in results:
        for kind, text in r["examples"].items():
            print(f"  e.g. {kind}: {text}")
            break
    return 0 if not any(total.values()) and finished == n else 1


if __name__ == "__main__":
    sys.exit(main())
