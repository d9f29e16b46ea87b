"""An eval set as an MLflow evaluation dataset: the CPU, time and memory to write 100,000 cases' records.

    python bench/bench_eval_dataset.py [--cases 100000] [--rounds 5] [--variants one-call,new]
                                       [--records-per-write N]

`--cases` synthetic question_v2 + qaset cases (`synth.make`: a structured expected answer,
a gold verdict, ids and claim each) are written once to a JSONL file. Each round then runs
every variant once, in a rotating order, each in its own process on its own fresh SQLite
store (a copy of a migrated empty one, in WAL mode as ragtrack opens it), timing one
`ensure_eval_dataset` for a dataset that does not exist yet:

  one-call        the code before chunking: every record in one `upsert_dataset_records`
  chunked-upsert  `ensure_eval_dataset` with the direct insert turned off: chunks of
                  `RECORDS_PER_WRITE` through `upsert_dataset_records` (what a server gets)
  new             `ensure_eval_dataset` as it is: chunks inserted directly on MLflow's SQL store

It prints the median and range of CPU (the stable measure on a shared machine) and wall
time over `--rounds` rounds, and the process's peak RSS (ru_maxrss) with its growth over
the RSS it had once the cases were loaded and the store open: the memory the write itself
took. The figures count only if every record landed: the parent counts each dataset's rows
and checks that its schema and profile are the same for every variant.

Measured (2 cores, MLflow 3.17, 1,000 records per write), CPU median and peak-RSS growth:
100,000 cases: one-call 51.9 s, +105 MB; chunked-upsert 50.3 s, +9 MB; new 8.4 s, +11 MB.
10,000 cases: one-call 4.9 s, +14 MB; chunked-upsert 5.1 s, +9 MB; new 0.75 s, +11 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

VARIANTS = ("one-call", "chunked-upsert", "new")


def _write_cases(path: Path, n: int) -> None:
    """`n` synthetic cases as EvalCase JSON lines: the question_v2 item and its qaset item, as one case."""
    from ragtrack.core.types import EvalCase, ExpectedV2, Gold

    questions, qaset, _ = synth.make(n)
    with path.open("w", encoding="utf-8") as f:
        for q, g in zip(questions, qaset, strict=True):
            case = EvalCase(
                id=q["id"],
                question=q["question"],
                expected=ExpectedV2.model_validate(q["expected"]),
                gold=Gold(answerable=g["answerable"], gold_ids=g["gold_ids"], gold_claim=g["gold_claim"]),
            )
            f.write(case.model_dump_json() + "\n")


def _template(directory: Path) -> Path:
    """An empty store, created and migrated once (in WAL mode, as ragtrack opens it)."""
    from ragtrack.tracking.session import connect

    db = directory / "template.db"
    connect(f"sqlite:///{db}")
    return db


def _one_call(client: Any, experiment_id: str, version: str, cases: list[Any]) -> str | None:
    """`ensure_eval_dataset` as it was before chunking: every record in one `upsert_dataset_records`."""
    from ragtrack.tracking.entities import find_or_create
    from ragtrack.tracking.eval_datasets import _found, dataset_name, records_of

    name = dataset_name(version)

    def create() -> Any:
        mine = client.create_dataset(
            name, experiment_id=experiment_id, tags={"ragtrack.eval_set_version": version}
        )
        client._tracking_client.store.upsert_dataset_records(
            dataset_id=mine.dataset_id, records=records_of(cases)
        )
        return mine

    return find_or_create(
        client.tracking_uri,
        lambda: _found(client, experiment_id, name),
        create,
        key=lambda d: d.dataset_id,
        delete=lambda d: client.delete_dataset(d.dataset_id),
    ).dataset_id


def child(variant: str, cases_file: Path, template: Path, db: Path, per_write: int) -> None:
    """One variant on a fresh copy of the template store, `per_write` records per write (0: ragtrack's
    `RECORDS_PER_WRITE`); prints its figures as one JSON line."""
    from ragtrack.core.types import EvalCase
    from ragtrack.tracking import eval_datasets
    from ragtrack.tracking.session import connect

    with sqlite3.connect(template) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    with cases_file.open(encoding="utf-8") as f:
        cases = [EvalCase.model_validate_json(line) for line in f]
    client = connect(f"sqlite:///{db}")
    exp = client.create_experiment("bench-eval-dataset")
    if per_write:
        eval_datasets.RECORDS_PER_WRITE = per_write
    if variant == "chunked-upsert":
        eval_datasets._sql_store = lambda store: None  # MLflow's upsert for every chunk
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w0, c0 = time.perf_counter(), time.process_time()
    if variant == "one-call":
        dataset_id = _one_call(client, exp, "bench@1", cases)
    else:
        dataset_id = eval_datasets.ensure_eval_dataset(client, exp, "bench@1", cases)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if dataset_id is None:
        raise SystemExit(f"{variant}: no dataset was written")
    dataset = client.get_dataset(dataset_id)
    print(
        json.dumps(
            {
                "dataset_id": dataset_id,
                "cpu": cpu,
                "wall": wall,
                "rss_before_mb": rss_before / 1024,
                "rss_peak_mb": rss_peak / 1024,
                "schema": dataset.schema,
                "profile": dataset.profile,
            }
        )
    )


def _run_child(variant: str, cases_file: Path, template: Path, db: Path, per_write: int) -> dict[str, Any]:
    """One variant's figures, from its own process; the dataset's records counted in its database."""
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            variant,
            str(cases_file),
            str(template),
            str(db),
            str(per_write),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{proc.stderr}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    with sqlite3.connect(db) as con:
        (got["rows"],) = con.execute(
            "SELECT count(*) FROM evaluation_dataset_records WHERE dataset_id = ?", (got["dataset_id"],)
        ).fetchone()
    db.unlink()
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        extra.unlink(missing_ok=True)
    return got


def _spread(values: list[float]) -> str:
    """`median [min–max]` of a measure over rounds."""
    return f"{statistics.median(values):7.2f} [{min(values):.2f}–{max(values):.2f}]"


def compare(n: int, rounds: int, variants: list[str], per_write: int) -> None:
    """`rounds` rounds of every variant, alternated; the figures per variant, checked for lost records."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cases_file = tmp / "cases.jsonl"
        _write_cases(cases_file, n)
        template = _template(tmp)
        results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for i in range(rounds):
            order = variants[i % len(variants) :] + variants[: i % len(variants)]
            for variant in order:
                db = tmp / f"{variant}-{i}.db"
                results[variant].append(_run_child(variant, cases_file, template, db, per_write))
    landed = {(r["rows"], r["schema"], r["profile"]) for rs in results.values() for r in rs}
    if len(landed) != 1 or next(iter(landed))[0] != n:
        raise SystemExit(f"lost or differing records: {sorted(landed, key=str)}")
    from ragtrack.tracking.eval_datasets import RECORDS_PER_WRITE

    load = os.getloadavg()[0]
    print(
        f"{n} cases into a new evaluation dataset on SQLite, {per_write or RECORDS_PER_WRITE} records per "
        f"write (median [range] of {rounds} alternated rounds, one process each; load average {load:.1f}):"
    )
    for variant in variants:
        rs = results[variant]
        cpu, wall = [r["cpu"] for r in rs], [r["wall"] for r in rs]
        grown = [r["rss_peak_mb"] - r["rss_before_mb"] for r in rs]
        print(
            f"  {variant:14} CPU {_spread(cpu)} s, wall {_spread(wall)} s, "
            f"peak RSS {statistics.median(r['rss_peak_mb'] for r in rs):6.0f} MB "
            f"(+{statistics.median(grown):.0f} MB [{min(grown):.0f}–{max(grown):.0f}] over the cases loaded)"
        )
    print(f"  every variant wrote all {n} records, with the same schema and profile")


def main() -> None:
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]), int(sys.argv[6]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--variants",
        default="one-call,new",
        help=f"comma-separated, of {', '.join(VARIANTS)} (chunked-upsert: ~50 s a round at 100,000 cases)",
    )
    ap.add_argument(
        "--records-per-write", type=int, default=0, help="chunk size (default: ragtrack's RECORDS_PER_WRITE)"
    )
    args = ap.parse_args()
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        ap.error(f"unknown variants: {', '.join(sorted(unknown))}")
    compare(args.cases, args.rounds, variants, args.records_per_write)


if __name__ == "__main__":
    main()
