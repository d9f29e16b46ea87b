"""The pure runner: a validated config in, a `RunResult` out. No MLflow in here.

    load (eval set, prompt, index version) -> generate -> score (each scorer, whole batch)
    -> aggregate -> gates

`run_job` adds the staged flow (dev subset first, full set only when its gate passes)
around `run`, reporting each stage to a `StageSink` (the tracking layer, or nothing).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ragtrack import __version__
from ragtrack.config import RunConfig
from ragtrack.errors import InputError
from ragtrack.eval_sets import load_eval_set, subset_eval_set
from ragtrack.gates import evaluate_gates, gate_metrics, parse_gates
from ragtrack.generators import build_generator
from ragtrack.hashing import sha1_file
from ragtrack.prompts import load_prompt
from ragtrack.provenance import git_state
from ragtrack.scorers import Batch, Scorer, build_scorer
from ragtrack.types import EvalCase, GateResult, GateSpec, Generation, RunManifest, RunResult, ScorerOutput

__all__ = ["StageSink", "index_version", "run", "run_job", "score"]


def index_version(cfg: RunConfig) -> str:
    """The configured index version, else `<stem>@<sha1>` of the index file, else its name."""
    if cfg.index.version:
        return cfg.index.version
    if cfg.index.path:
        path = Path(cfg.index.path)
        if not path.is_file():
            raise InputError(str(path), "file not found", field="index.path")
        return f"{path.stem}@{sha1_file(path)}"
    return cfg.index.name


def run(cfg: RunConfig, *, dev_subset: bool = False) -> RunResult:
    """Score the configured eval set (or its dev subset) and evaluate the gates."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # Build every component first: a bad scorer or generator parameter fails before any work.
    scorers = [build_scorer(name, params) for name, params in cfg.scorers.items()]
    generator = build_generator(cfg.generator.name, cfg.generator.params)
    gates = parse_gates(cfg.gates)
    eval_set, loaded = load_eval_set(cfg.eval_set.files, name=cfg.eval_set.name)
    if dev_subset:
        eval_set = subset_eval_set(eval_set, loaded, cfg.stages.dev_n, cfg.stages.dev_seed)
    prompt = load_prompt(cfg.prompt.path, cfg.prompt.version)
    idx_version = index_version(cfg)
    timings["load_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    generation = generator.generate(eval_set.cases, prompt.text)
    timings["generate_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    outputs, metrics, gate_results = score(eval_set.cases, generation, scorers, gates)
    timings["score_s"] = time.perf_counter() - t0

    commit, dirty = git_state()
    manifest = RunManifest(
        ragtrack_version=__version__,
        python_version=platform.python_version(),
        stage="dev" if dev_subset else "full",
        model_id=cfg.model.stamp,
        adapter_id=cfg.adapter.id,
        index_version=idx_version,
        prompt_version=prompt.version,
        prompt_sha256=prompt.sha256,
        prompt_path=prompt.path,
        eval_set_name=eval_set.name,
        eval_set_version=eval_set.version,
        eval_files=eval_set.files,
        subset=eval_set.subset,
        n_cases=len(eval_set.cases),
        generator=generator.info,
        generator_provenance=generation.provenance,
        scorers=[s.info for s in scorers],
        gates=gates,
        config_sha256=cfg.sha256,
        git_commit=commit,
        git_dirty=dirty,
        n_missing=generation.n_missing,
        n_unmatched=generation.n_unmatched,
        duplicates_dropped=generation.duplicates_dropped,
    )
    return RunResult(
        manifest=manifest,
        eval_set=eval_set,
        generation=generation,
        outputs=outputs,
        metrics=metrics,
        gates=gate_results,
        timings=timings,
    )


def score(
    cases: Sequence[EvalCase], generation: Generation, scorers: Sequence[Scorer], gates: Sequence[GateSpec]
) -> tuple[list[ScorerOutput], dict[str, float], list[GateResult]]:
    """Score a batch with every scorer, collect the metrics and evaluate the gates."""
    batch = Batch.from_generation(cases, generation)
    outputs = [s.score(batch) for s in scorers]
    metrics: dict[str, float] = {
        "predictions/n_cases": float(len(cases)),
        "predictions/n_missing": float(generation.n_missing),
        "predictions/n_unmatched": float(generation.n_unmatched),
        "predictions/duplicates_dropped": float(generation.duplicates_dropped),
    }
    for out in outputs:
        metrics.update(out.metrics)
    gate_results = evaluate_gates(gates, metrics)
    metrics.update(gate_metrics(gate_results))
    return outputs, metrics, gate_results


# A sink opens a context for one stage ("full", "dev", or the "staged" parent around
# them) and receives its result; the parent receives the furthest stage's result. The
# tracking layer implements it with MLflow runs; an exception inside the context is the
# stage failing.
StageSink = Callable[[str], AbstractContextManager[Callable[[RunResult], None]]]


@contextmanager
def _no_sink(stage: str) -> Iterator[Callable[[RunResult], None]]:
    yield lambda result: None


def run_job(cfg: RunConfig, sink: StageSink = _no_sink) -> list[RunResult]:
    """One configured job: a plain run, or a staged run (dev subset, then full if its gate passes)."""
    if not cfg.stages.enabled:
        with sink("full") as report:
            result = run(cfg)
            report(result)
        return [result]
    gate_names = set(cfg.gates)
    if cfg.stages.dev_gate not in gate_names:
        raise InputError("config", f"no gate named {cfg.stages.dev_gate!r} (gates: {sorted(gate_names)})", field="stages.dev_gate")
    with sink("staged") as report_parent:
        with sink("dev") as report:
            dev = run(cfg, dev_subset=True)
            report(dev)
        results = [dev]
        verdict = next(g for g in dev.gates if g.name == cfg.stages.dev_gate)
        if verdict.passed:
            with sink("full") as report:
                full = run(cfg)
                report(full)
            results.append(full)
        report_parent(results[-1])
    return results

