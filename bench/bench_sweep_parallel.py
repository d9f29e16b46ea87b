"""Is a parallel sweep faster here? The demo sweep (6 jobs) run serially and with joblib workers.

    python bench/bench_sweep_parallel.py [--rounds 3] [--workers 2 4]

Each round runs `ragtrack run -m adapter=base,lora_a,lora_b prompt=v1,v2` (the demo's
replayed answers, both scorers, traces on) into a new SQLite store: once with Hydra's
default launcher (one job after the other, in the process) and once per `--workers` with
`hydra/launcher=joblib hydra.launcher.n_jobs=N`, in an order that rotates every round.
Prints the median [range] of wall time and of CPU time (the command and all its worker
processes) per launcher, and the machine's core count. A worker is a new process that
imports ragtrack, MLflow and the scorers and opens the store before its first job, which
the serial launcher does once.
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


def _sweep(tmp: Path, launcher: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the command and every process it waited for) of one demo sweep into a new
    store."""
    store = Path(tempfile.mkdtemp(dir=tmp))
    cmd = [
        sys.executable,
        "-m",
        "ragtrack.app.cli",
        "run",
        "-m",
        "adapter=base,lora_a,lora_b",
        "prompt=v1,v2",
        *launcher,
        f"tracking.uri=sqlite:///{store / 'mlflow.db'}",
        f"hydra.sweep.dir={store / 'hydra'}",
    ]
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    wall = time.perf_counter() - t0
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(launcher) or 'serial'} sweep failed:\n{done.stderr[-3000:]}")
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    args = ap.parse_args()
    launchers = {"serial": []} | {
        f"joblib n_jobs={n}": ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={n}"] for n in args.workers
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in launchers}
    with tempfile.TemporaryDirectory() as d:
        names = list(launchers)
        for i in range(args.rounds):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                times[name].append(_sweep(Path(d), launchers[name]))
    cores = len(os.sched_getaffinity(0))
    print(
        f"demo sweep, 6 jobs, {cores} cores, median [range] of {args.rounds} rounds "
        f"(load average {os.getloadavg()[0]:.1f}):"
    )
    for name, got in times.items():
        wall, cpu = [t[0] for t in got], [t[1] for t in got]
        print(
            f"  {name:<16} wall {statistics.median(wall):6.1f} [{min(wall):.1f}–{max(wall):.1f}] s, "
            f"CPU {statistics.median(cpu):6.1f} [{min(cpu):.1f}–{max(cpu):.1f}] s"
        )


if __name__ == "__main__":
    main()
