"""Load on a team tracking server against the embedded SQLite store: throughput, time to log, nothing lost.

    python bench/bench_server.py [--jobs 8] [--runs-per-job 4] [--server-workers 2] [--stores server,sqlite]
        [--no-traces]

One `ragtrack run -m` sweep of jobs × runs-per-job runs of the demo (lora_b, prompt v2: 52
cases, 35 metrics, 2 dataset inputs, 11 artifact files and 52 per-case traces each; no
traces with `--no-traces`), through Hydra's joblib launcher with `n_jobs = --jobs` worker
processes, logged

- to `mlflow server` on PostgreSQL with artifacts in S3 (moto), started here on 127.0.0.1
  (`ragtrack.app.devserver`), and
- to an embedded SQLite store in a temporary directory.

Printed per store: the sweep's wall time and runs/s; p50/p95 of the time to log one run
(the time MLflow saw the run open, end − start, less the run's own generate and score
time: creating it, params, metrics, dataset inputs, artifacts, traces, ending it); and a
read-back of what landed: FINISHED runs, metrics, dataset inputs, artifact files, traces and
their assessments per run (and, for the server, the objects in the bucket), each of which
must be the same for every run and in both stores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrack.app.devserver import MotoS3, Postgres, TrackingServer  # noqa: E402

EXPERIMENT = "bench-server"
KINDS = ("metrics", "inputs", "files", "traces")  # what each run must hold the same count of
BUCKET = "ragtrack-bench"


def sweep(uri: str, jobs: int, runs: int, traces: bool) -> float:
    """Run the sweep into `uri`; its wall time in seconds."""
    names = ",".join(f"b{i:03d}" for i in range(jobs * runs))
    cmd = [
        sys.executable,
        "-m",
        "ragtrack.app.cli",
        "run",
        "-m",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={jobs}",
        "adapter=lora_b",
        "prompt=v2",
        f"tracking.run_name={names}",
        f"tracking.experiment={EXPERIMENT}",
        f"tracking.uri={uri}",
    ]
    if not traces:
        cmd.append("tracking.traces_max_cases=0")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"sweep into {uri} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def _artifact_files(client, run_id: str) -> int:
    todo, n = [""], 0
    while todo:
        for f in client.list_artifacts(run_id, todo.pop() or None):
            if f.is_dir:
                todo.append(f.path)
            else:
                n += 1
    return n


def read_back(uri: str) -> dict[str, object]:
    """What landed: per-run counts and the time to log each run."""
    from mlflow.tracking import MlflowClient

    from ragtrack.tracking.traces import count_run_traces

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs(
        [exp.experiment_id], filter_string="tags.`ragtrack.stage` = 'full'", max_results=10_000
    )
    log_s, metrics, inputs, files, traces = [], set(), set(), set(), set()
    for r in runs:
        m = r.data.metrics
        open_s = (r.info.end_time - r.info.start_time) / 1000
        log_s.append(open_s - m["timing/generate_s"] - m["timing/score_s"])
        metrics.add(len(m))
        inputs.add(len(r.inputs.dataset_inputs))
        files.add(_artifact_files(client, r.info.run_id))
        counts = count_run_traces(uri, exp.experiment_id, r.info.run_id)
        traces.add((counts.traces, counts.assessments))
    return {
        "runs": len(runs),
        "finished": sum(r.info.status == "FINISHED" for r in runs),
        "metrics": metrics,
        "inputs": inputs,
        "files": files,
        "traces": traces,
        "log_s": sorted(log_s),
        "run_ids": [r.info.run_id for r in runs],
        "experiment_id": exp.experiment_id,
    }


def _pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


def report(name: str, wall: float, got: dict[str, object], expected_runs: int, objects: int | None) -> bool:
    log_s = got["log_s"]
    one = lambda s: next(iter(s)) if len(s) == 1 else f"VARIES {sorted(s)}"  # noqa: E731
    print(
        f"{name:<8} {expected_runs} runs in {wall:6.1f} s = {expected_runs / wall:5.2f} runs/s; time to log "
        f"one run p50 {_pct(log_s, 50):.2f} s, p95 {_pct(log_s, 95):.2f} s (max {log_s[-1]:.2f} s)"
    )
    print(
        f"         read back: {got['finished']}/{got['runs']} FINISHED; per run {one(got['metrics'])} "
        f"metrics, {one(got['inputs'])} dataset inputs, {one(got['files'])} artifact files, (traces, "
        f"assessments) {one(got['traces'])}"
        + (f"; {objects} objects in the bucket" if objects is not None else "")
    )
    whole = got["runs"] == got["finished"] == expected_runs and all(len(got[k]) == 1 for k in KINDS)
    if objects is not None:
        whole = whole and objects == expected_runs * next(iter(got["files"]))
    return whole


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=8, help="parallel sweep workers (hydra.launcher.n_jobs)")
    p.add_argument("--runs-per-job", type=int, default=4)
    p.add_argument("--server-workers", type=int, default=2, help="mlflow server --workers")
    p.add_argument("--stores", default="server,sqlite")
    p.add_argument("--no-traces", dest="traces", action="store_false", help="tracking.traces_max_cases=0")
    args = p.parse_args()
    n = args.jobs * args.runs_per_job
    print(
        f"{args.jobs} parallel sweep jobs x {args.runs_per_job} runs = {n} runs of the demo (lora_b, v2: 52 "
        f"cases) per store; {os.cpu_count()} CPUs, mlflow server --workers {args.server_workers}, per-case "
        f"traces {'on' if args.traces else 'off'}"
    )
    results: dict[str, tuple[float, dict[str, object]]] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="ragtrack-bench-server-") as tmp:
        root = Path(tmp)
        for store in args.stores.split(","):
            if store == "sqlite":
                uri = f"sqlite:///{root / 'mlflow.db'}"
                wall = sweep(uri, args.jobs, args.runs_per_job, args.traces)
                got = read_back(uri)
                ok &= report("sqlite", wall, got, n, None)
                results[store] = (wall, got)
                continue
            pg, s3, server = Postgres(), MotoS3(root), None
            try:
                pg.start()
                s3.start()
                s3.create_bucket(BUCKET)
                server = TrackingServer(
                    root,
                    pg.create_database("mlflow"),
                    f"s3://{BUCKET}/artifacts",
                    s3.endpoint,
                    workers=args.server_workers,
                )
                server.start()
                wall = sweep(server.url, args.jobs, args.runs_per_job, args.traces)
                got = read_back(server.url)
                objects = sum(
                    len(s3.keys(BUCKET, f"artifacts/{got['experiment_id']}/{run_id}/"))
                    for run_id in got["run_ids"]
                )
                ok &= report("server", wall, got, n, objects)
                results[store] = (wall, got)
            finally:
                if server is not None:
                    server.stop()
                s3.stop()
                pg.stop()
    if len(results) == 2:
        same = all(results["server"][1][k] == results["sqlite"][1][k] for k in KINDS)
        print(f"server and sqlite runs hold the same counts: {same}")
        ok &= same
    print("nothing lost" if ok else "LOST OR DIFFERING DATA (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
