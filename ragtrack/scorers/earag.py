"""Scorer `earag`: seed 003's entity-aware evaluation of policy and regulation answers (SPEC §4).

Per case, with Q, A the entities of question and answer (`ragtrack.nlp.entities`, offline
extractor; or the seed's LLM prompt, `earag_llm`) and the known entities (the case's
`graph_entities` when given, else the retrieved contexts):

    entity_coverage = |Q found in the answer| / |Q|          (1 when Q is empty)
    unmatched_ratio = |A not found among the known| / |A|     (0 when A is empty)
    faithfulness    = max(0, s − unmatched_penalty · unmatched_ratio),
                      s = rag faithfulness (offline) or the seed's llm_score (llm)
    relevancy       = max(0, cos(question, answer))
    sufficiency     = |Q found in the contexts| / |Q|         (1 when Q is empty)
    hallucination   = min(1, (1 − faithfulness) + hallucination_entity_weight · unmatched_ratio)
    overall         = clamp(Σ weights · dimensions, 0, 1), level 优秀 / 良好 / 一般 / 较差

"found" is `entities.occurs`. Diagnoses are the seed's (missing entities, unverified
entities, low relevance, insufficient context, hallucination risk) plus low faithfulness
(the seed's `thresholds.faithfulness`), each with a code in `earag/issues`. A case without
retrieved contexts has no faithfulness, sufficiency, hallucination or overall (NaN, with
the reason); an empty answer has no faithfulness either.

`backend: llm` asks, per case, the entities of the question and of the answer and the
answer's `llm_score` (3 requests; 2 without contexts, 1 with an empty answer; identical
questions once; `earag_llm`). A failed call or an unreadable reply takes the seed's
fallback (no entities, `llm_score` 0.5), marked in the case's `earag/llm_fallback` (what
fell back and why) and counted (`earag/llm/fallbacks`, `earag/llm/fallback_rate`); more
fallbacks than `llm.max_failure_rate` allows fail the run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

from pydantic import Field, field_validator

from ragtrack.core.types import EvalCase, ScoreValue
from ragtrack.nlp.entities import Entity, extract, occurs
from ragtrack.scorers import earag_llm
from ragtrack.scorers.base import CaseColumns, CaseTerms, ScoreTable, mean_terms, register_scorer
from ragtrack.scorers.judge import RagJudge
from ragtrack.scorers.llm_judge import LlmJudge
from ragtrack.scorers.rag import (
    NO_ANSWER,
    NO_CONTEXTS,
    EmbeddingScorer,
    Metric,
    RagInputs,
    SupportParams,
    aggregate_means,
    faithfulness,
)

__all__ = ["DIMENSIONS", "EaragParams", "EaragScorer", "dimensions", "level_of"]

NAME = "earag"
DIMENSIONS = ("entity_coverage", "faithfulness", "relevancy", "sufficiency", "hallucination")
_MEANS = ("overall", *DIMENSIONS, "unmatched_ratio")  # the per-case columns whose means are metrics
_LOWER_IS_BETTER = ("hallucination", "unmatched_ratio")


class EaragParams(SupportParams):
    """The seed's `earag_eval.yaml` (weights, thresholds) plus the formula's constants; all logged."""

    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "entity_coverage": 0.30,
            "faithfulness": 0.25,
            "relevancy": 0.15,
            "sufficiency": 0.15,
            "hallucination": -0.15,
        }
    )
    thresholds: dict[str, float] = Field(
        default_factory=lambda: {
            "entity_coverage": 0.8,
            "faithfulness": 0.7,
            "relevancy": 0.7,
            "sufficiency": 0.8,
            "hallucination": 0.2,
        }
    )
    levels: dict[str, float] = Field(default_factory=lambda: {"优秀": 0.8, "良好": 0.7, "一般": 0.6})
    lowest_level: str = "较差"
    unmatched_penalty: float = 0.1
    hallucination_entity_weight: float = 0.5
    unverified_ratio: float = 0.2  # diagnose unverified entities above this unmatched_ratio
    high_risk_hallucination: float = 0.5
    regenerate_below: float = 0.7  # overall below this: "建议重新生成答案"
    max_text_length: int = Field(
        1000, ge=1
    )  # llm backend: characters of a text shown for entity extraction (the seed's)
    faithfulness_top_k: int = Field(
        3, ge=1
    )  # llm backend: contexts shown for llm_score (the seed's context[:3])

    @field_validator("weights", "thresholds")
    @classmethod
    def _every_dimension(cls, v: dict[str, float]) -> dict[str, float]:
        if sorted(v) != sorted(DIMENSIONS):
            raise ValueError(f"needs exactly the dimensions {list(DIMENSIONS)}, got {sorted(v)}")
        return v


def level_of(overall: float, levels: dict[str, float], lowest: str) -> str:
    """The first level (highest threshold first) whose threshold `overall` reaches."""
    for name, threshold in sorted(levels.items(), key=lambda kv: -kv[1]):
        if overall >= threshold:
            return name
    return lowest


def _found(entities: Sequence[Entity], text: str) -> tuple[list[Entity], list[Entity]]:
    hit = [e for e in entities if occurs(e, text)]
    return hit, [e for e in entities if e not in hit]


def _share(part: int, whole: int, empty: float) -> float:
    return part / whole if whole else empty


def dimensions(
    inp: RagInputs,
    graph_entities: list[str] | None,
    judge: RagJudge,
    p: EaragParams,
    q: list[Entity],
    a: list[Entity],
    s: Metric,
    s_column: str,
) -> dict[str, ScoreValue]:
    """Every column of one case (without the `earag/` prefix) from the backend's entities of question
    (`q`) and answer (`a`) and its faithfulness `s` (column `s_column`); `judge` gives the cosine."""
    nan = math.nan
    covered, missing = _found(q, inp.answer)
    context = "\n".join(inp.contexts)
    known = "\n".join(graph_entities) if graph_entities else context
    _, unverified = _found(a, known)
    unmatched = _share(len(unverified), len(a), 0.0)
    coverage = _share(len(covered), len(q), 1.0)
    relevancy = max(0.0, judge.cosine(inp.question, inp.answer)) if inp.answer.strip() else 0.0
    reasons = []
    if inp.contexts:
        in_context, uncovered = _found(q, context)
        sufficiency = _share(len(in_context), len(q), 1.0)
    else:
        uncovered, sufficiency = [], nan
        reasons.append("sufficiency, faithfulness, hallucination, overall: no retrieved contexts")
    if math.isnan(s.value) and inp.contexts:
        reasons.append(f"faithfulness, hallucination, overall: {s.reason}")
    faith = max(0.0, s.value - p.unmatched_penalty * unmatched) if not math.isnan(s.value) else nan
    halluc = (
        min(1.0, (1 - faith) + p.hallucination_entity_weight * unmatched) if not math.isnan(faith) else nan
    )
    dims = {
        "entity_coverage": coverage,
        "faithfulness": faith,
        "relevancy": relevancy,
        "sufficiency": sufficiency,
        "hallucination": halluc,
    }
    total = math.fsum(p.weights[k] * v for k, v in dims.items())
    overall = total if math.isnan(total) else min(1.0, max(0.0, total))
    issues, diagnosis = _diagnose(dims, overall, unmatched, missing, unverified, uncovered, p)
    names = lambda es: json.dumps([e.text for e in es], ensure_ascii=False)  # noqa: E731
    return {
        "overall": overall,
        "level": None if math.isnan(overall) else level_of(overall, p.levels, p.lowest_level),
        **dims,
        "unmatched_ratio": unmatched,
        s_column: s.value,
        "issues": ",".join(issues),
        "diagnosis": "；".join(diagnosis),
        "question_entities": names(q),
        "answer_entities": names(a),
        "missing_entities": names(missing),
        "unverified_entities": names(unverified),
        "not_computed": "; ".join(reasons),
    }


def _diagnose(
    d: dict[str, float],
    overall: float,
    unmatched: float,
    missing: list[Entity],
    unverified: list[Entity],
    uncovered: list[Entity],
    p: EaragParams,
) -> tuple[list[str], list[str]]:
    """The seed's diagnoses: (codes, messages). A NaN dimension diagnoses nothing."""
    t = p.thresholds
    codes, msgs = [], []
    if d["entity_coverage"] < t["entity_coverage"]:
        codes.append("entity_coverage_low")
        msgs.append(f"实体覆盖不足，遗漏: {[e.text for e in missing]}")
    if unmatched > p.unverified_ratio:
        codes.append("unverified_entities")
        msgs.append(f"包含未验证实体: {[e.text for e in unverified]}")
    if d["faithfulness"] < t["faithfulness"]:
        codes.append("faithfulness_low")
        msgs.append("事实忠实度不足")
    if d["relevancy"] < t["relevancy"]:
        codes.append("relevancy_low")
        msgs.append("答案与问题相关性较低")
    if d["sufficiency"] < t["sufficiency"]:
        codes.append("context_insufficient")
        msgs += ["上下文覆盖不足", f"建议检索更多关于{[e.text for e in uncovered]}的信息"]
    if d["hallucination"] > t["hallucination"]:
        codes.append("hallucination_high")
        msgs.append("检测到潜在幻觉")
        if d["hallucination"] > p.high_risk_hallucination:
            msgs.append("高风险，建议重新生成答案")
    if not math.isnan(overall):
        level = level_of(overall, p.levels, p.lowest_level)
        msgs.append(
            f"答案质量: {level} (评分: {overall:.2f})"
            + (" - 建议重新生成答案" if overall < p.regenerate_below else "")
        )
    return codes, msgs


@register_scorer
class EaragScorer(EmbeddingScorer):
    """SPEC §4 over every case with a `reference` (items of a `rag` eval set)."""

    name = NAME
    headline = "overall"
    # 2: support verdicts with contradictions, quantities by value; 3: an operator in its opposite's place
    # (rag v3); 4: changed and added words of near-copies (rag v4); 5: no bare-ordinal fractions (rag v5);
    # 6: synonyms by thesaurus, swapped parties, appended words (rag v6); 7: names found by their words and
    # possessives, Chinese place names, grounded clauses (rag v7); 8: hedged amounts within 10%, `two and a
    # half years` (rag v8); 9, 10, 11: quantities by value, reversed negations, unread forms (rag v9-v11);
    # 12: a period named without a number, 斤, cubic metres (rag v12); 13: the support model (rag v13); 14:
    # its language feature by CJK ideographs, refitted (rag v14)
    version = "14"
    Params = EaragParams
    LLM_PROMPTS = earag_llm.PROMPTS
    LLM_FAILURE = "fallback"
    # entity_coverage reads none of these; hallucination the two of its formula; the overall score, its grade
    # and the diagnoses (weights … regenerate_below) neither, nor relevance_cosine_weight (rag's relevance)
    READ_BY = {
        "unmatched_penalty": frozenset({"hallucination"}),
        "hallucination_entity_weight": frozenset({"hallucination"}),
        **dict.fromkeys(
            ["weights", "thresholds", "levels", "lowest_level", "unverified_ratio", "high_risk_hallucination"]
            + ["regenerate_below", "relevance_cosine_weight"],
            frozenset[str](),
        ),
    }
    p: EaragParams

    def texts_of(self, inp: RagInputs, judge: RagJudge) -> set[str]:
        """What earag embeds: the question, the answer, and the statements of the answer and of the
        contexts."""
        texts = {inp.question, *(s for c in inp.contexts for s in judge.statements(c))}
        if inp.answer.strip():
            texts |= {inp.answer, *judge.statements(inp.answer)}
        return texts

    def case_values(self, case: EvalCase, inp: RagInputs, judge: RagJudge) -> dict[str, ScoreValue]:
        graph = case.reference.graph_entities if case.reference else None
        if isinstance(judge, LlmJudge):
            values = self.llm_values(inp, graph, judge)
        else:
            values = dimensions(
                inp,
                graph,
                judge,
                self.p,
                extract(inp.question),
                extract(inp.answer),
                faithfulness(inp, judge),
                "rag_faithfulness",
            )
        return {f"{NAME}/{k}": v for k, v in values.items()}

    def llm_values(self, inp: RagInputs, graph: list[str] | None, judge: LlmJudge) -> dict[str, ScoreValue]:
        """The columns from the seed's LLM prompts, with `llm_fallback`: each fallback taken and why."""
        ask, prompts = judge.batch, self.prompts
        q, q_failed = earag_llm.llm_entities(
            ask, prompts["entities"], inp.question, "question", self.p.max_text_length
        )
        a, a_failed = earag_llm.llm_entities(
            ask, prompts["entities"], inp.answer, "answer", self.p.max_text_length
        )
        s_failed = ""
        if not inp.answer.strip():
            s = Metric.nan(NO_ANSWER)
        elif not inp.contexts:
            s = Metric.nan(NO_CONTEXTS)
        else:
            score, s_failed = earag_llm.llm_score(
                ask, prompts["faithfulness"], inp.answer, inp.contexts, self.p.faithfulness_top_k
            )
            s = Metric(value=score)
        failed = {"question_entities": q_failed, "answer_entities": a_failed, "llm_score": s_failed}
        values = dimensions(inp, graph, judge, self.p, q, a, s, "llm_score")
        values["llm_fallback"] = "; ".join(f"{k}: {why}" for k, why in failed.items() if why)
        return values

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """Every metric is a mean over the cases that have it; hallucination and unverified entities are
        better low."""
        return [
            mean_terms(f"{NAME}/{k}", columns[f"{NAME}/{k}"], higher_is_better=k not in _LOWER_IS_BETTER)
            for k in _MEANS
        ]

    def aggregate(self, table: ScoreTable) -> dict[str, float]:
        out = aggregate_means(table, NAME, _MEANS)
        out[f"{NAME}/n_hallucination_high"] = float(
            sum("hallucination_high" in str(x) for x in table.column(f"{NAME}/issues"))
        )
        return out

    def report(self, table: ScoreTable, metrics: dict[str, float]) -> str:
        return report(table, metrics, self.trust_note)


def report(table: ScoreTable, metrics: dict[str, float], trust: Callable[[str], str], limit: int = 20) -> str:
    """The scorer's section: each dimension's mean and how far it can be trusted (`trust(dimension)`),
    then diagnoses."""
    lines = [f"## {NAME}", "", "| dimension | mean | cases | reliability |", "|---|---|---|---|"]
    for k in ("overall", *DIMENSIONS):
        mean = metrics[f"{NAME}/{k}"]
        lines.append(
            f"| {k} | {'n/a' if math.isnan(mean) else f'{mean:.4f}'} | "
            f"{int(metrics[f'{NAME}/{k}_n'])} | {trust(k)} |"
        )
    flagged = [i for i, x in enumerate(table.column(f"{NAME}/issues")) if x]
    if flagged:
        lines += [
            "",
            f"### Diagnoses ({len(flagged)} cases, first {min(limit, len(flagged))})",
            "",
            "| case | level | diagnosis |",
            "|---|---|---|",
        ]
        diagnosis, level = table.column(f"{NAME}/diagnosis"), table.column(f"{NAME}/level")
        for i in flagged[:limit]:
            diag = str(diagnosis[i]).replace("|", "\\|")
            lines.append(f"| {table.ids[i]} | {level[i] or 'n/a'} | {diag} |")
    return "\n".join(lines) + "\n"
