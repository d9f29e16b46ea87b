"""Wall time and peak memory of reading a large predictions file for a small eval set.

    python bench/bench_predictions.py [--mb 200] [--keep-file]

Builds, in a temp dir, a predictions JSONL of about `--mb` MB for the demo's 52 cases
(experiments/demo): the demo's recorded lines repeated, one round in two with their own
ids (duplicates: the last wins) and one round in two with unknown ids (unmatched). Then
measures, each in a fresh subprocess (peak RSS from `os.wait4`):

- `match`: `match_prediction_file` alone, after the imports (the baseline RSS is printed);
- `score`: the whole `ragtrack score --json` command with both deterministic scorers.

Target (issue: streaming predictions): peak RSS bounded by the eval set, not the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo"

MATCH = """
import resource, sys, time
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.inputs.predictions import match_prediction_file
es, _ = load_eval_set(sys.argv[2:])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
gen = match_prediction_file(sys.argv[1], es.cases)
print(base, time.perf_counter() - t0, gen.n_unmatched, gen.duplicates_dropped, gen.n_missing)
"""


def build(path: Path, megabytes: int) -> int:
    """Write the predictions file; return its number of lines."""
    lines = (DEMO / "predictions" / "lora_a__v2.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    n = 0
    with path.open("w", encoding="utf-8") as f:
        round_ = 0
        while f.tell() < megabytes * 1_000_000:
            for row in rows:
                rid = row["id"] if round_ % 2 == 0 else f"{row['id']}-unknown-{round_}"
                f.write(json.dumps({**row, "id": rid}, ensure_ascii=False) + "\n")
                n += 1
            round_ += 1
    return n


def measure(argv: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KB) and stdout of one subprocess."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{argv[:3]} failed ({proc.returncode}): {err.read().decode()}")
        return wall, usage.ru_maxrss, out.read().decode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200, help="size of the predictions file in MB (default 200)")
    ap.add_argument("--keep-file", action="store_true", help="leave the temp dir in place and print its path")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_predictions_"))
    eval_files = [str(DEMO / "questions.json"), str(DEMO / "qaset.json")]
    try:
        preds = tmp / "predictions.jsonl"
        t0 = time.perf_counter()
        n_lines = build(preds, args.mb)
        size_mb = preds.stat().st_size / 1e6
        print(
            f"predictions file: {size_mb:.0f} MB, {n_lines} lines, 52 cases (built in "
            f"{time.perf_counter() - t0:.1f} s)"
        )

        wall, peak, out = measure([sys.executable, "-c", MATCH, str(preds), *eval_files])
        base, match_s, unmatched, dups, missing = out.split()
        print(
            f"match  wall {wall:6.2f} s (match_prediction_file {float(match_s):.2f} s)  peak RSS "
            f"{peak / 1024:7.1f} MB  (after imports {int(base) / 1024:.1f} MB; unmatched {unmatched}, "
            f"duplicates {dups}, missing {missing})"
        )

        score = [
            sys.executable,
            "-m",
            "ragtrack.app.cli",
            "score",
            "--predictions",
            str(preds),
            "--json",
            "--scorer",
            "eval_json_v2",
            "--scorer",
            "refusal_citation",
        ]
        for f in eval_files:
            score += ["--eval-set", f]
        wall, peak, out = measure(score)
        print(
            f"score  wall {wall:6.2f} s  peak RSS {peak / 1024:7.1f} MB  (ragtrack score --json, both "
            "scorers)"
        )
    finally:
        if args.keep_file:
            print(f"kept {tmp}")
        else:
            for p in tmp.iterdir():
                p.unlink()
            tmp.rmdir()


if __name__ == "__main__":
    main()
