"""Per-case traces: the CPU and time to write 1,000 cases × 10 assessments, every one counted back.

    python bench/bench_traces.py [--cases 1000] [--subscores 10] [--rounds 5] [--run] [--server]

Part 1 writes `--cases` traces (a root span and a retriever span each, `--subscores`
assessments with a rationale each) through `ragtrack.tracking.traces.log_case_traces`
into a run of an existing SQLite store (WAL, as ragtrack opens it), then reads every
trace of the run back and counts traces and assessments: the figures count only if all
of them landed. Each round writes the cases twice, in alternating order: as ragtrack does
(one transaction per run on a SQL store) and with one `start_trace` per case (MLflow's
public path, `batch=False`). It prints the median and range of CPU and wall time over
`--rounds` rounds (CPU is the stable measure on a shared machine). `--server` writes to
`mlflow server --workers 2` on PostgreSQL with artifacts in moto's S3, started on
127.0.0.1 (`ragtrack.app.devserver`), instead: one HTTP request per trace either way,
several in flight. Part 2 (`--run`) logs a real `--cases`-case run (both scorers, ~18
per-case columns) with traces and without (`tracking.traces_max_cases=0`), alternated:
the extra CPU a run pays for its traces. Targets: issue #8, ≤ 15 s extra for 1,000 cases;
issue #18, ≤ a quarter of the 10.6–12 ms CPU per traced case measured before batching.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402


def _cases(n: int, subscores: int):
    from ragtrack.core.types import ContextChunk
    from ragtrack.run.case_traces import CaseAssessment, CaseTrace

    return [
        CaseTrace(
            case_id=f"c{i:05d}",
            question=f"退款多久到账？ question {i}",
            answer='{"target_audience": "客户", "main_topic": "退款"} ' + "x" * 400,
            contexts=[
                ContextChunk(
                    text="退款将在审核通过后7个工作日内原路退回。" * 5,
                    source_path=f"docs/p{k}.md",
                    id=f"p{k}#1",
                )
                for k in range(3)
            ],
            latency_ms=1234.5,
            assessments=[
                CaseAssessment(
                    name=f"bench/s{j}", value=j / subscores, rationale="not JSON: line 1", source="bench@1"
                )
                for j in range(subscores)
            ],
        )
        for i in range(n)
    ]


@contextmanager
def sqlite_store(tmp: Path) -> Iterator[tuple[str, str]]:
    """An existing SQLite store (WAL, as ragtrack opens it): (uri, artifact location)."""
    from ragtrack.tracking.session import connect

    uri = f"sqlite:///{tmp / 'traces.db'}"
    connect(uri)  # creates and migrates the store
    yield uri, (tmp / "artifacts").as_uri()


@contextmanager
def server_store(tmp: Path) -> Iterator[tuple[str, str | None]]:
    """`mlflow server --workers 2` on PostgreSQL with artifacts in moto's S3, on 127.0.0.1
    (`ragtrack.app.devserver`)."""
    from ragtrack.app.devserver import MotoS3, Postgres, TrackingServer

    pg, s3 = Postgres(), MotoS3(tmp)
    server = None
    try:
        pg.start()
        s3.start()
        s3.create_bucket("bench")
        server = TrackingServer(tmp, pg.create_database("mlflow"), "s3://bench/artifacts", s3.endpoint)
        server.start()
        yield server.url, None
    finally:
        if server is not None:
            server.stop()
        s3.stop()
        pg.stop()


def _spread(values: list[float]) -> str:
    """`median [min–max]` of a measure over rounds."""
    return f"{statistics.median(values):6.2f} [{min(values):.2f}–{max(values):.2f}]"


def write_and_count(uri: str, artifacts: str | None, where: str, n: int, subscores: int, rounds: int) -> None:
    """`rounds` rounds, each writing the cases once batched and once one trace per call, alternated."""
    from mlflow.tracking import MlflowClient

    from ragtrack.tracking.traces import count_run_traces, log_case_traces

    client = MlflowClient(uri)
    exp = client.create_experiment("bench-traces", artifact_location=artifacts)
    cases = _cases(n, subscores)
    times: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for i in range(rounds):
        for batch in (True, False) if i % 2 == 0 else (False, True):
            run_id = client.create_run(exp, run_name=f"r{i}-{batch}").info.run_id
            w0, c0 = time.perf_counter(), time.process_time()
            written = log_case_traces(uri, exp, run_id, cases, batch=batch)
            w1, c1 = time.perf_counter(), time.process_time()
            counted = count_run_traces(uri, exp, run_id)
            w2 = time.perf_counter()
            if counted != written or counted.traces != n or counted.assessments != n * subscores:
                raise SystemExit(f"lost data: wrote {written}, read back {counted}")
            times[batch].append((w1 - w0, c1 - c0, w2 - w1))
            client.set_terminated(run_id)
    load = os.getloadavg()
    print(
        f"{n} cases × {subscores} assessments, {where} (median [range] of {rounds} alternated rounds; "
        f"load average {load[0]:.1f}):"
    )
    for batch, label in ((True, "log_case_traces      "), (False, "one start_trace each ")):
        wall, cpu, back = ([t[k] for t in times[batch]] for k in range(3))
        print(
            f"  {label} wall {_spread(wall)} s, CPU {_spread(cpu)} s "
            f"({1000 * statistics.median(cpu) / n:.2f} ms CPU per case); read back "
            f"{statistics.median(back):.2f} s, every trace and assessment landed"
        )


def real_run(tmp: Path, n: int, rounds: int) -> None:
    """The logging of a real run with and without its traces, alternated: the CPU a run pays for its
    traces."""
    from ragtrack.inputs.config import RunConfig
    from ragtrack.run.runner import run
    from ragtrack.tracking import MlflowSink

    paths = synth.write(tmp / "data", n)
    uri = f"sqlite:///{tmp / 'run.db'}"

    def config(max_cases: int) -> RunConfig:
        return RunConfig.from_container(
            {
                "model": {"id": "bench/model"},
                "adapter": {"name": "bench", "id": "bench/adapter@1"},
                "index": {"name": "bench", "path": str(paths["index"])},
                "prompt": {"version": "v1", "path": str(paths["prompt"])},
                "eval_set": {"name": "bench", "files": [str(paths["questions"]), str(paths["qaset"])]},
                "generator": {"name": "replay", "params": {"path": str(paths["predictions"])}},
                "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
                "tracking": {"uri": uri, "experiment": "bench", "traces_max_cases": max_cases},
            }
        )

    result = run(config(0))
    columns = sum(
        1
        for out in result.outputs
        for cs in out.cases
        for k, v in cs.values.items()
        if v not in (None, "") and not k.endswith("/error")
    )
    times: dict[int, list[tuple[float, float]]] = {0: [], n: []}
    for i in range(rounds):
        for max_cases in (0, n) if i % 2 == 0 else (n, 0):
            sink = MlflowSink(config(max_cases), uri=uri)
            with sink("full") as report:
                w0, c0 = time.perf_counter(), time.process_time()
                report(result)
                times[max_cases].append((time.perf_counter() - w0, time.process_time() - c0))
    print(
        f"logging a real {n}-case run ({columns / n:.1f} assessments per case; median [range] of {rounds} "
        f"alternated rounds; load average {os.getloadavg()[0]:.1f}):"
    )
    for max_cases, label in ((0, "without traces"), (n, "with traces   ")):
        print(
            f"  {label} wall {_spread([t[0] for t in times[max_cases]])} s, "
            f"CPU {_spread([t[1] for t in times[max_cases]])} s"
        )
    extra = statistics.median(t[1] for t in times[n]) - statistics.median(t[1] for t in times[0])
    print(f"  extra CPU for the traces: {extra:.2f} s, {1000 * extra / n:.2f} ms per traced case")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--subscores", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--run", action="store_true", help="also time a real run's logging with and without traces"
    )
    ap.add_argument(
        "--server",
        action="store_true",
        help="write to a local mlflow server (PostgreSQL + moto S3) instead of SQLite",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        store, where = (
            (server_store, "mlflow server on PostgreSQL")
            if args.server
            else (sqlite_store, "existing SQLite store")
        )
        with store(Path(d)) as (uri, artifacts):
            write_and_count(uri, artifacts, where, args.cases, args.subscores, args.rounds)
        if args.run:
            real_run(Path(d), args.cases, args.rounds)


if __name__ == "__main__":
    main()
