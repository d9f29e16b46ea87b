"""Pydantic models passed between ragtrack's modules.

Every hand-off between loaders, generators, scorers, gates, the runner and the tracking
layer is one of these models, never a bare dict, so that a field's meaning and type are
stated once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragtrack.core.spool import Spool

__all__ = [
    "AnswerExample",
    "CaseScore",
    "ContextChunk",
    "EvalCase",
    "EvalFile",
    "EvalSet",
    "ExpectedV2",
    "GateCondition",
    "GateResult",
    "GateSpec",
    "Generation",
    "Gold",
    "IndexManifest",
    "Prediction",
    "RagReference",
    "RunManifest",
    "RunResult",
    "ScoreValue",
    "ComponentInfo",
    "ScorerOutput",
    "SubsetInfo",
    "TrackingRecord",
]

EvalFormat = Literal["question_v2", "qaset", "rag"]
ScoreValue = float | int | bool | str | None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- eval sets


class AnswerExample(_Frozen):
    """The target fields of a `question_v2` item (SPEC §1)."""

    target_audience: str
    main_topic: str
    sub_topic: str
    detailed_description: list[str]
    original_evidence: str
    predicted_questions: list[str]


class ExpectedV2(_Frozen):
    """`expected` of a `question_v2` item: the answer example and its source map."""

    answer_example: AnswerExample
    source_map: list[Any] = Field(default_factory=list)


class Gold(_Frozen):
    """Gold labels of a `qaset` item (SPEC §2)."""

    answerable: bool
    gold_ids: list[str] = Field(default_factory=list)
    gold_claim: str | None = None


class RagReference(_Frozen):
    """Ground truth of a `rag` item (SPEC §3); every field is optional."""

    ground_truth_answer: str | None = None
    ground_truth_contexts: list[str] | None = None
    graph_entities: list[str] | None = None
    metadata: dict[str, Any] | None = None


class EvalCase(_Frozen):
    """One question with whatever ground truth its eval-set files carry.

    A case may be assembled from several files of different formats that share ids
    (e.g. a `question_v2` file and its matching `qaset`); each scorer reads only the
    section it needs and skips cases without it.
    """

    id: str
    question: str
    expected: ExpectedV2 | None = None
    gold: Gold | None = None
    reference: RagReference | None = None


class EvalFile(_Frozen):
    """One eval-set file as loaded: where it is, its format and its content hash."""

    path: str
    stem: str
    format: EvalFormat
    sha1: str
    n_items: int
    artifact_path: str | None = None  # where the run archived these bytes, relative to its artifact root
    data: bytes | None = Field(
        default=None, exclude=True, repr=False
    )  # a derived file's bytes (dev subset), not on disk

    @property
    def version(self) -> str:
        """`<stem>@<sha1 of the file's bytes>` (SPEC §1)."""
        return f"{self.stem}@{self.sha1}"


class SubsetInfo(_Frozen):
    """How a derived subset was drawn: enough to rebuild it bit for bit."""

    parent_version: str
    seed: int
    n: int
    ids: list[str]


class EvalSet(_Frozen):
    """The cases of a run, with the files (and subset draw) they came from."""

    name: str
    files: list[EvalFile]
    cases: Spool[EvalCase] | list[EvalCase]  # spooled when loaded from files
    subset: SubsetInfo | None = None

    @property
    def version(self) -> str:
        """The files' versions joined with `+` (one file: just its version)."""
        return "+".join(f.version for f in self.files)


# ---------------------------------------------------------------- predictions


class ContextChunk(_Frozen):
    """A retrieved chunk shown to the model; a bare-string context has text only."""

    text: str = ""
    source_path: str | None = None
    id: str | None = None
    score: float | None = None  # the retriever's score, when a generator retrieved the chunk


class Prediction(_Frozen):
    """The model's answer to one case, as a generator produced or replayed it."""

    case_id: str
    answer: str = ""
    contexts: list[ContextChunk] = Field(default_factory=list)
    citations: list[str] | None = None
    latency_ms: float | None = None
    usage: dict[str, Any] | None = None
    missing: bool = False


class Generation(_Frozen):
    """A generator's output for a batch: one prediction per case, in case order.

    `unmatched_keys` lists at most the first 1000 unmatched predictions' keys;
    `n_unmatched` counts them all (`unmatched_keys_omitted` is the difference).
    `warnings` are problems worth telling the user that do not stop the run.
    """

    predictions: Spool[Prediction] | list[Prediction]  # spooled when matched from a file
    n_missing: int = 0
    missing_ids: list[str] = Field(default_factory=list)
    n_unmatched: int = 0
    unmatched_keys: list[str] = Field(default_factory=list)
    n_outside_subset: int = 0  # predictions for cases of the full set outside the dev subset
    duplicates_dropped: int = 0
    provenance: dict[str, str] = Field(default_factory=dict)  # e.g. the replayed file's sha1
    source_path: str | None = None  # the recorded-answers file these predictions were read from (replay)
    warnings: list[str] = Field(default_factory=list)
    metrics: dict[str, float] = Field(
        default_factory=dict
    )  # the generator's own run metrics (`generator/cache_hits`, ...)

    @property
    def unmatched_keys_omitted(self) -> int:
        """Unmatched predictions counted but not listed ("and N more")."""
        return self.n_unmatched - len(self.unmatched_keys)


# ---------------------------------------------------------------- scoring


class ComponentInfo(_Frozen):
    """What identifies a scorer or generator: name, version and parameters, logged with every run."""

    name: str
    version: str
    params: dict[str, ScoreValue | list[ScoreValue] | dict[str, float]]
    # sha256 of the component's module source; None in runs logged before it was recorded
    code_sha256: str | None = None
    provenance: dict[str, str] = Field(
        default_factory=dict
    )  # known only once it ran, e.g. the embedding model's weights sha256


class CaseScore(_Frozen):
    """One case's columns from one scorer, named `<scorer>/<column>`."""

    case_id: str
    values: dict[str, ScoreValue]


class ScorerOutput(_Frozen):
    """A scorer's result for a batch: per-case columns, aggregates and a report.

    The per-case values are kept by column: case `ids[i]`'s value of `<scorer>/<column>` is
    `columns[<scorer>/<column>][i]`. A 100,000-case run holds a few lists per scorer, not a
    dict per case.
    """

    info: ComponentInfo
    ids: list[str] = Field(default_factory=list)  # the cases scored, in case order
    columns: dict[str, list[ScoreValue]] = Field(default_factory=dict)  # one value per id
    metrics: dict[str, float]
    report_md: str = ""

    @model_validator(mode="after")
    def _aligned(self) -> ScorerOutput:
        short = [k for k, col in self.columns.items() if len(col) != len(self.ids)]
        if short:
            raise ValueError(f"columns {short} do not have one value per case id ({len(self.ids)})")
        return self

    def row(self, i: int) -> dict[str, ScoreValue]:
        """The `i`-th scored case's columns."""
        return {k: col[i] for k, col in self.columns.items()}

    def rows(self) -> Iterator[tuple[str, dict[str, ScoreValue]]]:
        """`(case id, its columns)` for every scored case, in case order, built one at a time."""
        for i, case_id in enumerate(self.ids):
            yield case_id, self.row(i)

    @property
    def cases(self) -> list[CaseScore]:
        """Every scored case as one `CaseScore` (one object per case: for small batches and tests)."""
        return [CaseScore(case_id=case_id, values=values) for case_id, values in self.rows()]


# ---------------------------------------------------------------- gates


class GateCondition(_Frozen):
    """`metric op threshold`, e.g. `eval_json_v2/eval_score_avg >= 95`."""

    metric: str
    op: Literal[">=", "<=", ">", "<", "=="]
    threshold: float


class GateSpec(_Frozen):
    """A named gate: passes when every condition holds."""

    name: str
    conditions: list[GateCondition]
    description: str = ""


class GateResult(_Frozen):
    """A gate's verdict; `skipped` when a metric it reads was not computed."""

    name: str
    passed: bool
    skipped: bool = False
    detail: str


# ---------------------------------------------------------------- runs


class IndexManifest(_Frozen):
    """What a built retrieval index holds: its version and every input that shaped it."""

    # hash of the format, the corpus files (relative paths, bytes), the chunker, its chunks and the
    # embedder's weights
    version: str
    format: str
    n_files: int
    n_chunks: int
    corpus_sha256: str  # over the (relative path, sha256) listing of the corpus files
    chunker: dict[str, int | str]
    embedder_model: str  # as configured (not part of the version: the weights are)
    embedder_sha256: str


class TrackingRecord(_Frozen):
    """Where a run was logged (filled in by the tracking layer)."""

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    start_time: str  # ISO 8601, UTC
    parent_run_id: str | None = None


class RunManifest(_Frozen):
    """Every version stamp of a run: enough to trace a score to what produced it, and to re-score it.

    The tracking layer adds where it logged the run and where it archived each input
    (`eval_files[i].artifact_path`, `prompt_artifact_path`, `predictions_artifact_path`,
    paths relative to the run's artifact root).
    """

    ragtrack_version: str
    python_version: str
    packages: dict[str, str]
    stage: Literal["full", "dev"]
    model_id: str
    adapter_id: str
    index_version: str
    index: IndexManifest | None = None  # a built index: its chunks, chunker and embedder
    prompt_version: str
    prompt_sha256: str
    prompt_path: str
    # the Prompt Registry version the prompt was fetched from (`prompts:/name/3`)
    prompt_uri: str | None = None
    eval_set_name: str
    eval_set_version: str
    eval_files: list[EvalFile]
    subset: SubsetInfo | None
    n_cases: int
    generator: ComponentInfo
    generator_provenance: dict[str, str]
    scorers: list[ComponentInfo]
    gates: list[GateSpec]
    dropped_gates: list[
        str
    ]  # configured gates not applicable: they read only metrics of scorers that did not run
    config_sha256: str
    git_commit: str
    git_dirty: bool
    n_missing: int
    n_unmatched: int
    duplicates_dropped: int
    n_outside_subset: (
        int  # dev stage: predictions for cases of the full set outside the subset (not scored, not unmatched)
    )
    missing_ids: list[str]  # cases without a prediction (scored as empty answers)
    unmatched_keys: list[str]  # predictions matching no case: their id, or q=<question>
    tracking: TrackingRecord | None = None
    prompt_artifact_path: str | None = None
    predictions_artifact_path: str | None = None
    predictions_sha1: str | None = None
    archived_sizes: dict[str, int] = Field(
        default_factory=dict
    )  # a compressed archived input (`….gz`): its size


class RunResult(_Frozen):
    """The outcome of one pure `run(config)`: everything the tracking layer logs."""

    manifest: RunManifest
    eval_set: EvalSet
    all_cases: Spool[EvalCase] | list[EvalCase]  # the full eval set's cases (a dev stage scores a subset)
    generation: Generation
    outputs: list[ScorerOutput]
    metrics: dict[str, float]
    gates: list[GateResult]
    timings: dict[str, float]
