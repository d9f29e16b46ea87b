"""A full disk at any moment of `ragtrack run`: one line, and the next run succeeds once there is room.

    python bench/enospc.py [--trials 12] [--seed 0]    (as root: each trial mounts a tmpfs)

Each trial mounts a fresh 32 MB tmpfs holding the store, its artifacts and the run's
temporary files (`TMPDIR`), starts the demo's `ragtrack run` on it and, after a random
delay spread over the run's duration, fills the tmpfs to the last byte; then it removes
the filler and runs again. Two more trials make the disk too small from the start (for a
new store; for the artifacts). Per trial: the first run's exit code, how many lines it
printed and whether any was a traceback, the second run's exit code, and the statuses of
the store's runs afterwards (a run the full disk left RUNNING must be ended by the second
command). The exit status is 1 when any trial printed more than one error line, a
traceback, or did not recover.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", TMPDIR=str(tmp))
    return env


def _mount(where: Path, size: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)


def _fill(where: Path) -> None:
    try:
        f = (where / "filler").open("wb", buffering=0)
    except OSError:  # the run filled it already
        return
    with f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


def _statuses(db: Path) -> list[str]:
    try:
        with sqlite3.connect(db) as con:
            return [s for (s,) in con.execute("SELECT status FROM runs ORDER BY start_time")]
    except sqlite3.Error:
        return []


def trial(size: str, fill_after: float | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="enospc-") as d:
        disk = Path(d)
        _mount(disk, size)
        try:
            tmp = disk / "tmp"
            tmp.mkdir()
            cmd = [str(BIN / "ragtrack"), "run", f"tracking.uri=sqlite:///{disk / 'mlflow.db'}"]
            first = subprocess.Popen(
                cmd, cwd=ROOT, env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            if fill_after is not None:
                time.sleep(fill_after)
                _fill(disk)
            out, _ = first.communicate(timeout=600)
            (disk / "filler").unlink(missing_ok=True)
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
            second = subprocess.run(cmd, cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=600)
            lines = [ln for ln in out.splitlines() if ln.strip()]
            errors = [ln for ln in lines if "error" in ln.lower()]
            return {
                "rc1": first.returncode,
                "lines": len(lines),
                "errors": errors,
                "traceback": "Traceback" in out,
                "rc2": second.returncode,
                "statuses": _statuses(disk / "mlflow.db"),
            }
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (each trial mounts a tmpfs)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    calibration = trial("32m", None)
    duration = time.monotonic() - t0
    assert calibration["rc1"] == 0, calibration
    rng = random.Random(args.seed)
    plans = [
        ("500k", None, "no room for a new store"),
        ("1300k", None, "room for the store, not the artifacts"),
    ]
    plans += [
        ("32m", rng.uniform(0.3, 1.0) * duration / 2, "disk filled during the run")
        for _ in range(args.trials)
    ]
    bad = 0
    hit = 0
    print(f"one run takes ~{duration / 2:.1f} s here; {len(plans)} trials")
    for size, delay, what in plans:
        r = trial(size, delay)
        failed = r["rc1"] != 0
        hit += failed
        ok = (
            (not failed or (len(r["errors"]) == 1 and not r["traceback"]))
            and r["rc2"] == 0
            and "RUNNING" not in r["statuses"]
        )
        bad += not ok
        when = f" after {delay:.1f} s" if delay is not None else f" ({size})"
        line = r["errors"][0][:150] if r["errors"] else "(finished before the disk filled)"
        print(
            f"{'ok ' if ok else 'BAD'} {what}{when}: exit {r['rc1']}, {len(r['errors'])} error line(s), "
            f"traceback {'yes' if r['traceback'] else 'no'}; next run exit {r['rc2']}; runs "
            f"{r['statuses']}\n    {line}"
        )
    print(
        f"{hit}/{len(plans)} trials hit the full disk; {len(plans) - bad}/{len(plans)} gave at most one "
        "error line, no traceback, and a next run that succeeded with no run left RUNNING"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
