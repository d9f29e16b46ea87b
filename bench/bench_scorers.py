"""Deterministic scoring throughput (cases/s) at 1,000 and 10,000 cases, one process.

    python bench/bench_scorers.py [--repeat 3]

Prints, per scorer and size, the best wall time of `--repeat` runs and cases/s.
Target (issue #2): eval_json_v2 >= 2,000 cases/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

from ragtrack.inputs.eval_sets import load_eval_set  # noqa: E402
from ragtrack.inputs.predictions import match_prediction_file  # noqa: E402
from ragtrack.scorers import Batch, build_scorer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = ap.parse_args()
    import tempfile

    print(f"{'scorer':<18} {'cases':>7} {'best s':>8} {'cases/s':>10}")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            paths = synth.write(Path(tmp), n)
            es, _ = load_eval_set([paths["questions"], paths["qaset"]])
            batch = Batch.from_generation(es.cases, match_prediction_file(paths["predictions"], es.cases))
        for name in ("eval_json_v2", "refusal_citation"):
            scorer = build_scorer(name)
            best = min(_timed(scorer, batch) for _ in range(args.repeat))
            print(f"{name:<18} {n:>7} {best:>8.3f} {n / best:>10.0f}")


def _timed(scorer, batch) -> float:
    t0 = time.perf_counter()
    scorer.score(batch)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
