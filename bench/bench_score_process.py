"""Whole-process CPU and wall of `ragtrack score` (eval_json_v2 only) against the plain-Python oracle.

    .venv/bin/python bench/bench_score_process.py [--n 60000] [--rounds 6] [--dir DIR] [--no-breakdown]

Issue 18, item 4: "`ragtrack score` ... its whole-process CPU on 60,000 eval_json_v2 cases is <= 1.05x the
plain-Python oracle's." Generates `--n` synthetic cases with `bench/synth.py` (the question_v2 eval file and
the predictions JSONL only; reused when `--dir` already holds them), checks once that both programs print the
same metrics, then runs, in alternated rounds (a, b, b, a, a, b, ...), each as its own process, stdout to
/dev/null:

    (a) .venv/bin/ragtrack score --eval-set questions.json --predictions predictions.jsonl \
            --scorer eval_json_v2
    (b) .venv/bin/python bench/oracle_eval_json_v2.py --eval-set questions.json \
            --predictions predictions.jsonl

CPU is the child's user+sys from `os.wait4` (interpreter start-up, imports and teardown included). Prints the
median [min-max] CPU and wall of each and the ratio of medians (ragtrack / oracle). Then, unless
`--no-breakdown`, where the extra CPU goes: one run of each with process-CPU timers around the named phase
functions (start-up+imports, eval set, predictions, scoring, rows, output+exit), and `-X importtime` self time
of ragtrack's score path grouped by top-level package.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
RAGTRACK = ROOT / ".venv" / "bin" / "ragtrack"
ORACLE = HERE / "oracle_eval_json_v2.py"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

# Child-side phase timers: wraps `module.function` names (skipped when absent), runs `main()`, and writes the
# process CPU of each phase, plus the CPU at the first phase's entry and at the end, to the file $PHASES_OUT.
PHASE_PROBE = r"""
import atexit, importlib, json, os, sys, time
clock = time.process_time
spent, marks = {}, {}

def wrap(module, name, label):
    mod = importlib.import_module(module)
    fn = getattr(mod, name, None)
    if fn is None:
        return
    def timed(*args, **kwargs):
        marks.setdefault("first_phase", clock())
        t0 = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + clock() - t0
    setattr(mod, name, timed)

def dump():
    marks["end"] = clock()
    with open(os.environ["PHASES_OUT"], "w") as f:
        json.dump({"spent": spent, "marks": marks}, f)
atexit.register(dump)
for module, name, label in json.loads(sys.argv[1]):
    wrap(module, name, label)
entry_module, entry_name = sys.argv[2].split(":")
sys.argv = sys.argv[3:]
sys.exit(getattr(importlib.import_module(entry_module), entry_name)())
"""

RAGTRACK_PHASES = [  # runner's names first: it binds the originals when imported, before theirs are wrapped
    ("ragtrack.run.runner", "load_eval_set", "eval set"),
    ("ragtrack.run.runner", "match_prediction_file", "predictions"),
    ("ragtrack.run.runner", "score", "scoring"),
    ("ragtrack.run.runner", "case_rows", "rows"),
    # `ragtrack score` without --json (what is measured) builds no rows and calls these from their modules
    ("ragtrack.inputs.eval_sets", "load_eval_set", "eval set"),
    ("ragtrack.inputs.predictions", "match_prediction_file", "predictions"),
]
ORACLE_PHASES = [
    ("oracle_eval_json_v2", "load_question_v2", "eval set"),
    ("oracle_eval_json_v2", "read_predictions", "predictions"),
    ("oracle_eval_json_v2", "score_files", "whole"),
]
PHASE_ORDER = ("start-up+imports", "eval set", "predictions", "scoring", "rows", "output+exit")


def generate(directory: Path, n: int) -> tuple[Path, Path]:
    """The question_v2 eval file and predictions of `n` synthetic cases (reused when present)."""
    questions, predictions = directory / "questions.json", directory / "predictions.jsonl"
    if questions.exists() and predictions.exists() and _n_lines(predictions) == n:
        print(f"reusing {n} cases in {directory}")
        return questions, predictions
    sys.path.insert(0, str(HERE))
    import synth

    t0 = time.perf_counter()
    paths = synth.write(directory, n)
    print(f"generated {n} cases in {time.perf_counter() - t0:.1f} s: {directory}")
    return paths["questions"], paths["predictions"]


def _n_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def commands(questions: Path, predictions: Path) -> dict[str, list[str]]:
    """The two measured command lines."""
    files = ["--eval-set", str(questions), "--predictions", str(predictions)]
    return {
        "ragtrack": [str(RAGTRACK), "score", *files, "--scorer", "eval_json_v2"],
        "oracle": [str(PYTHON), str(ORACLE), *files],
    }


def run_measured(argv: list[str], env: dict[str, str] = ENV) -> tuple[float, float]:
    """`(cpu_s, wall_s)` of one child process, stdout to /dev/null; CPU is user+sys from `os.wait4`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    with proc.stderr:
        stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # 1: a failed gate (not asked for here, but not an error either)
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {stderr.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def metric_lines(argv: list[str]) -> dict[str, str]:
    """`{name: printed value}` of the metric lines a command prints (gate detail lines left out)."""
    out = subprocess.run(argv, capture_output=True, text=True, env=ENV, check=False).stdout
    pairs = (line.split() for line in out.splitlines() if line.startswith("  ") and "/" in line.split()[0])
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def check_metrics(cmds: dict[str, list[str]]) -> None:
    """Print whether both programs print the same metrics (to printed precision)."""
    theirs, ours = metric_lines(cmds["ragtrack"]), metric_lines(cmds["oracle"])
    names = sorted(theirs.keys() | ours.keys())
    differ = [
        f"{k}: ragtrack {theirs.get(k)} oracle {ours.get(k)}" for k in names if theirs.get(k) != ours.get(k)
    ]
    print(
        f"metrics agree: {'yes' if not differ else 'NO'} ({len(names) - len(differ)} of {len(names)} equal)"
    )
    for line in differ:
        print("  " + line)


def rounds(cmds: dict[str, list[str]], n_rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Alternated rounds a,b / b,a / a,b ...: `{name: [(cpu, wall), ...]}`."""
    names = list(cmds)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for r in range(n_rounds):
        order = names if r % 2 == 0 else names[::-1]
        figures = []
        for name in order:
            cpu, wall = run_measured(cmds[name])
            samples[name].append((cpu, wall))
            figures.append(f"{name} cpu {cpu:6.2f} s wall {wall:6.2f} s")
        print(f"round {r + 1}: " + " | ".join(figures))
    return samples


def summarise(samples: dict[str, list[tuple[float, float]]]) -> None:
    """Median [min-max] of CPU and wall per program, and the ratio of medians."""
    print(f"\n{'':10} {'CPU s median [min-max]':>26} {'wall s median [min-max]':>26}")
    medians: dict[str, tuple[float, float]] = {}
    for name, runs in samples.items():
        cpu, wall = [r[0] for r in runs], [r[1] for r in runs]
        medians[name] = (statistics.median(cpu), statistics.median(wall))
        print(f"{name:10} {_span(cpu):>26} {_span(wall):>26}")
    (rc, rw), (oc, ow) = medians["ragtrack"], medians["oracle"]
    verdict = "meets" if rc / oc <= 1.05 else "misses"
    print(
        f"ratio ragtrack/oracle: CPU {rc / oc:.3f}x, wall {rw / ow:.3f}x  ({verdict} the CPU target <= 1.05x)"
    )


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def phases(argv: list[str], probes: list[tuple[str, str, str]], entry: str) -> dict[str, float]:
    """Process CPU per phase of one run of `argv` (the oracle script or `ragtrack ...`), timers around
    `probes`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "phases.json"
        script = argv[1:] if argv[0] == str(PYTHON) else ["ragtrack", *argv[1:]]
        probe = [str(PYTHON), "-c", PHASE_PROBE, json.dumps(probes), entry, *script]
        cpu, _ = run_measured(probe, {**ENV, "PHASES_OUT": str(out), "PYTHONPATH": str(HERE)})
        data = json.loads(out.read_text())
    spent, marks = data["spent"], data["marks"]
    if "whole" in spent:  # the oracle scores inline: scoring is the rest of score_files
        spent["scoring"] = spent.pop("whole") - spent.get("eval set", 0.0) - spent.get("predictions", 0.0)
    result = {"start-up+imports": marks.get("first_phase", marks["end"]), **spent}
    result["output+exit"] = cpu - sum(result.values())
    return result


def import_profile(argv: list[str], top: int = 8) -> tuple[float, list[tuple[str, float]]]:
    """`(total import s, [(top-level package, self s), ...])` of one run under `-X importtime`."""
    probe = [
        str(PYTHON),
        "-X",
        "importtime",
        "-c",
        "import sys; from ragtrack.app.cli import main; sys.argv[0] = 'ragtrack'; sys.exit(main())",
        *argv,
    ]
    done = subprocess.run(
        probe, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV, check=False
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"-X importtime run exited {done.returncode}: {done.stderr[-2000:]}")
    stderr = done.stderr
    by_package: dict[str, float] = defaultdict(float)
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line[len("import time:") :].split("|", 2)
        by_package[name.strip().split(".")[0]] += int(self_us) / 1e6
    ranked = sorted(by_package.items(), key=lambda kv: -kv[1])
    return sum(by_package.values()), ranked[:top]


def breakdown(cmds: dict[str, list[str]]) -> None:
    """Where ragtrack's extra CPU goes: phase table of one run each, and imports by package."""
    theirs = phases(cmds["ragtrack"], RAGTRACK_PHASES, "ragtrack.app.cli:main")
    ours = phases(cmds["oracle"], ORACLE_PHASES, "oracle_eval_json_v2:main")
    print("\nbreakdown, process CPU s of one timed run each (timers around the named functions):")
    print(f"  {'phase':<18} {'ragtrack':>9} {'oracle':>9} {'extra':>9}")
    for phase in PHASE_ORDER:
        a, b = theirs.get(phase, 0.0), ours.get(phase, 0.0)
        print(f"  {phase:<18} {a:9.3f} {b:9.3f} {a - b:+9.3f}")
    a, b = sum(theirs.values()), sum(ours.values())
    print(f"  {'total':<18} {a:9.3f} {b:9.3f} {a - b:+9.3f}")
    total, ranked = import_profile(cmds["ragtrack"][1:])
    shown = ", ".join(f"{name} {s * 1000:.0f}" for name, s in ranked)
    print(
        f"ragtrack imports (-X importtime, wall, self time by top-level package): {total * 1000:.0f} ms; "
        f"top ms: {shown}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=60_000, help="synthetic cases (default: %(default)s)")
    ap.add_argument(
        "--rounds", type=int, default=6, help="alternated rounds, at least 5 (default: %(default)s)"
    )
    ap.add_argument("--dir", type=Path, help="where the synthetic files go (default: a temporary directory)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the phase and import breakdown")
    args = ap.parse_args()
    if args.rounds < 5:
        ap.error("--rounds must be at least 5")
    with tempfile.TemporaryDirectory() as tmp:
        questions, predictions = generate(args.dir or Path(tmp), args.n)
        cmds = commands(questions, predictions)
        for name, argv in cmds.items():
            print(f"({name}) {' '.join(argv)}")
        check_metrics(cmds)  # also the warm-up run of each (bytecode caches, page cache)
        summarise(rounds(cmds, args.rounds))
        if not args.no_breakdown:
            breakdown(cmds)


if __name__ == "__main__":
    main()
