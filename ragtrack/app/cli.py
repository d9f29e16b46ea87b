"""`ragtrack` command line: thin subcommands over the pure functions.

Only argparse is imported at start, so `ragtrack --help` answers at once; each
subcommand imports what it needs.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrack.core.types import GateResult, GateSpec
    from ragtrack.scorers import Scorer

__all__ = ["main"]

DEFAULT_GATES = Path(__file__).resolve().parents[2] / "conf" / "gates" / "default.yaml"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ragtrack",
        description="Experiment tracking for RAG evaluation: score eval sets, log every version stamp to "
        "MLflow.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "run",
        help="run the configured experiment (Hydra overrides follow; -m for a sweep)",
        description="Compose conf/ with Hydra, score, and log to MLflow. Everything after `run` goes to "
        "Hydra: "
        "e.g. `ragtrack run adapter=lora_a prompt=v2`, `ragtrack run -m adapter=base,lora_a prompt=v1,v2`, "
        "`ragtrack run --cfg job` to print the composed config.",
        add_help=False,
    )
    s = sub.add_parser("score", help="score predictions against an eval set, without MLflow")
    s.add_argument(
        "--eval-set",
        action="append",
        required=True,
        metavar="FILE",
        help="eval-set file (repeat to merge files by id)",
    )
    s.add_argument("--predictions", required=True, metavar="FILE", help="predictions JSONL")
    s.add_argument(
        "--scorer", action="append", metavar="NAME", help="scorer name (repeatable); or use --config"
    )
    s.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="a run's archived config.yaml: score with its scorers (and their parameters) and its gates",
    )
    s.add_argument(
        "--gates",
        metavar="FILE",
        default=None,
        help=f"gates YAML (default: {DEFAULT_GATES.name} shipped in conf/gates)",
    )
    from ragtrack.app.cli_runs import add_caller_options

    add_caller_options(
        s,
        "with --config: a scoring change or a server, key variable, path or model of yours "
        "(scorers.NAME.PARAM=VALUE, gates.NAME=[...]; repeatable)",
    )
    s.add_argument("--json", action="store_true", help='print {"metrics": {...}, "cases": [...]} to stdout')
    s.add_argument(
        "--fail-on-gate",
        action="store_true",
        help="exit 1 when a gate fails or is skipped (a metric not computed)",
    )
    s.add_argument(
        "--allow-skipped-gates", action="store_true", help="with --fail-on-gate: a skipped gate does not fail"
    )
    b = sub.add_parser("subset", help="write a reproducible subset of an eval set, with a manifest")
    b.add_argument("--src", required=True, metavar="FILE", help="eval-set file to draw from")
    b.add_argument("--n", required=True, type=int, help="number of items")
    b.add_argument("--seed", required=True, type=int, help="random seed")
    b.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="subset file to write (manifest beside it: <out stem>.manifest.json)",
    )
    sub.add_parser("scorers", help="list the registered scorers and generators with their versions")
    i = sub.add_parser(
        "index", help="build a configured retrieval index once, on disk (the runner also builds it on demand)"
    )
    i.add_argument("action", choices=["build"], help="build the index (or report the one already built)")
    i.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="Hydra overrides, as for `ragtrack run`, e.g. index=small_chunks",
    )
    c = sub.add_parser(
        "calibrate",
        help="compare a run's judge scores with human labels (MAE, within ±1, Spearman) and log them to it",
    )
    c.add_argument(
        "--golden",
        required=True,
        metavar="CSV",
        help="human labels: a header row with `id` and `human_score` (1-10)",
    )
    c.add_argument(
        "--run", required=True, metavar="RUN_ID", help="the MLflow run whose per-case scores are compared"
    )
    c.add_argument(
        "--column",
        default="rubric_judge/weighted_score",
        help="per-case column compared (default: %(default)s)",
    )
    c.add_argument(
        "--tracking-uri",
        default=None,
        help="tracking store (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)",
    )
    st = sub.add_parser(
        "store", help="create or migrate a tracking store before `mlflow ui` / `mlflow server` open it"
    )
    st.add_argument(
        "action", choices=["init"], help="create the store, or bring it to this MLflow's schema, safely"
    )
    st.add_argument(
        "--tracking-uri",
        default=None,
        help="tracking store (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)",
    )
    from ragtrack.app.cli_runs import add_parsers

    add_parsers(sub)  # compare, audit, rescore
    return p


def _finite(v: Any) -> Any:
    """A value as JSON may hold it: NaN and ±Infinity (not computed) become null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def load_gates_file(path: Path) -> list[GateSpec]:
    """Gates from a YAML file of `{name: ["metric op threshold", ...]}`."""
    from ragtrack.analysis.gates import parse_gates
    from ragtrack.core.errors import InputError
    from ragtrack.inputs.config import read_yaml

    raw = read_yaml(path) or {}
    if not isinstance(raw, dict):
        raise InputError(str(path), "expected a mapping of gate name to conditions")
    return parse_gates(raw, where=str(path))


def _scorers_and_gates(args: argparse.Namespace) -> tuple[list[Scorer], list[GateSpec]]:
    """The scorers and gates named by `--scorer`/`--gates`, or those of `--config`."""
    from ragtrack.core.errors import InputError
    from ragtrack.scorers import build_scorer

    if args.config is None:
        given = [o for o in ("set", "llm_base_url", "llm_api_key_env") if getattr(args, o)]
        if given:
            raise InputError(
                "--" + given[0].replace("_", "-"), "applies to the scorers of --config FILE only"
            )
        if not args.scorer:
            raise InputError("--scorer", "no scorer given: use --scorer NAME (repeatable) or --config FILE")
        scorers = [build_scorer(name) for name in dict.fromkeys(args.scorer)]
        return scorers, load_gates_file(Path(args.gates) if args.gates else DEFAULT_GATES)
    for option in ("scorer", "gates"):
        if getattr(args, option):
            raise InputError("--config", f"--{option} and --config both name the {option}; give one of them")
    from ragtrack.app.cli_runs import caller, print_notes
    from ragtrack.run.runner import config_scoring

    scoring = config_scoring(Path(args.config), caller(args))
    print_notes(scoring.notes)
    return scoring.scorers, scoring.gates


def _gates_failing(results: list[GateResult], allow_skipped: bool) -> list[GateResult]:
    return [g for g in results if not g.passed and not (g.skipped and allow_skipped)]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, then back as it was.

    Scoring builds a few million small, acyclic objects (cases, predictions, per-case values) that all live
    until the command ends; with the collector on, every few thousand of them trigger a pass that re-scans
    what is already there and frees nothing. Reference counting still frees everything as usual, and what
    the block built is freed inside it, so the first pass after it does not scan it either.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cmd_score(args: argparse.Namespace) -> int:
    """`ragtrack score`, with the garbage collector paused until everything it built is freed."""
    with _gc_paused():
        return _score(args)


def _score(args: argparse.Namespace) -> int:
    """`ragtrack score`: print the metrics and gates (or, with `--json`, the metrics and every case's row)."""
    from ragtrack.run.runner import score_files

    scorers, gates = _scorers_and_gates(args)
    # in memory: a scorer for one file pair is as lean as a plain script (spooling a 60,000-case set to
    # disk and reading it back would double its CPU time)
    scored = score_files(args.eval_set, args.predictions, scorers, gates, with_rows=args.json, spool=False)
    eval_set, metrics, gate_results, rows = scored.eval_set, scored.metrics, scored.gates, scored.rows
    for warning in scored.generation.warnings:
        print(f"ragtrack: warning: {warning}", file=sys.stderr)
    if scored.dropped_gates:
        names = ", ".join(scored.dropped_gates)
        print(f"ragtrack: note: gates not applicable (their scorers did not run): {names}", file=sys.stderr)
    if args.json:
        doc = {
            "metrics": {k: _finite(v) for k, v in metrics.items()},
            "cases": [{k: _finite(v) for k, v in r.items()} for r in rows],
        }
        # Serialised whole before anything is written: an error never leaves half a document.
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n")
    else:
        print(f"eval set {eval_set.version}: {len(eval_set.cases)} cases")
        for k, v in sorted(metrics.items()):
            print(f"  {k:<42} {v:.6g}")
        for g in gate_results:
            print(
                f"  gate {g.name}: {'skipped' if g.skipped else 'pass' if g.passed else 'FAIL'} ({g.detail})"
            )
    failing = _gates_failing(gate_results, args.allow_skipped_gates) if args.fail_on_gate else []
    for g in failing:
        verdict = "skipped (--allow-skipped-gates accepts that)" if g.skipped else "failed"
        print(f"ragtrack: gate {g.name} {verdict}: {g.detail}", file=sys.stderr)
    return 1 if failing else 0


def cmd_subset(args: argparse.Namespace) -> int:
    from ragtrack.core.hashing import sha1_bytes
    from ragtrack.inputs.eval_sets import SUBSET_ALGORITHM, make_subset

    data, info = make_subset(args.src, args.n, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    manifest = {
        "version": f"{out.stem}@{sha1_bytes(data)}",
        "parent_version": info.parent_version,
        "parent_path": str(args.src),
        "seed": info.seed,
        "n": info.n,
        "algorithm": SUBSET_ALGORITHM,
        "ids": info.ids,
    }
    manifest_path = out.with_name(out.stem + ".manifest.json")
    manifest_path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} ({manifest['version']}) and {manifest_path}")
    return 0


def cmd_index_build(overrides: list[str]) -> int:
    from ragtrack.app.hydra_app import compose_run_config
    from ragtrack.core.errors import InputError
    from ragtrack.index.build import index_spec, open_index

    cfg = compose_run_config(overrides).index
    if not cfg.built:
        raise InputError(
            "config",
            f"index {cfg.name!r} is a recorded one (`version`/`path`): nothing to build",
            field="index",
        )
    spec = index_spec(cfg)
    index = open_index(spec)
    m = spec.manifest
    verb = "built" if index.built else "already built"
    print(
        f"index {cfg.name}: {m.version}, {m.n_chunks} chunks of {m.n_files} files, {verb} "
        f"({spec.embedder.stats.encoded} texts embedded, {index.build_s:.2f} s)"
    )
    print(f"  {index.path}")
    return 0


def cmd_list() -> int:
    from ragtrack.generators.base import generator_names, get_generator_class
    from ragtrack.scorers.base import get_scorer_class, scorer_names

    for name in scorer_names():
        print(f"scorer    {name} v{get_scorer_class(name).version}")
    for name in generator_names():
        print(f"generator {name} v{get_generator_class(name).version}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ragtrack.analysis.calibration import calibrate, read_golden
    from ragtrack.core.errors import InputError
    from ragtrack.tracking import resolve_tracking_uri
    from ragtrack.tracking.reader import CASES_ARTIFACT, get_run, log_calibration, read_cases

    golden = Path(args.golden)
    human, lines = read_golden(golden)
    uri = resolve_tracking_uri(args.tracking_uri, Path.cwd())
    args.run = get_run(uri, args.run).run_id  # an id, a unique id prefix or a run name
    frame = read_cases(uri, args.run)
    if args.column not in frame.columns:
        raise InputError(
            "--column",
            f"run {args.run}'s {CASES_ARTIFACT} has no column {args.column!r}; "
            f"score columns: {', '.join(c for c in frame.columns if '/' in c)}",
        )
    column = dict(zip(frame["id"].astype(str), frame[args.column], strict=True))
    judge: dict[str, float] = {}
    for case_id, lineno in lines.items():
        if case_id not in column:
            raise InputError(
                str(golden), f"no case {case_id!r} in run {args.run}", where=f"line {lineno}", field="id"
            )
        try:
            judge[case_id] = float(column[case_id])
        except (TypeError, ValueError):
            judge[case_id] = math.nan
        if not math.isfinite(judge[case_id]):
            raise InputError(
                str(golden),
                f"case {case_id!r} has no {args.column} score in run {args.run}",
                where=f"line {lineno}",
                field="id",
            )
    result = calibrate(human, judge)
    log_calibration(uri, args.run, result.metrics(), golden, args.column)
    print(f"calibration of run {args.run} ({args.column}) against {golden.name}: {result.n} cases")
    print(f"  mae       {result.mae:.4g}")
    print(f"  within_1  {result.within_1:.4g}  (share of cases within ±1 point; seed 001's target: 1)")
    print(
        "  spearman  "
        + ("n/a (constant scores or one case)" if math.isnan(result.spearman) else f"{result.spearman:.4g}")
    )
    print(f"logged to run {args.run} as calibration/*")
    return 0


def cmd_store_init(args: argparse.Namespace) -> int:
    """Open the store the way every ragtrack command does (`tracking.store`): created or checked under its
    lock."""
    from ragtrack.core.redact import redact_text
    from ragtrack.tracking import resolve_tracking_uri
    from ragtrack.tracking.session import connect

    uri = resolve_tracking_uri(args.tracking_uri, Path.cwd())
    connect(uri)
    print(f"store ready: {redact_text(uri)}")
    return 0


def _parse(argv: list[str]) -> argparse.Namespace:
    """The command line, with a command's trailing list (overrides, run ids) also taking words after an
    option: `rescore RUN --tracking-uri URI scorers.x.y=1`."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    rest = next((n for n in ("overrides", "runs") if isinstance(getattr(args, n, None), list)), None)
    if rest and extra and not any(x.startswith("-") for x in extra):
        getattr(args, rest).extend(extra)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from ragtrack.core.termination import Terminated, exit_code, hold_ctrl_c

    hold_ctrl_c(True)  # a Ctrl-C during the imports waits for them
    from ragtrack.core.errors import DiskFull, InputError, run_fate

    try:
        if argv and argv[0] == "run":
            from ragtrack.app.hydra_app import run_cli

            return run_cli(argv[1:])  # it releases the Ctrl-C once Hydra has composed the config
        hold_ctrl_c(False)  # a Ctrl-C held during the imports is raised here, inside the try
        args = _parse(argv)
        if args.command == "score":
            return cmd_score(args)
        if args.command == "subset":
            return cmd_subset(args)
        if args.command == "index":
            return cmd_index_build(args.overrides)
        if args.command == "scorers":
            return cmd_list()
        if args.command == "calibrate":
            return cmd_calibrate(args)
        if args.command == "store":
            return cmd_store_init(args)
        if args.command in ("compare", "audit", "rescore"):
            from ragtrack.app import cli_runs

            return getattr(cli_runs, f"cmd_{args.command}")(args)
    except InputError as e:
        print(f"ragtrack: error: {e}", file=sys.stderr)
        return 2
    except DiskFull as e:
        print(f"ragtrack: error: {e}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated) as e:
        what = "interrupted" if isinstance(e, KeyboardInterrupt) else str(e)
        tracked = f": {run_fate(e)}" if argv[:1] == ["run"] else ""  # only `run` logs to MLflow
        print(f"ragtrack: {what}{tracked}", file=sys.stderr)
        return exit_code(e)
    _parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
