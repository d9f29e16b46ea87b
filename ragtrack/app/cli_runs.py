"""`ragtrack compare`, `audit` and `rescore`: thin commands over logged runs.

Each reads runs through `ragtrack.tracking.reader` into a temporary directory, hands them
to the pure modules (`compare`, `audit`, `rescore`) and prints the result. Bad input (an
unknown run, a run without ragtrack's artifacts, different eval sets, a damaged
artifact) is one line and exit 2; a failed audit check or a regression is exit 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ragtrack.analysis.compare import Comparison, RunSide
    from ragtrack.inputs.archive import ArchivedRun
    from ragtrack.run.trust import Caller
    from ragtrack.tracking.reader import LoggedRun

__all__ = [
    "add_caller_options",
    "add_parsers",
    "caller",
    "cmd_audit",
    "cmd_compare",
    "cmd_rescore",
    "print_notes",
]

PARENT_STAGES = {"sweep": "a sweep", "staged": "a staged job"}


def _uri_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        metavar="URI",
        default=None,
        help="tracking store (default: $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db)",
    )


def add_caller_options(p: argparse.ArgumentParser, set_help: str | None) -> None:
    """The options by which a caller gives what someone else's config may not choose
    (`ragtrack.run.trust`)."""
    p.add_argument(
        "--llm-base-url",
        metavar="URL",
        default=None,
        help="the OpenAI-compatible server every LLM-backed scorer calls (a run's config never chooses one)",
    )
    p.add_argument(
        "--llm-api-key-env",
        metavar="VAR",
        default=None,
        help="the environment variable holding that server's key (default: none is sent)",
    )
    if set_help:
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="set", help=set_help)


def caller(args: argparse.Namespace, overrides: list[str] | None = None) -> Caller:
    from ragtrack.run.trust import Caller

    given = overrides if overrides is not None else getattr(args, "set", [])
    return Caller(llm_base_url=args.llm_base_url, llm_api_key_env=args.llm_api_key_env, overrides=given)


def print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"ragtrack: note: {note}", file=sys.stderr)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare", help="compare two runs (or every run of an experiment with a baseline) case by case"
    )
    c.add_argument("runs", nargs="*", metavar="RUN_ID", help="RUN_A RUN_B: B is compared against A")
    c.add_argument(
        "--experiment", metavar="NAME", help="compare every finished run of this experiment with --baseline"
    )
    c.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --experiment: only runs with this param (repeatable)",
    )
    c.add_argument(
        "--baseline", metavar="RUN_ID", help="with --experiment: the run every other run is compared against"
    )
    c.add_argument(
        "--allow-different-eval-sets",
        action="store_true",
        help="compare runs of different eval sets on their shared cases",
    )
    c.add_argument(
        "--allow-different-scorers",
        action="store_true",
        help="compare a scorer's metrics although the runs were scored with another version, setting or "
        "model of it (the difference then includes the scorer's)",
    )
    c.add_argument(
        "--json", action="store_true", help="print the comparison as JSON (a list with --experiment)"
    )
    c.add_argument("--out", metavar="DIR", help="write compare_<A>_vs_<B>.md, .json and .png into DIR")
    c.add_argument(
        "--log",
        action="store_true",
        help="add the Markdown, JSON and PNG to run B's artifacts (compare/<A>/)",
    )
    c.add_argument(
        "--fail-on-regression",
        action="append",
        default=[],
        metavar="METRIC[:MARGIN]",
        help="exit 1 when B is significantly worse on METRIC: the whole 95%% CI of B − A lies beyond MARGIN "
        "(metric units, default 0) in the metric's bad direction, and for a pass/fail metric McNemar's "
        "p < 0.05 (repeatable)",
    )
    c.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    c.add_argument("--top", type=int, default=5, help="cases that moved most, per metric (default 5)")
    _uri_option(c)
    a = sub.add_parser("audit", help="prove a run: re-derive its hashes and re-score its archived answers")
    a.add_argument("run", metavar="RUN_ID")
    a.add_argument(
        "--case",
        metavar="ID",
        help="show this case: question, contexts, raw answer, every subscore and the versions behind them",
    )
    a.add_argument(
        "--deep",
        action="store_true",
        help="also embed the index's chunks afresh and compare them with the cached vectors (a poisoned "
        "shared cache fails); needs --set index.corpus.dir=DIR",
    )
    add_caller_options(
        a,
        "a server, key variable, path or model of yours in place of the run's (repeatable), "
        "e.g. --set index.corpus.dir=DIR, --set scorers.rag.model=DIR",
    )
    _uri_option(a)
    r = sub.add_parser("rescore", help="score a run's archived answers again (no generation) into a new run")
    r.add_argument("run", metavar="RUN_ID")
    r.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="scoring changes: scorers.NAME.PARAM=VALUE, scorers=NAME[,NAME], gates.NAME=[...]",
    )
    add_caller_options(r, None)
    _uri_option(r)


# ------------------------------------------------------------------ reading runs


def _uri(args: argparse.Namespace) -> str:
    from ragtrack.tracking import resolve_tracking_uri

    return resolve_tracking_uri(args.tracking_uri, Path.cwd())


@contextmanager
def _workdir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _registry_text(uri: str, prompt_uri: str) -> str:
    """The text of a Prompt Registry version in the store at `uri`."""
    from ragtrack.tracking.prompt_registry import fetch_prompt
    from ragtrack.tracking.session import connect

    return fetch_prompt(connect(uri), prompt_uri, "audit").text


def _fetch(uri: str, run_id: str, dst: Path, paths: tuple[str, ...] = ()) -> tuple[LoggedRun, ArchivedRun]:
    """The run and its downloaded archive (only `paths` besides the manifest, or everything)."""
    from ragtrack.core.errors import InputError
    from ragtrack.inputs.archive import MANIFEST, ArchivedRun
    from ragtrack.tracking.reader import download_artifacts, get_run

    run = get_run(uri, run_id)  # an id, a unique id prefix or a run name
    run_id = run.run_id
    stage = run.tags.get("ragtrack.stage", "")
    if stage in PARENT_STAGES:
        raise InputError(
            f"run {run_id}",
            f"is the parent run of {PARENT_STAGES[stage]}: its per-case results are in its child runs",
        )
    root = dst / run_id
    try:
        download_artifacts(uri, run, root, MANIFEST)
    except InputError:
        raise InputError(f"run {run_id}", f"has no {MANIFEST}: not a run logged by ragtrack") from None
    if paths:
        for p in paths:
            download_artifacts(uri, run, root, p)
    else:
        download_artifacts(uri, run, root)
    return run, ArchivedRun.read(root, f"run {run_id}")


def _side(uri: str, run_id: str, dst: Path) -> tuple[RunSide, str]:
    """The run as compare reads it, and its experiment's id."""
    from ragtrack.analysis.compare import RunRef, RunSide
    from ragtrack.inputs.archive import CASES
    from ragtrack.run.report import run_label

    run, archive = _fetch(uri, run_id, dst, (CASES,))
    m = archive.manifest
    ref = RunRef(
        run_id=run.run_id, run_name=run.run_name, label=run_label(m), eval_set_version=m.eval_set_version
    )
    side = RunSide(
        ref=ref,
        scorers=[s.name for s in m.scorers],
        params=run.params,
        metrics=run.metrics,
        cases=archive.cases(),
    )
    return side, run.experiment_id


# ------------------------------------------------------------------ compare


def _pairs(args: argparse.Namespace, uri: str) -> list[tuple[str, str]]:
    from ragtrack.core.errors import InputError
    from ragtrack.tracking.reader import find_runs, get_run

    if args.experiment is None:
        if len(args.runs) != 2 or args.baseline or args.param:
            raise InputError(
                "compare",
                "give two run ids (RUN_A RUN_B), "
                "or --experiment NAME --baseline RUN_ID [--param KEY=VALUE ...]",
            )
        return [(args.runs[0], args.runs[1])]
    if args.runs or not args.baseline:
        raise InputError(
            "compare", "--experiment compares every run with --baseline RUN_ID; give no run ids with it"
        )
    params = {}
    for p in args.param:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise InputError("--param", "expected KEY=VALUE", field=p)
        params[key] = value
    baseline = get_run(uri, args.baseline).run_id  # an id, a unique id prefix or a run name
    others = [r.run_id for r in find_runs(uri, args.experiment, params) if r.run_id != baseline]
    if not others:
        raise InputError(
            f"experiment {args.experiment}",
            "no other finished run matches" + (f" {' '.join(args.param)}" if args.param else ""),
        )
    return [(baseline, run_id) for run_id in others]


def _regressions(c: Comparison, gates: list[tuple[str, float]]) -> list[str]:
    out = []
    for metric, margin in gates:
        m = c.metric(metric)
        if m.regressed(margin):
            bound = (
                f"below {-margin:g}"
                if m.higher_is_better and margin
                else f"{'below' if m.higher_is_better else 'above'} {margin:g}"
            )
            out.append(
                f"{c.run_b.run_id} ({c.run_b.run_name}) regresses on {metric}: B − A = {m.diff:+.4g}, "
                f"{100 * c.confidence:g}% CI [{m.ci_low:+.4g}, {m.ci_high:+.4g}] lies {bound}"
            )
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ragtrack.analysis.compare import compare, parse_regression_gate
    from ragtrack.analysis.compare_report import render_overview, render_terminal, write_outputs
    from ragtrack.core.errors import InputError
    from ragtrack.tracking.reader import log_artifacts
    from ragtrack.tracking.ui_links import cases_link, served_where

    if args.resamples < 1 or args.top < 0:
        raise InputError("compare", "--resamples must be ≥ 1 and --top ≥ 0")
    gates = [parse_regression_gate(g) for g in args.fail_on_regression]
    uri = _uri(args)
    comparisons = []
    with _workdir("ragtrack-compare-") as tmp:
        sides: dict[str, RunSide] = {}
        experiment_of: dict[str, str] = {}
        for a, b in _pairs(args, uri):
            for run_id in (a, b):
                if run_id not in sides:
                    sides[run_id], experiment_of[run_id] = _side(uri, run_id, tmp)
            comparisons.append(
                compare(
                    sides[a],
                    sides[b],
                    allow_different_eval_sets=args.allow_different_eval_sets,
                    allow_different_scorers=args.allow_different_scorers,
                    n_resamples=args.resamples,
                    seed=args.seed,
                    top=args.top,
                )
            )
        failures = [line for c in comparisons for line in _regressions(c, gates)]
        for i, c in enumerate(comparisons):
            if not (args.out or args.log):
                break
            outputs = tmp / "outputs" / str(i)
            files = write_outputs(c, outputs)  # rendered once for both
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                for f in files:
                    shutil.copyfile(f, Path(args.out) / f.name)
            if args.log:
                log_artifacts(uri, c.run_b.run_id, outputs, f"compare/{c.run_a.run_id}")
    if args.json:
        docs = [c.model_dump(mode="json") for c in comparisons]
        sys.stdout.write(
            json.dumps(docs if args.experiment else docs[0], ensure_ascii=False, indent=2) + "\n"
        )
    else:
        console = Console()
        if not console.is_terminal:  # piped: wide enough for the table, not 80 columns
            console = Console(width=160)
        if args.experiment:
            render_overview(comparisons, console)
        for c in comparisons:
            render_terminal(c, console, top=args.top)
            a, b = c.run_a.run_id, c.run_b.run_id
            if experiment_of[a] == experiment_of[b]:  # the UI pairs two runs' cases within one experiment
                console.print(
                    f"case by case in the MLflow UI{served_where(uri)}: "
                    f"{cases_link(uri, experiment_of[b], a, b)}",
                    soft_wrap=True,
                    highlight=False,
                )
    if args.log:
        for c in comparisons:
            print(
                f"ragtrack: logged compare/{c.run_a.run_id}/ (Markdown, JSON, PNG) to run {c.run_b.run_id}",
                file=sys.stderr,
            )
    for line in failures:
        print(f"ragtrack: regression: {line}", file=sys.stderr)
    return 1 if failures else 0


# ------------------------------------------------------------------ audit


_MARKS = {"pass": "✓", "fail": "✗", "skip": "–"}


def _print_case(run: LoggedRun, archive: ArchivedRun, args: argparse.Namespace) -> int:
    from ragtrack.app.audit import case_detail

    d = case_detail(run, archive, args.case, caller(args))
    print(f"case {d.case_id} of run {run.run_id} ({run.run_name})")
    print(f"\nquestion:\n  {d.question}")
    print(f"\ncontexts ({len(d.contexts)}):")
    for i, c in enumerate(d.contexts):
        where = " ".join(x for x in (c.id and f"[{c.id}]", c.source_path) if x)
        print(f"  {i + 1}. {where}\n     {c.text}")
    print("\nraw answer" + (" (no prediction: scored as the empty answer)" if d.missing else "") + ":")
    print("  " + d.answer.replace("\n", "\n  "))
    print("\nscores (logged in cases.parquet | re-scored from the archive):")
    width = max((len(k) for k in d.scores), default=0)
    for k, v in d.scores.items():
        again = d.rescored[k]
        mark = "✓" if again == v or (v is None and again is None) else "✗"
        print(f"  {mark} {k:<{width}}  {v!r} | {again!r}")
    print("\nversions:")
    for k, v in d.versions.items():
        print(f"  {k}: {v}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from ragtrack.app.audit import audit

    uri = _uri(args)
    with _workdir("ragtrack-audit-") as tmp:
        run, archive = _fetch(uri, args.run, tmp)
        if args.case is not None:
            return _print_case(run, archive, args)
        report = audit(run, archive, caller(args), deep=args.deep, registry=lambda u: _registry_text(uri, u))
    print_notes(report.notes)
    print(f"audit of run {run.run_id} ({run.run_name}, experiment {run.experiment_name}):")
    for c in report.checks:
        print(f"{_MARKS[c.status]} {c.name}: {c.detail}")
    failed = sum(1 for c in report.checks if c.status == "fail")
    print(
        f"{'all checks passed' if not failed else f'{failed} check(s) failed'} "
        f"({sum(1 for c in report.checks if c.status == 'skip')} not possible here)"
    )
    return 1 if failed else 0


# ------------------------------------------------------------------ rescore


def cmd_rescore(args: argparse.Namespace) -> int:
    from ragtrack.core.errors import InputError
    from ragtrack.inputs.archive import INFLATED
    from ragtrack.inputs.config import read_yaml
    from ragtrack.run.rescore import RESCORED_FROM_TAG, apply_overrides, rescore_config
    from ragtrack.run.runner import prepare, run_stages
    from ragtrack.run.trust import settle
    from ragtrack.tracking import MlflowSink

    uri = _uri(args)
    with _workdir(f"ragtrack-rescore-{args.run[:8]}-") as tmp:
        run, archive = _fetch(uri, args.run, tmp)
        logged = read_yaml(archive.config_path)
        if not isinstance(logged, dict):
            raise InputError(str(archive.config_path), "expected a run's config.yaml (a mapping)")
        why = (
            ": rescore changes only the scoring; anything else would describe answers that were not "
            "generated that way (use `ragtrack run` for that)"
        )
        config = apply_overrides(logged, args.overrides, why=why)
        settled = settle(
            config, "scorers", caller(args, args.overrides), where=f"run {run.run_id}: config.yaml"
        )
        print_notes(settled.notes)
        cfg = rescore_config(
            settled.config,
            archive,
            uri=uri,
            experiment=run.experiment_name,
            run_name=f"{run.run_name} (rescored)",
        )
        stages = prepare(cfg)
        sink = MlflowSink(
            cfg,
            uri=uri,
            tags={RESCORED_FROM_TAG: run.run_id},
            paths_shown_as={
                str(archive.root / INFLATED): f"runs:/{run.run_id}",
                str(archive.root): f"runs:/{run.run_id}",
            },
        )
        (result,) = run_stages(stages, sink)
    new_id = sink.run_ids["full"]
    print(
        f"rescored run {new_id} ({cfg.tracking.run_name}) from {run.run_id}, "
        f"experiment {sink.experiment_name}"
    )
    before = {k: v for k, v in run.metrics.items() if not k.startswith("timing/")}
    changed = [k for k, v in sorted(result.metrics.items()) if before.get(k) != v]
    for k in changed:
        was = f"{before[k]:.6g}" if k in before else "(not logged before)"
        print(f"  {k:<42} {was} → {result.metrics[k]:.6g}")
    gone = sorted(set(before) - set(result.metrics))
    print(
        f"  {len(result.metrics) - len(changed)} metric(s) unchanged"
        + (f"; no longer scored: {', '.join(gone)}" if gone else "")
    )
    print(
        "what the scoring change did, case by case: "
        f"ragtrack compare {run.run_id} {new_id} --allow-different-scorers"
    )
    return 0
