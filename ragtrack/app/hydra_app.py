"""The Hydra application behind `ragtrack run`: compose `conf/`, validate, run, track.

A sweep (`ragtrack run -m ...`) is driven by `ragtrack.app.sweep.TrackedSweeper`, which owns
the sweep's MLflow parent run in the launching process. Paths and the default tracking URI
are resolved against the directory ragtrack was started from (`hydra.job.chdir` is off).
Every failure ends in one line on the console: bad input exits 2, a failed run 1, a
signal 128 + its number (the run ends KILLED).
"""

from __future__ import annotations

import difflib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import hydra
import psutil
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ragtrack.analysis.summary import JobOutcome
from ragtrack.app.sweep import PARENT_RUN_ENV, SWEEP_PID_ENV, raw_overrides
from ragtrack.core.errors import InputError, RunNotEnded, disk_full, run_fate
from ragtrack.core.redact import redact_overrides, redact_text
from ragtrack.core.termination import (
    Terminated,
    exit_if_stopped,
    handle_termination,
    hold,
    hold_ctrl_c,
    release,
    watch_parent,
)
from ragtrack.inputs.config import RunConfig

if TYPE_CHECKING:
    from ragtrack.core.types import RunResult
    from ragtrack.inputs.prompts import Prompt

__all__ = ["CONF_DIR", "check_overrides", "compose_run_config", "execute", "execute_job", "main", "run_cli"]

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")
DEBUG_ENV = "RAGTRACK_DEBUG"  # set to 1 for the full traceback of a failed run on the console
log = logging.getLogger("ragtrack")
# `${coalesce:a,b,…}`: the first value that is not null (conf/generator/openai.yaml: the adapter's served
# name, else the model id).
OmegaConf.register_new_resolver(
    "coalesce", lambda *values: next((v for v in values if v is not None), None), replace=True
)


def execute(
    cfg: RunConfig,
    *,
    base_dir: str | Path = ".",
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
) -> list[RunResult]:
    """Run one configured job, tracked in MLflow unless tracking is disabled.

    Every input is validated first: bad input raises `InputError` before any store or run exists.
    """
    return execute_job(cfg, base_dir=base_dir, parent_run_id=parent_run_id, tags=tags)[0]


def execute_job(
    cfg: RunConfig,
    *,
    base_dir: str | Path = ".",
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
    reuse: bool = False,
) -> tuple[list[RunResult], JobOutcome]:
    """`execute`, plus the run that holds the job's result; with `reuse`, an earlier finished run when one
    matches.

    A tracked job's outermost run carries its key (`ragtrack.run.jobkey`). With `reuse` (sweep
    jobs) and not `tracking.force`, a FINISHED run of the experiment with the same key is
    returned instead of scoring again: no run is created, and the results are empty.
    """
    from ragtrack.run.runner import prepare, run_stages
    from ragtrack.tracking import resolve_tracking_uri

    uri = resolve_tracking_uri(cfg.tracking.uri, base_dir)
    stages = prepare(cfg, prompt=registry_prompt(cfg, uri))
    if not cfg.tracking.enabled:
        return run_stages(stages), JobOutcome(run_id=None)
    from ragtrack.run.jobkey import job_key
    from ragtrack.tracking import MlflowSink

    sink = MlflowSink(cfg, uri=uri, parent_run_id=parent_run_id, tags=tags, job_key=job_key(stages))
    if reuse and not cfg.tracking.force and (found := sink.finished_run_with_key()):
        log.info(
            "reusing run %s: it finished with the same inputs, config and scorer versions "
            "(tracking.force=true scores again)",
            found,
        )
        return [], JobOutcome(run_id=found, reused=True)
    results = run_stages(stages, sink)
    log.info("tracking uri: %s (experiment %r)", redact_text(uri), sink.experiment_name)
    for stage, run_id in sink.run_ids.items():
        log.info("mlflow run %s: %s", stage, run_id)
    return results, JobOutcome(run_id=sink.top_run_id)


def registry_prompt(cfg: RunConfig, uri: str) -> Prompt | None:
    """The prompt `prompt.uri` names, from the Prompt Registry of the run's store (None for a prompt file)."""
    if cfg.prompt.uri is None:
        return None
    from ragtrack.tracking.prompt_registry import fetch_prompt
    from ragtrack.tracking.session import connect
    from ragtrack.tracking.store import sqlite_path

    db = sqlite_path(uri)
    if db is not None and not db.exists():
        raise InputError(
            str(db),
            "no such store: a registry prompt is read from the run's tracking store (tracking.uri)",
            field="prompt.uri",
        )
    return fetch_prompt(connect(uri), cfg.prompt.uri, cfg.prompt.label)


def _summary(cfg: RunConfig, results: list[RunResult]) -> None:
    """One block per stage: the stamps, each scorer's aggregates on one line, the gates, what was missing."""
    from ragtrack.run.report import run_label

    for r in results:
        m = r.manifest
        log.info("%s · %s · %d cases · %s", m.stage, run_label(m), m.n_cases, m.eval_set_version)
        by_scorer: dict[str, list[str]] = {}
        for k, v in sorted(r.metrics.items()):
            scope, _, name = k.partition("/")
            if scope not in ("timing", "gate"):
                by_scorer.setdefault(scope, []).append(f"{name}={v:.4g}")
        for scope, parts in by_scorer.items():
            log.info("  %s: %s", scope, " ".join(parts))
        if r.gates:
            log.info(
                "  gates: %s",
                " ".join(
                    f"{g.name}={'skip' if g.skipped else 'pass' if g.passed else 'FAIL'}" for g in r.gates
                ),
            )
        g = r.generation
        for w in g.warnings:
            log.warning("  warning: %s", w)
        if m.dropped_gates:
            log.info("  gates not applicable (their scorers did not run): %s", ", ".join(m.dropped_gates))
        if g.n_missing:
            log.warning(
                "  warning: %d case(s) had no prediction and were scored as empty answers: %s",
                g.n_missing,
                _ids(g.missing_ids, g.n_missing),
            )
        if g.n_unmatched:
            log.warning(
                "  warning: %d prediction(s) matched no case: %s",
                g.n_unmatched,
                _ids(g.unmatched_keys, g.n_unmatched),
            )
    if cfg.stages.enabled and len(results) == 1:
        from ragtrack.analysis.gates import failed_conditions

        dev = results[0]
        spec = next(s for s in dev.manifest.gates if s.name == cfg.stages.dev_gate)
        verdict = next(g for g in dev.gates if g.name == spec.name)
        why = (
            "skipped: " + verdict.detail
            if verdict.skipped
            else "; ".join(failed_conditions(spec, dev.metrics))
        )
        log.info(
            "full stage skipped: gate %s failed (%s); exit 0: a gate's verdict is a result, logged as "
            "gate/all and the tag ragtrack.gates_passed=false for CI to check "
            "(ragtrack score --fail-on-gate exits 1)",
            spec.name,
            why,
        )


def _ids(ids: list[str], total: int, limit: int = 10) -> str:
    more = total - min(len(ids), limit)
    return ", ".join(ids[:limit]) + (f" … and {more} more (see report.md)" if more > 0 else "")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> JobOutcome:
    """Hydra task: returns the job's run (for the sweep summary); a sweep job may reuse an earlier run."""
    release()  # start-up is over: a signal held during it is raised here, before any run exists
    hc = HydraConfig.get()
    in_sweep = hc.mode == RunMode.MULTIRUN
    worker = in_sweep and os.environ.get(SWEEP_PID_ENV, str(os.getpid())) != str(os.getpid())
    if worker:
        watch_parent()  # a worker process: stop (and end the run KILLED) if the launcher dies
    tags = {"ragtrack.hydra_overrides": " ".join(redact_overrides(raw_overrides(hc.overrides.task)))[:5000]}
    if in_sweep:
        tags["ragtrack.sweep_job"] = str(hc.job.num)
    stopped: BaseException | None = None
    try:
        with handle_termination():
            try:
                run_cfg = RunConfig.from_container(_resolved(cfg))
                results, outcome = execute_job(
                    run_cfg,
                    base_dir=hc.runtime.cwd,
                    parent_run_id=os.environ.get(PARENT_RUN_ENV),
                    tags=tags,
                    reuse=in_sweep,
                )
            except Exception as e:
                if in_sweep:
                    raise  # the sweeper reports each failed job in one line and counts it
                _report_failure(e)
    except (KeyboardInterrupt, Terminated) as e:
        stopped = e
        raise
    finally:
        if worker:
            exit_if_stopped(stopped)
    _summary(run_cfg, results)
    return outcome


def _resolved(cfg: DictConfig) -> dict[str, Any]:
    """The config with every interpolation resolved; a broken one is bad input naming the key."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        container = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as e:
        raise InputError("config", str(e).splitlines()[0], field=getattr(e, "full_key", None)) from None
    assert isinstance(container, dict)
    return cast("dict[str, Any]", container)  # a composed config's keys are strings


def compose_run_config(overrides: list[str]) -> RunConfig:
    """The config `ragtrack run <overrides>` would run, composed and validated without running it."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    check_overrides(overrides)
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose("config", overrides=overrides)
    except HydraException as e:
        raise InputError("overrides", str(e).splitlines()[0]) from None
    return RunConfig.from_container(_resolved(cfg))


def _report_failure(e: Exception) -> None:
    """One line for the console (the traceback only with RAGTRACK_DEBUG=1), then exit 2 or 1."""
    if isinstance(e, InputError):
        log.error("error: %s", e)
        sys.exit(2)
    if isinstance(e, RunNotEnded):  # the store went away: the message says what became of the run
        log.error("error: %s", e)
        sys.exit(1)
    fate = run_fate(e)
    if (full := disk_full(e, Path.cwd(), None)) is not None:
        log.error("error: %s (%s)", full, fate)
    elif os.environ.get(DEBUG_ENV):
        log.exception("error: %s: %s (%s)", type(e).__name__, e, fate)
    else:
        log.error("error: %s: %s (%s; set %s=1 for the traceback)", type(e).__name__, e, fate, DEBUG_ENV)
    sys.exit(1)


# ------------------------------------------------------------------ overrides


def _groups() -> dict[str, list[str]]:
    conf = Path(CONF_DIR)
    return {
        p.name: sorted(f.stem for f in p.glob("*.yaml"))
        for p in conf.iterdir()
        if p.is_dir() and p.name != "hydra"
    }


def check_overrides(args: list[str]) -> None:
    """Catch a mistyped key or group option before Hydra does (its advice, `+key=…`, would then fail).

    `adaptr=lora_b` → `unknown config group or key 'adaptr'; did you mean 'adapter'?`;
    `adapter=lora_c` → `unknown adapter 'lora_c'; choose from base, lora_a, lora_b`.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    candidates = [a for a in args if not a.startswith("-") and "=" in a]
    try:
        overrides = OverridesParser.create().parse_overrides(candidates)
    except OverrideParseException as e:
        raise InputError("overrides", str(e).splitlines()[0]) from None
    groups = _groups()
    known = set(groups) | set(RunConfig.model_fields)
    for o in overrides:
        key = o.key_or_group
        top = key.split(".")[0].split("/")[0]
        if top == "hydra" or o.is_add() or o.is_force_add() or o.is_delete():
            continue
        if top not in known:
            hint = difflib.get_close_matches(top, sorted(known), n=1)
            did_you_mean = f"; did you mean {hint[0]!r}?" if hint else f"; known: {', '.join(sorted(known))}"
            raise InputError(
                "overrides", f"unknown config group or key {top!r}{did_you_mean}", field=o.input_line or key
            )
        if key in groups and o.value_type is not None:
            values = (
                list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
            )
            for v in values:
                if v not in groups[key] and v != "null":
                    raise InputError(
                        "overrides", f"unknown {key} {v!r}; choose from {', '.join(groups[key])}", field=key
                    )
    nested = [
        o
        for o in overrides
        if "." in o.key_or_group
        and o.key_or_group.split(".")[0] != "hydra"
        and not (o.is_add() or o.is_force_add() or o.is_delete())
    ]
    if nested:
        _check_nested(nested, [o for o in overrides if o.key_or_group in groups])


def _first_choice(o: Any) -> str:
    """A group override's value as composed: a sweep's first value."""
    return next(iter(o.sweep_string_iterator())) if o.is_sweep_override() else o.get_value_element_as_str()


def _check_nested(nested: list[Any], selections: list[Any]) -> None:
    """A dotted key that is not in the composed config is bad input with the sibling it most likely meant.

    Hydra would say "To append to your config use +key=…", and following that advice only
    moves the error to the scorer's parameters. The config is composed with the group
    choices given (a sweep's first value of each).
    """
    from hydra import compose, initialize_config_dir
    from omegaconf import DictConfig

    chosen = [f"{o.key_or_group}={_first_choice(o)}" for o in selections]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=chosen)
    for o in nested:
        node: Any = cfg
        parts = o.key_or_group.split(".")
        for depth, part in enumerate(parts):
            if not isinstance(node, DictConfig):
                break  # a value, not a mapping: Hydra and the config's own checks take it from here
            keys = [str(k) for k in node.keys()]  # `in` is false for a key whose value is mandatory (???)
            if part not in keys:
                hint = difflib.get_close_matches(part, keys, n=1)
                advice = (
                    f"did you mean {'.'.join([*parts[:depth], hint[0]])!r}?"
                    if hint
                    else f"known: {', '.join(keys)}"
                )
                where = ".".join(parts[:depth]) or "the config"
                raise InputError(
                    "overrides",
                    f"unknown key {part!r} in {where}; {advice}",
                    field=o.input_line or o.key_or_group,
                )
            if OmegaConf.is_missing(node, part):
                break  # a mandatory value (???): the override gives it
            node = node[part]


def run_cli(args: list[str]) -> int:
    """`ragtrack run [overrides]`: hand the arguments to Hydra as if it were the program.

    `--overrides "<a=1 b=2>"` takes them as one shell-quoted string (as `mlflow run -P` passes them).
    """
    if args[:1] == ["--overrides"] and len(args) >= 2:
        import shlex

        args = [*shlex.split(args[1]), *args[2:]]
    check_overrides(args)
    sys.argv = ["ragtrack run", *args]
    with handle_termination(before_raise=_stop_children):
        hold()  # until the job or the sweep begins (`release`): Hydra composing the config is not cut short
        hold_ctrl_c(False)  # a Ctrl-C held during the imports is now held by `hold`
        main()
        release()  # Hydra ran no job (`--help`, `--cfg job`)
    return 0


def _stop_children(signum: int) -> None:
    """Pass a signal on to our child processes (sweep workers) and give them time to end their runs.

    It runs in the signal handler, so psutil is imported with this module, not here: a Ctrl-C landing
    while hydra or MLflow import psutil would find the module half initialised (`AttributeError`).
    """
    children = psutil.Process().children(recursive=True)
    workers = []
    for child in children:
        try:
            child.send_signal(signum)
            if "resource_tracker" not in " ".join(
                child.cmdline()
            ):  # pools' trackers hold no run and outlive the signal
                workers.append(child)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(workers, timeout=15)
