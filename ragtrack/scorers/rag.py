"""Scorer family `rag`: seed 002's six RAG metrics over `rag` cases (SPEC §3).

| metric             | relation                                     | needs ground truth |
|--------------------|----------------------------------------------|--------------------|
| faithfulness       | answer ↔ retrieved contexts                  | no                 |
| context_relevance  | retrieved contexts ↔ question                | no                 |
| context_recall     | ground-truth answer ↔ retrieved contexts     | yes                |
| context_precision  | ground-truth contexts ↔ retrieved (by rank)  | yes                |
| answer_relevancy   | answer ↔ question                            | no                 |
| answer_correctness | answer ↔ ground-truth answer                 | yes                |

The decisions (statements, support, relevance) come from a backend (`judge.RagJudge`;
`offline` is `judge.OfflineJudge`, `llm` is `llm_judge.LlmJudge`); every formula is here.
A metric whose inputs are missing, or whose decision the backend could not get, is NaN
with its reason in `rag/not_computed`, left out of the mean and not counted in
`rag/<metric>_n`. Batch design: every distinct text of the batch is handed to the offline
backend once (`prepare`), so the embedding model encodes them in one pass; the llm backend
asks every question of the batch in concurrent rounds first (`LlmJudge.prefetch`).
"""

from __future__ import annotations

import json
import math
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from rapidfuzz import fuzz

from ragtrack.clients.embeddings import DEFAULT_MODEL
from ragtrack.core.cachedir import cache_root
from ragtrack.core.errors import InputError
from ragtrack.core.registry import code_sha256, reaching
from ragtrack.core.types import ComponentInfo, EvalCase, Prediction, ScorerOutput, ScoreValue
from ragtrack.inputs.prompts import Prompt
from ragtrack.nlp.entities import focus
from ragtrack.nlp.questions import asks
from ragtrack.nlp.text import norm
from ragtrack.scorers import reliability, support_model
from ragtrack.scorers.base import (
    Batch,
    CaseColumns,
    CaseTerms,
    Scorer,
    ScorerParams,
    ScoreTable,
    mean_or_nan,
    mean_terms,
    register_scorer,
)
from ragtrack.scorers.judge import Encoder, JudgeFailure, OfflineJudge, RagJudge, Verdict
from ragtrack.scorers.llm_batch import JudgeLLMSettings, LlmBatch, llm_info, load_prompts
from ragtrack.scorers.llm_judge import PROMPTS as LLM_JUDGE_PROMPTS
from ragtrack.scorers.llm_judge import LlmJudge
from ragtrack.scorers.nli_judge import NliJudge, NliModel
from ragtrack.scorers.reranker import RerankedJudge, Reranker

__all__ = [
    "METRICS",
    "EmbeddingScorer",
    "SupportParams",
    "Metric",
    "NO_ANSWER",
    "NO_CONTEXTS",
    "RagInputs",
    "RagParams",
    "RagScorer",
    "answer_correctness",
    "aggregate_means",
    "answer_relevancy",
    "average_precision",
    "context_precision",
    "context_recall",
    "context_relevance",
    "decided",
    "faithfulness",
    "rag_inputs",
]

NAME = "rag"
METRICS = (
    "faithfulness",
    "context_relevance",
    "context_recall",
    "context_precision",
    "answer_relevancy",
    "answer_correctness",
)


NLI_KEYS = {"nli_model", "nli_batch_size", "nli_candidates"}  # logged only when the nli backend judges
RERANKER_KEYS = {"reranker_model", "reranker_batch_size"}  # logged only when a reranker judges relevance
RELEVANCE = ("answer_relevancy", "context_relevance")


def _found(model: str | None) -> str | None:
    """A model that cannot be found fails when the scorer is built, before any run starts."""
    from ragtrack.clients.embeddings import resolve_model

    if model is None:
        return model
    try:
        resolve_model(model)
    except InputError as e:
        raise ValueError(f"{model}: {e.problem}") from None
    return model


# version 12's match thresholds, with the only values a config may still hold them at
RETIRED = {"support_threshold": 0.75, "lexical_threshold": 0.4, "sources_lexical_threshold": 0.6}


class SupportParams(ScorerParams):
    """The backends' settings, shared by `rag` and `earag` (conf/scorers/*.yaml document each)."""

    backend: Literal["offline", "llm", "nli"] = "offline"
    llm: JudgeLLMSettings | None = None  # the llm backend's server, decoding and limits
    nli_model: str | None = reaching(
        "model", None
    )  # the nli backend's cross-encoder: a local folder or a hub name
    nli_batch_size: int = Field(default=16, ge=1)
    nli_candidates: int = Field(
        default=3, ge=1
    )  # source sentences per statement the nli model reads (see nli_judge)
    model: str = reaching("model", DEFAULT_MODEL)  # the embedding model: a local folder or a hub name
    batch_size: int = Field(default=64, ge=1)
    embedding_cache: bool = True
    relevance_cosine_weight: float = Field(default=0.5, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _retired_keys_at_their_last_defaults(cls, data: Any) -> Any:
        """The thresholds versions ≤ 12 matched by, which the support model replaced (version 13): a config
        logged by an older run holds them at their defaults and still loads (`ragtrack rescore`); another
        value asked for a behaviour that is gone, and is an error naming the key."""
        if not isinstance(data, dict):
            return data
        for key, default in RETIRED.items():
            if key in data and data[key] != default:
                raise ValueError(
                    f"{key} was retired in version 13: a fitted support model decides support"
                    " (docs/SPEC.md §3); remove the key"
                )
        return {k: v for k, v in data.items() if k not in RETIRED}

    @field_validator("model", "nli_model")
    @classmethod
    def _model_exists(cls, v: str | None) -> str | None:
        return _found(v)

    @classmethod
    def idle(cls, raw: Mapping[str, Any]) -> frozenset[str]:
        """The llm block unless the llm backend judges, `nli_model` unless the nli backend does."""
        backend = raw.get("backend", cls.model_fields["backend"].default)
        return frozenset(
            field for field, used_by in (("llm", "llm"), ("nli_model", "nli")) if backend != used_by
        )

    @model_validator(mode="after")
    def _backend_has_its_settings(self) -> SupportParams:
        if self.backend == "llm" and self.llm is None:
            raise ValueError("backend llm needs the llm block (llm.base_url, llm.model, …)")
        if self.backend == "nli" and not self.nli_model:
            raise ValueError(
                "backend nli needs nli_model: a CrossEncoder NLI model (a local folder or a hub name)"
            )
        return self


class RagParams(SupportParams):
    """SPEC §3's tunable numbers, all logged."""

    match_ratio: float = Field(default=90.0, ge=0, le=100)
    match_scorer: Literal["ratio", "partial_ratio"] = "ratio"
    correctness_f1_weight: float = Field(
        default=1.0, ge=0, le=1
    )  # 1: no cosine term (it favours near-copies)
    # answer_relevancy and context_relevance from this reranking cross-encoder (offline and nli backends)
    reranker_model: str | None = reaching("model", None)
    reranker_batch_size: int = Field(default=16, ge=1)

    @field_validator("reranker_model")
    @classmethod
    def _reranker_exists(cls, v: str | None) -> str | None:
        return _found(v)

    @model_validator(mode="after")
    def _reranker_has_a_backend_to_serve(self) -> RagParams:
        if self.reranker_model and self.backend == "llm":
            raise ValueError(
                "reranker_model serves the offline and nli backends; the llm backend judges relevance"
            )
        return self


class RagInputs(BaseModel):
    """The fields of one case the metrics read (contexts as texts, empty texts dropped)."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: str
    contexts: list[str]
    ground_truth_answer: str | None
    ground_truth_contexts: list[str] | None


class Metric(BaseModel):
    """A metric's value for one case, or NaN with the reason it was not computed."""

    model_config = ConfigDict(frozen=True)

    value: float
    reason: str = ""
    verdicts: list[Verdict] = Field(default_factory=list)  # the unsupported statements' evidence

    @classmethod
    def nan(cls, reason: str) -> Metric:
        return cls(value=math.nan, reason=reason)


def rag_inputs(case: EvalCase, pred: Prediction) -> RagInputs:
    ref = case.reference
    gt_answer = (ref.ground_truth_answer or "").strip() if ref else ""
    gt_contexts = [c for c in (ref.ground_truth_contexts or []) if c.strip()] if ref else []
    return RagInputs(
        question=case.question,
        answer=pred.answer,
        contexts=[c.text for c in pred.contexts if c.text.strip()],
        ground_truth_answer=gt_answer or None,
        ground_truth_contexts=gt_contexts or None,
    )


# ------------------------------------------------------------------ the six formulas

NO_ANSWER = "empty answer"
NO_CONTEXTS = "no retrieved contexts"
_NO_GT_ANSWER = "no ground_truth_answer"


def _share(verdicts: Sequence[Verdict]) -> float:
    """The mean graded support of the statements (`Verdict.score`: 1 or 0 for a yes/no backend)."""
    return math.fsum(v.score for v in verdicts) / len(verdicts)


def _agreement(verdicts: Sequence[Verdict]) -> float:
    """The mean agreement of the statements with the other text: 1 for a supported statement, whatever its
    wording; its graded score (below ½) for one that is not; 0 for one that contradicts it. Closeness does
    not count among supported statements, so a near-copy of the reference with one error cannot outscore a
    correct paraphrase."""
    return math.fsum(0.0 if v.contradicted else 1.0 if v.supported else v.score for v in verdicts) / len(
        verdicts
    )


def _supported_in_contexts(text: str, inp: RagInputs, judge: RagJudge, no_statements: str) -> Metric:
    statements = judge.statements(text)
    if not statements:
        return Metric.nan(no_statements)
    if not inp.contexts:
        return Metric.nan(NO_CONTEXTS)
    verdicts = judge.support(statements, inp.contexts)
    return Metric(value=_share(verdicts), verdicts=[v for v in verdicts if not v.supported])


def faithfulness(inp: RagInputs, judge: RagJudge) -> Metric:
    """Supported answer statements / answer statements, against the retrieved contexts."""
    return _supported_in_contexts(inp.answer, inp, judge, NO_ANSWER)


def context_recall(inp: RagInputs, judge: RagJudge) -> Metric:
    """Supported ground-truth statements / ground-truth statements, against the retrieved contexts."""
    return _supported_in_contexts(inp.ground_truth_answer or "", inp, judge, _NO_GT_ANSWER)


def context_relevance(inp: RagInputs, judge: RagJudge) -> Metric:
    """The mean relevance (0..1) of the retrieved chunks to the question (`RagJudge.relevances`)."""
    if not inp.contexts:
        return Metric.nan(NO_CONTEXTS)
    return Metric(value=math.fsum(judge.relevances(inp.question, inp.contexts)) / len(inp.contexts))


def average_precision(relevant: Sequence[bool]) -> float:
    """Mean of precision@k over the relevant positions k (1-based); 0 when none is relevant."""
    hits, total = 0, 0.0
    for k, rel in enumerate(relevant, 1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def context_precision(inp: RagInputs, match_ratio: float, match_scorer: str = "ratio") -> Metric:
    """Average precision of the ranking, chunk k relevant when its rapidfuzz `match_scorer` (`ratio`: the
    whole texts; `partial_ratio`: the shorter against its best-aligned piece of the longer) to a
    ground-truth context ≥ `match_ratio`."""
    if not inp.ground_truth_contexts:
        return Metric.nan("no ground_truth_contexts")
    if not inp.contexts:
        return Metric.nan(NO_CONTEXTS)
    gts = [norm(g) for g in inp.ground_truth_contexts]
    similarity = getattr(fuzz, match_scorer)
    relevant = [any(similarity(norm(c), g) >= match_ratio for g in gts) for c in inp.contexts]
    return Metric(value=average_precision(relevant))


def answer_relevancy(inp: RagInputs, judge: RagJudge) -> Metric:
    """The backend's relevance of the whole answer to the question; an empty answer is 0."""
    if not inp.answer.strip():
        return Metric(value=0.0, reason=NO_ANSWER)
    return Metric(value=judge.relevance(inp.question, inp.answer))


def answer_correctness(inp: RagInputs, judge: RagJudge, f1_weight: float) -> Metric:
    """`f1_weight` · statement-F1 + (1 − f1_weight) · max(0, cos(answer, ground truth)); an empty answer is 0.

    Precision: answer statements supported by the ground truth; recall: ground-truth
    statements supported by the answer.
    """
    gt = inp.ground_truth_answer
    gt_statements = judge.statements(gt or "")
    if not gt or not gt_statements:
        return Metric.nan(_NO_GT_ANSWER)
    statements = judge.statements(inp.answer)
    if not statements:
        return Metric(value=0.0, reason=NO_ANSWER)
    precision = _agreement(judge.support(statements, [gt]))
    recall = _agreement(judge.support(gt_statements, [inp.answer]))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Metric(value=f1_weight * f1 + (1 - f1_weight) * max(0.0, judge.cosine(inp.answer, gt)))


def texts_of(inp: RagInputs, judge: RagJudge) -> set[str]:
    """Every text the six metrics ask the backend to embed for this case: the focus of each ask of the
    question, the sentences of the contexts, and the answer and ground truth with their statements."""
    texts = {focus(a) for a in asks(inp.question)}
    for chunk in inp.contexts:
        texts.update(judge.statements(chunk))
    for whole in (inp.answer, inp.ground_truth_answer):
        if whole and whole.strip():
            texts.add(whole)
            texts.update(judge.statements(whole))
    return texts


# ------------------------------------------------------------------ the scorer


def _verdicts_json(verdicts: Sequence[Verdict]) -> str:
    return json.dumps([{"statement": v.statement, "reason": v.reason} for v in verdicts], ensure_ascii=False)


class EmbeddingScorer(Scorer):
    """A scorer over `rag` cases that judges with a backend: `offline` (its encoder and judge) or `llm`.

    With `backend: llm` the prompt files (`LLM_PROMPTS`) are read when the scorer is built,
    logged as `llm.<kind>_prompt_sha256` with the `llm` settings, and the batch's metrics
    carry the backend's question counts (`<name>/llm/…`); more failed questions than
    `llm.max_failure_rate` allows fail the run (`LlmFailureRateError`).
    """

    section = "reference"
    LLM_PROMPTS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]]
    LLM_FAILURE: ClassVar[str] = "failure"  # what a question without a usable answer is called in the metrics
    # a param read by only some of the metrics with a measured reliability: those metrics (any other param:
    # all of them), so that a report withholds a metric's figure only for a setting that metric reads
    READ_BY: ClassVar[dict[str, frozenset[str]]] = {
        "match_ratio": frozenset({"context_precision"}),
        "match_scorer": frozenset({"context_precision"}),
        "correctness_f1_weight": frozenset({"answer_correctness"}),
        "relevance_cosine_weight": frozenset(RELEVANCE),  # the offline judge's `relevance`
    }
    p: SupportParams
    _encoder: Encoder | None = None
    _nli: NliModel | None = None
    _reranker: Reranker | None = None

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.prompts: dict[str, Prompt] = {}
        if (llm := self.llm_settings) is not None:
            self.prompts = load_prompts(llm, self.LLM_PROMPTS, field=f"scorers.{self.name}.llm.prompt_dir")

    @property
    def llm_settings(self) -> JudgeLLMSettings | None:
        """The judge's settings when the llm backend judges, else None."""
        return self.p.llm if self.p.backend == "llm" else None

    @property
    def info(self) -> ComponentInfo:
        """Every parameter; the `llm` block (flat, with the prompts' sha256) and the `nli_*` keys only with
        their backend; with the offline backend, the sha256 of the support model it weighs support by."""
        params: dict[str, Any] = self.p.model_dump(
            exclude={"llm"}
            | (set() if self.p.backend == "nli" else NLI_KEYS)
            | (set() if self.reranker_name else RERANKER_KEYS)
        )
        if (llm := self.llm_settings) is not None:
            params.update(llm_info(llm, self.prompts))
        if self.p.backend == "offline":
            params["support_model_sha256"] = support_model.sha256()
        return ComponentInfo(
            name=self.name, version=self.version, params=params, code_sha256=code_sha256(type(self))
        )

    def use_encoder(self, encoder: Encoder) -> EmbeddingScorer:
        """Score with this encoder instead of the configured model (tests inject a fake one)."""
        self._encoder = encoder
        return self

    def encoder(self) -> Encoder:
        if self._encoder is None:
            from ragtrack.clients import embeddings

            cache = str(cache_root("embeddings")) if self.p.embedding_cache else None
            self._encoder = embeddings.shared(self.p.model, batch_size=self.p.batch_size, cache_dir=cache)
        return self._encoder

    def judge(self) -> RagJudge:
        offline = OfflineJudge(self.encoder(), relevance_cosine_weight=self.p.relevance_cosine_weight)
        llm = self.llm_settings
        if llm is not None:
            return LlmJudge(LlmBatch(llm, self.name), self.prompts, offline)
        judge: RagJudge = (
            NliJudge(self.nli(), offline, candidates=self.p.nli_candidates)
            if self.p.backend == "nli"
            else offline
        )
        return judge if self.reranker_name is None else RerankedJudge(judge, self.reranker())

    @property
    def reranker_name(self) -> str | None:
        """The reranker judging relevance (`rag`'s `reranker_model`), or None."""
        return getattr(self.p, "reranker_model", None)

    def reranker(self) -> Reranker:
        if self._reranker is None:
            assert self.reranker_name is not None
            self._reranker = Reranker(
                self.reranker_name,
                batch_size=getattr(self.p, "reranker_batch_size", 16),
                field=f"scorers.{self.name}.reranker_model",
            )
        return self._reranker

    def nli(self) -> NliModel:
        if self._nli is None:
            assert self.p.nli_model is not None  # the params' validator
            self._nli = NliModel(
                self.p.nli_model, batch_size=self.p.nli_batch_size, field=f"scorers.{self.name}.nli_model"
            )
        return self._nli

    def trust_note(self, metric: str) -> str:
        """The report's words on how far `metric` can be trusted (`scorers.reliability`): the shipped figure
        when the file was measured with this scorer's version, backend, settings and embedding weights."""
        reranked = self.reranker_name is not None and metric in RELEVANCE
        identity = getattr(self._encoder, "identity", None)  # known once the batch is embedded
        return reliability.note(
            self.name,
            self.version,
            self.p.backend + ("+reranker" if reranked else ""),
            metric,
            reliability.measured_params(self.info.params),
            identity.sha256 if identity is not None else None,
            frozenset(k for k, metrics in self.READ_BY.items() if metric not in metrics),
        )

    def scored_info(self) -> ComponentInfo:
        """`info` plus the embedding model's identity (name and weights sha256) once it is known, the nli
        model's, and the sha256 of the reliability file the report quotes."""
        provenance = {}
        if (shipped := reliability.load(self.name)) is not None:
            provenance["reliability_sha256"] = shipped[1]
        identity = getattr(self.encoder(), "identity", None)
        if identity is not None:
            provenance.update(embedding_model=identity.name, embedding_model_sha256=identity.sha256)
        if self.p.backend == "nli":
            nli = self.nli().identity
            provenance.update(nli_model=nli.name, nli_model_sha256=nli.sha256)
        if self.reranker_name is not None:
            reranker = self.reranker().identity
            provenance.update(reranker_model=reranker.name, reranker_model_sha256=reranker.sha256)
        return self.info.model_copy(update={"provenance": provenance}) if provenance else self.info

    def score(self, batch: Batch) -> ScorerOutput:
        """Every distinct text of the batch's `rag` cases is embedded in one call (the llm backend first asks
        every question of the batch), then each case is scored."""
        judge = self.judge()
        cases = [
            (c, rag_inputs(c, p))
            for c, p in zip(batch.cases, batch.predictions, strict=True)
            if c.reference is not None
        ]

        def evaluate() -> ScoreTable:
            table = ScoreTable()
            for c, inp in cases:
                table.add(c.id, self.case_values(c, inp, judge))
            return table

        if isinstance(judge, LlmJudge):
            judge.prefetch(evaluate)
        else:
            judge.prepare(set().union(*(self.texts_of(inp, judge) for _, inp in cases)))
            if isinstance(judge, RerankedJudge):
                judge.reranker.prefetch(
                    (inp.question, t) for _, inp in cases for t in (*inp.contexts, inp.answer) if t.strip()
                )
            support = judge.inner if isinstance(judge, RerankedJudge) else judge
            if isinstance(support, NliJudge):
                support.prefetch(evaluate)
        table = evaluate()
        metrics = self.aggregate(table)
        report = self.report(table, metrics)
        if isinstance(judge, LlmJudge):
            metrics.update(judge.batch.metrics(self.name, self.LLM_FAILURE))
            report += llm_report(judge.batch, metrics, self.name, self.LLM_FAILURE)
            judge.batch.check()
        return table.output(self.scored_info(), metrics, report)

    @abstractmethod
    def texts_of(self, inp: RagInputs, judge: RagJudge) -> set[str]:
        """Every text the scorer will ask the judge about for this case."""

    @abstractmethod
    def case_values(self, case: EvalCase, inp: RagInputs, judge: RagJudge) -> dict[str, ScoreValue]:
        """One case's columns, named `<scorer>/<column>`."""

    @abstractmethod
    def aggregate(self, table: ScoreTable) -> dict[str, float]:
        """The batch's metrics."""

    @abstractmethod
    def report(self, table: ScoreTable, metrics: dict[str, float]) -> str:
        """The scorer's Markdown section."""


@register_scorer
class RagScorer(EmbeddingScorer):
    """SPEC §3 over every case with a `reference` (items of a `rag` eval set)."""

    name = NAME
    # no overall figure: faithfulness, the metric measured most reliably (reliability/rag.json)
    headline = "faithfulness"
    # 2: graded support, contradictions, quantities by value, no cosine in answer_correctness; 3: chunks vs
    # the question's focus, swapped operators; 4: changed and added words of near-copies, correctness by
    # support; 5: clock times, ages, fractions of units and months by value, scope and connective swaps,
    # double negation, support tokens (stems and values); 6: synonyms by thesaurus, swapped parties, words a
    # near-copy appends, 分钟内 and 星期后 as operators; 7: supported statements graded by their least
    # grounded clause, negation moved between clauses, rather than; percentage points, 折, working weeks,
    # months and years by the civil calendar, ordinals as no amounts; 8: relevance of answers and chunks
    # by their best sentence against each ask's focus, words matched by synonym; hedged amounts within
    # 10%, `two and a half years`; 9: ranges, compound durations, 成, classifiers, month ends, times of day
    # by value; 10: a reversed negation halves closeness; 11: what the sources write in a form we do not
    # read is unknown, not a mismatch (unread numerals and units, a rate's per-unit), 角, `four euros
    # fifty`, whole years of months; a negation of a word the other text says another way contradicts not;
    # a near-copy that replaces one span with other words contradicts; 12: a period the sources name
    # without a number is one of it (每月, 年费, `monthly`, `each year`), `twice` is two times; 斤 and cubic
    # metres are read; 13: support weighed by a logistic model fitted on the tuning pairs (support_model); 14:
    # the model's language is Chinese only by a CJK ideograph (not `£` or an em dash), refitted with set 26;
    # 15: a chunk's relevance reads the words of the question that tell the retrieved chunks apart
    version = "15"
    Params = RagParams
    LLM_PROMPTS = LLM_JUDGE_PROMPTS
    p: RagParams

    def texts_of(self, inp: RagInputs, judge: RagJudge) -> set[str]:
        return texts_of(inp, judge)

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """Every metric is a mean over the cases that have it (NaN cases count in neither sum)."""
        return [mean_terms(f"{NAME}/{m}", columns[f"{NAME}/{m}"]) for m in METRICS]

    def aggregate(self, table: ScoreTable) -> dict[str, float]:
        return aggregate_means(table, NAME, METRICS)

    def report(self, table: ScoreTable, metrics: dict[str, float]) -> str:
        return report(table, metrics, self.trust_note)

    def case_values(self, case: EvalCase, inp: RagInputs, judge: RagJudge) -> dict[str, ScoreValue]:
        return columns(self.metrics_of(inp, judge))

    def metrics_of(self, inp: RagInputs, judge: RagJudge) -> dict[str, Metric]:
        return {
            "faithfulness": decided(faithfulness, inp, judge),
            "context_relevance": decided(context_relevance, inp, judge),
            "context_recall": decided(context_recall, inp, judge),
            "context_precision": context_precision(inp, self.p.match_ratio, self.p.match_scorer),
            "answer_relevancy": decided(answer_relevancy, inp, judge),
            "answer_correctness": decided(answer_correctness, inp, judge, self.p.correctness_f1_weight),
        }


def llm_report(batch: LlmBatch, metrics: dict[str, float], name: str, failure: str) -> str:
    """The llm backend's lines of the report: judge, questions, failures and the first reasons."""
    m = lambda k: int(metrics[f"{name}/llm/{k}"])  # noqa: E731
    lines = [
        "",
        f"LLM backend: `{batch.s.model}` at `{batch.client.endpoint}`; {m('questions')} questions "
        f"({m('requests')} requests, {m('cache_hits')} answers from the cache), "
        f"{m(failure + 's')} {failure}s.",
    ]
    lines += [f"- {reason}" for reason in batch.failures[:10]]
    return "\n".join(lines) + "\n"


def decided(metric: Callable[..., Metric], *args: Any) -> Metric:
    """`metric(*args)`, or NaN with the reason when the backend could not decide (`JudgeFailure`)."""
    try:
        return metric(*args)
    except JudgeFailure as e:
        return Metric.nan(f"llm {e}")


def columns(m: dict[str, Metric]) -> dict[str, ScoreValue]:
    """A case's `rag/…` columns: each metric, why any is not computed, and the unsupported statements."""
    values: dict[str, ScoreValue] = {f"{NAME}/{k}": v.value for k, v in m.items()}
    values[f"{NAME}/not_computed"] = "; ".join(
        f"{k}: {v.reason}" for k, v in m.items() if math.isnan(v.value)
    )
    values[f"{NAME}/unsupported"] = _verdicts_json(m["faithfulness"].verdicts)
    values[f"{NAME}/not_recalled"] = _verdicts_json(m["context_recall"].verdicts)
    return values


def aggregate_means(table: ScoreTable, name: str, columns: Sequence[str]) -> dict[str, float]:
    """`<name>/<column>`: the mean over the cases that have it (not NaN); `<name>/<column>_n`: how many do."""
    out: dict[str, float] = {f"{name}/n_cases": float(len(table))}
    for col in columns:
        vals = [float(v) for v in table.column(f"{name}/{col}") if isinstance(v, float) and not math.isnan(v)]
        out[f"{name}/{col}"] = mean_or_nan(vals)
        out[f"{name}/{col}_n"] = float(len(vals))
    return out


def report(table: ScoreTable, metrics: dict[str, float], trust: Callable[[str], str], limit: int = 20) -> str:
    """The scorer's section: each metric's mean and how far it can be trusted (`trust(metric)`), then the
    unsupported statements."""
    lines = [f"## {NAME}", "", "| metric | mean | cases | reliability |", "|---|---|---|---|"]
    for m in METRICS:
        mean = metrics[f"{NAME}/{m}"]
        lines.append(
            f"| {m} | {'n/a' if math.isnan(mean) else f'{mean:.4f}'} | "
            f"{int(metrics[f'{NAME}/{m}_n'])} | {trust(m)} |"
        )
    unsupported = [
        (case_id, v)
        for case_id, found in zip(table.ids, table.column(f"{NAME}/unsupported"), strict=True)
        for v in json.loads(str(found))
    ]
    if unsupported:
        lines += [
            "",
            f"### Unsupported answer statements ({len(unsupported)}, first {min(limit, len(unsupported))})",
            "",
            "| case | statement | reason |",
            "|---|---|---|",
        ]
        for cid, v in unsupported[:limit]:
            stmt = v["statement"].replace("|", "\\|")
            lines.append(f"| {cid} | {stmt} | {v['reason']} |")
    return "\n".join(lines) + "\n"
