"""End-to-end time of a 1,000-case `ragtrack run`, split into load / score / log.

    python bench/bench_run.py [--cases 1000] [--repeat 3]

Part 1 runs in-process against a temp SQLite store that already exists (its schema
created once beforehand) and prints the best of `--repeat` for each phase: load (eval
set, predictions, prompt, index hash), score (both deterministic scorers + gates) and
log (params, metrics, dataset inputs, artifacts, table). It also prints the one-time
cost of creating a new store.
Part 2 times the real command, `ragtrack run` as a subprocess, against a fresh store and
an existing one, next to a bare interpreter start and `import mlflow` for reference.
Target (issue #2): the whole run, score + log to SQLite, under 3 s plus interpreter start.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _config(paths: dict[str, Path], uri: str):
    from ragtrack.inputs.config import RunConfig

    return RunConfig.from_container(
        {
            "model": {"id": "bench/model"},
            "adapter": {"name": "bench", "id": "bench/adapter@1"},
            "index": {"name": "bench", "path": str(paths["index"])},
            "prompt": {"version": "v1", "path": str(paths["prompt"])},
            "eval_set": {"name": "bench", "files": [str(paths["questions"]), str(paths["qaset"])]},
            "generator": {"name": "replay", "params": {"path": str(paths["predictions"])}},
            "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
            "gates": {
                "dev100": ["eval_json_v2/eval_score_avg >= 95"],
                "G1": ["refusal_citation/precision >= 0.8"],
            },
            "tracking": {"uri": uri, "experiment": "bench"},
        }
    )


def in_process(paths: dict[str, Path], tmp: Path, repeat: int) -> None:
    from ragtrack.run.runner import run
    from ragtrack.tracking import MlflowSink

    uri = f"sqlite:///{tmp / 'inproc.db'}"
    t0 = time.perf_counter()
    sink = MlflowSink(_config(paths, uri), uri=uri)  # creates the store and the experiment
    create_s = time.perf_counter() - t0
    best: dict[str, float] = {}
    for _ in range(repeat):
        cfg = _config(paths, uri)
        with sink("full") as report:
            result = run(cfg)
            t0 = time.perf_counter()
            report(result)
            log_s = time.perf_counter() - t0
        phases = {
            "load": result.timings["load_s"] + result.timings["generate_s"],
            "score": result.timings["score_s"],
            "log": log_s,
        }
        phases["total"] = sum(phases.values())
        for k, v in phases.items():
            best[k] = min(best.get(k, float("inf")), v)
    n = result.manifest.n_cases
    print(f"in-process, {n} cases, existing SQLite store (best of {repeat}):")
    for k in ("load", "score", "log", "total"):
        print(f"  {k:<6} {best[k]:7.3f} s")
    print(f"  (one-time: creating a new SQLite store and experiment {create_s:.3f} s)")


def _wall(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - t0


def as_command(paths: dict[str, Path], tmp: Path, repeat: int) -> None:
    py = sys.executable
    ragtrack = [py, "-m", "ragtrack.app.cli", "run"]
    overrides = [
        f"eval_set.files=[{paths['questions']},{paths['qaset']}]",
        f"generator.params.path={paths['predictions']}",
        f"prompt.path={paths['prompt']}",
        f"index.path={paths['index']}",
        "tracking.experiment=bench",
    ]
    bare = min(_wall([py, "-c", "pass"], tmp) for _ in range(repeat))
    imp = min(_wall([py, "-c", "import mlflow"], tmp) for _ in range(repeat))
    fresh = []
    for i in range(repeat):
        fresh.append(_wall([*ragtrack, *overrides, f"tracking.uri=sqlite:///{tmp / f'fresh{i}.db'}"], tmp))
    warm = min(
        _wall([*ragtrack, *overrides, f"tracking.uri=sqlite:///{tmp / 'fresh0.db'}"], tmp)
        for _ in range(repeat)
    )
    print(f"`ragtrack run` as a command (best of {repeat}, wall clock):")
    print(f"  interpreter start (python -c pass)   {bare:7.3f} s")
    print(f"  python -c 'import mlflow'            {imp:7.3f} s")
    print(f"  ragtrack run, existing store         {warm:7.3f} s")
    print(f"  ragtrack run, new store              {min(fresh):7.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        paths = synth.write(tmp / "data", args.cases)
        in_process(paths, tmp, args.repeat)
        as_command(paths, tmp, args.repeat)


if __name__ == "__main__":
    main()
