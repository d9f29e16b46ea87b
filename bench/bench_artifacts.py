"""What a large run costs: its artifacts by file, the process's peak memory and CPU, and an audit of it.

    python bench/bench_artifacts.py [--cases 100000] [--audit]

Writes `--cases` synthetic cases (`synth.py`: a question_v2 file, a qaset, their
predictions), runs `ragtrack run` on them as a command against a new SQLite store (both
deterministic scorers; traces are off above `tracking.traces_max_cases`), and prints the
run's artifacts by size (the archived inputs, the per-case tables, the reports), their
total, the command's peak RSS and CPU time. `--audit` then runs `ragtrack audit` on the
run (which re-scores it from its artifacts) and prints its verdict, peak RSS and CPU.
Targets (issue 18): a 100,000-case run writes at most 150 MB of artifacts, peaks at
most 1 GB RSS, and passes its audit.
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


def _measured(cmd: list[str], cwd: Path) -> tuple[int, str, str, float, float, float]:
    """The command's exit code, stdout, stderr, wall time, CPU time (user + system) and peak RSS in MB (its
    own, from `wait4`)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=out, stderr=err, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0), err.seek(0)
        return (
            proc.returncode,
            out.read(),
            err.read(),
            wall,
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024,
        )  # KB on Linux


def _artifacts(store: Path) -> dict[str, int]:
    """Bytes per artifact of the store's one run, by path inside the run."""
    (root,) = [p for p in store.glob("artifacts/*/*/artifacts") if p.is_dir()] or [
        p for p in store.rglob("artifacts") if (p / "manifest.json").is_file()
    ]
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument(
        "--audit", action="store_true", help="also audit the run (re-scores it from its artifacts)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        paths = synth.write_in_child(tmp / "data", args.cases)
        store = tmp / "store"
        store.mkdir()
        uri = f"sqlite:///{store / 'mlflow.db'}"
        run = [
            sys.executable,
            "-m",
            "ragtrack.app.cli",
            "run",
            f"eval_set.files=[{paths['questions']},{paths['qaset']}]",
            f"generator.params.path={paths['predictions']}",
            f"prompt.path={paths['prompt']}",
            f"index.path={paths['index']}",
            "tracking.experiment=bench",
            f"tracking.uri={uri}",
            f"hydra.run.dir={tmp / 'hydra'}",
        ]
        code, _, err, wall, cpu, rss = _measured(run, store)
        if code != 0:
            raise SystemExit(f"ragtrack run failed:\n{err[-3000:]}")
        sizes = _artifacts(store)
        inputs = {k: v for k, v in sizes.items() if k.split("/")[0] in ("inputs", "prompt", "predictions")}
        print(
            f"ragtrack run, {args.cases:,} cases: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:,.0f} MB"
        )
        print(
            f"  artifacts {sum(sizes.values()) / 1e6:8.2f} MB in all; archived inputs "
            f"{sum(inputs.values()) / 1e6:.2f} MB"
        )
        for path, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:10]:
            print(f"    {size / 1e6:8.2f} MB  {path}")
        if args.audit:
            run_id = next(line.split()[-1] for line in err.splitlines() if "mlflow run full:" in line)
            code, out, err, wall, cpu, rss = _measured(
                [sys.executable, "-m", "ragtrack.app.cli", "audit", run_id, "--tracking-uri", uri], store
            )
            verdict = (out.strip().splitlines() or ["(no output)"])[-1]
            print(f"ragtrack audit: {verdict}; {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:,.0f} MB")
            if code != 0:
                print(out[-2000:], err[-2000:])


if __name__ == "__main__":
    main()
