"""`ragtrack run`s on a fresh store while the MLflow UI starts: does every run land?

    python bench/race_ui.py [--trials 10] [--runs 4] [--max-delay 6] [--plain] [--seed 0] [--root DIR]

Each trial starts `--runs` real `ragtrack run` processes at once on a fresh directory and,
after a random delay of 0 to `--max-delay` seconds, the UI as README.md and `make ui`
start it: `ragtrack store init`, then `mlflow ui` on the same store. `--plain` starts
`mlflow ui` alone (no `store init`), as a user who skips the recipe would. Once the runs
have exited and the UI answers, the store is read back with plain `sqlite3` and the
trial prints: runs FINISHED / started, leftover `_alembic_tmp_*` tables, the first error
line of each failed run. `--root` runs another checkout's ragtrack (e.g. a worktree of an
older commit, with `--plain`: the race before `store init` existed). The exit status is 1
when a run was lost, a table left, or the UI did not come up.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COMBOS = [
    ("base", "v1"),
    ("lora_a", "v1"),
    ("lora_b", "v2"),
    ("base", "v2"),
    ("lora_a", "v2"),
    ("lora_b", "v1"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CODE = ROOT  # the checkout whose ragtrack runs (--root)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(CODE))
    return env


def _ui_command(uri: str, port: int, plain: bool) -> str:
    ui = f"{BIN}/mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port {port}"
    return ui if plain else f"{BIN}/ragtrack store init --tracking-uri {uri} && exec {ui}"


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def trial(n_runs: int, delay: float, plain: bool) -> tuple[int, int, bool, list[str], list[str]]:
    """(finished runs, exit codes 0, the UI answered, alembic tmp tables, first error line per failed
    process)."""
    with tempfile.TemporaryDirectory(prefix="race-ui-") as d:
        db = Path(d) / "mlflow.db"
        uri = f"sqlite:///{db}"
        logs = [Path(d) / f"run{i}.log" for i in range(n_runs)]
        runs = [
            subprocess.Popen(
                [str(BIN / "ragtrack"), "run", f"adapter={a}", f"prompt={p}", f"tracking.uri={uri}"],
                cwd=CODE,
                env=_env(),
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
            )
            for (a, p), log in zip((COMBOS * (n_runs // len(COMBOS) + 1))[:n_runs], logs, strict=True)
        ]
        time.sleep(delay)
        port = _free_port()
        ui = subprocess.Popen(
            _ui_command(uri, port, plain),
            shell=True,
            cwd=d,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            codes = [p.wait(timeout=600) for p in runs]
            deadline = time.monotonic() + 120
            while not (up := _answers(port)) and ui.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            try:
                os.killpg(ui.pid, 15)
            except ProcessLookupError:  # the UI died by itself
                pass
            ui.wait(timeout=30)
        con = sqlite3.connect(db)
        try:
            tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            finished = (
                con.execute("SELECT count(*) FROM runs WHERE status='FINISHED'").fetchone()[0]
                if "runs" in tables
                else 0
            )
        finally:
            con.close()
        errors = []
        for code, log in zip(codes, logs, strict=True):
            if code != 0:
                lines = [ln for ln in log.read_text(errors="replace").splitlines() if "rror" in ln]
                errors.append((lines or ["(no error line)"])[0][:160])
        return (
            finished,
            sum(c == 0 for c in codes),
            up,
            [t for t in tables if t.startswith("_alembic_tmp")],
            errors,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--max-delay", type=float, default=6.0)
    ap.add_argument(
        "--plain", action="store_true", help="start `mlflow ui` without `ragtrack store init` first"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose ragtrack runs (default: this one)"
    )
    args = ap.parse_args()
    global CODE
    CODE = args.root.resolve()
    rng = random.Random(args.seed)
    total_finished = total_left = ui_up = 0
    print(
        f"{'plain mlflow ui' if args.plain else 'ragtrack store init && mlflow ui'}: {args.trials} trials x "
        f"{args.runs} runs, UI after 0-{args.max_delay:g} s"
    )
    for i in range(args.trials):
        delay = rng.uniform(0, args.max_delay)
        finished, ok, up, left, errors = trial(args.runs, delay, args.plain)
        total_finished += finished
        total_left += bool(left)
        ui_up += up
        print(
            f"trial {i + 1}: UI after {delay:.1f} s: {finished}/{args.runs} FINISHED, {ok} exit 0, "
            f"UI {'answered' if up else 'DOWN'}"
            + (f", left {', '.join(left)}" if left else "")
            + "".join(f"\n    {e}" for e in errors)
        )
    print(
        f"runs FINISHED: {total_finished}/{args.trials * args.runs}; UI answered in {ui_up}/{args.trials} "
        f"trials; stores with an _alembic_tmp_* table: {total_left}"
    )
    return 0 if total_finished == args.trials * args.runs and ui_up == args.trials and not total_left else 1


if __name__ == "__main__":
    sys.exit(main())
