"""Time of `ragtrack.analysis.compare.compare` (paired bootstrap + McNemar + moved cases) on synthetic runs.

    python bench/bench_compare.py [--cases 1000 10000] [--resamples 2000]

Two per-case tables shaped like the demo's `cases.parquet` (eval_json_v2 and
refusal_citation columns, 16 metrics with per-case terms), B a noisy copy of A; prints
the seconds per comparison. Nothing is written.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ragtrack.analysis.compare import RunRef, RunSide, compare

SUBSCORES = (
    "target_audience",
    "main_topic",
    "sub_topic",
    "detailed_description_f1",
    "original_evidence",
    "predicted_questions_f1",
    "grounding",
)
LABELS = np.array(["OK", "REFUSAL_OK", "OVER_REFUSAL", "HALLUCINATION", "ANS_NO_HIT"])


def side(run_id: str, n: int, rng: np.random.Generator) -> RunSide:
    score = rng.uniform(0, 100, n)
    refusal = rng.random(n) < 0.1
    cols = {
        "id": [f"q{i}" for i in range(n)],
        "question": ["q?"] * n,
        "answer": ["a"] * n,
        "eval_json_v2/score": score,
        "eval_json_v2/schema_ok": rng.random(n) < 0.9,
        **{f"eval_json_v2/{s}": rng.random(n) for s in SUBSCORES},
        "refusal_citation/label": LABELS[rng.integers(0, 5, n)],
        "refusal_citation/answered": ~refusal,
        "refusal_citation/refusal": refusal,
        **{
            f"refusal_citation/{k}": rng.random(n) < 0.7
            for k in ("hit", "contain", "contain_cjk", "has_citations")
        },
    }
    ref = RunRef(run_id=run_id, run_name=run_id, label=run_id, eval_set_version="bench@0")
    return RunSide(
        ref=ref, scorers=["eval_json_v2", "refusal_citation"], params={}, metrics={}, cases=pd.DataFrame(cols)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()
    compare(
        side("a", 10, np.random.default_rng(0)), side("b", 10, np.random.default_rng(1))
    )  # imports (scipy) outside the timing
    for n in args.cases:
        a, b = side("a", n, np.random.default_rng(0)), side("b", n, np.random.default_rng(1))
        t0 = time.perf_counter()
        c = compare(a, b, n_resamples=args.resamples)
        dt = time.perf_counter() - t0
        print(f"{n:>6} cases, {len(c.metrics)} metrics, {args.resamples} resamples: {dt:.2f} s")


if __name__ == "__main__":
    main()
