"""Scorer `earag` (SPEC §4): the formulas by hand with a fake encoder, the levels, NaN, and seed 003's three
scenarios."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference
from ragtrack.scorers import Batch, build_scorer, support_model
from ragtrack.scorers.earag import level_of
from ragtrack.scorers.judge import OfflineJudge
from ragtrack.scorers.rag import EmbeddingScorer
from tests.fake_encoder import FakeEncoder

Q = "What does FHA require?"
A = "FHA requires 3.5% down, says the Federal Reserve Board."
CTX = "FHA loans require 3.5% down."


def score(
    question: str,
    answer: str,
    contexts: tuple[str, ...],
    *,
    graph: list[str] | None = None,
    encoder: FakeEncoder | None = None,
    **params: Any,
) -> dict[str, Any]:
    scorer = build_scorer("earag", params)
    assert isinstance(scorer, EmbeddingScorer)
    if encoder is not None:
        scorer.use_encoder(encoder)
    c = EvalCase(id="c", question=question, reference=RagReference(graph_entities=graph))
    p = Prediction(case_id="c", answer=answer, contexts=[ContextChunk(text=t) for t in contexts])
    (row,) = scorer.score(Batch(cases=[c], predictions=[p])).cases
    return {k.removeprefix("earag/"): v for k, v in row.values.items()}


def fake() -> FakeEncoder:
    return FakeEncoder({Q: [1, 0], A: [0.6, 0.8]})  # relevancy = cos = 0.6


def rag_support() -> float:
    """rag's graded support of A's one statement (SPEC §3): it copies CTX and appends an attribution no source
    has (`adds: board, feder, reserv`), so it is unsupported, scored 1 − the support model's probability
    (the fake encoder gives the statement an axis of its own: cosine 0)."""
    judge = OfflineJudge(fake(), relevance_cosine_weight=0.5)
    (found,) = judge.measure([A.rstrip(".")], [CTX]) or [None]
    assert found is not None and found[1].startswith("adds")
    return 1 - support_model.load().unsupported(found[0])


def test_every_dimension_by_hand() -> None:
    # answer entities 3.5%, FHA, Federal Reserve Board: the last is not in the context -> unmatched 1/3;
    # rag faithfulness: one statement, supported (4 of its 8 content tokens in the context sentence, 3.5%
    # agrees)
    v = score(
        Q,
        A,
        (CTX,),
        encoder=fake(),
        thresholds={
            "entity_coverage": 0.8,
            "faithfulness": 0.7,
            "relevancy": 0.7,
            "sufficiency": 0.8,
            "hallucination": 0.25,
        },
    )
    s = rag_support()
    faith = s - 0.1 / 3
    halluc = (1 - faith) + 0.5 / 3
    overall = 0.30 + 0.25 * faith + 0.15 * 0.6 + 0.15 - 0.15 * halluc
    assert v["rag_faithfulness"] == pytest.approx(s) and v["unmatched_ratio"] == pytest.approx(1 / 3)
    assert (v["entity_coverage"], v["sufficiency"]) == (1.0, 1.0)
    assert (v["faithfulness"], v["relevancy"], v["hallucination"]) == pytest.approx((faith, 0.6, halluc))
    assert v["overall"] == pytest.approx(overall)
    assert overall < 0.6 and v["level"] == "较差"  # below 一般 (0.6)
    assert v["issues"] == "unverified_entities,faithfulness_low,relevancy_low,hallucination_high"
    assert json.loads(v["unverified_entities"]) == ["Federal Reserve Board"]
    assert v["diagnosis"].startswith(
        "包含未验证实体: ['Federal Reserve Board']；事实忠实度不足；答案与问题相关性较低；检测到潜在幻觉；"
        f"高风险，建议重新生成答案；答案质量: 较差 (评分: {overall:.2f}) - 建议重新生成答案"
    )


def test_graph_entities_are_the_known_set_when_given() -> None:
    v = score(Q, A, (CTX,), graph=["FHA", "Federal Reserve Board", "3.5%"], encoder=fake())
    assert (v["unmatched_ratio"], v["faithfulness"], v["hallucination"]) == pytest.approx(
        (0.0, rag_support(), 1 - rag_support())
    )


def test_a_question_without_entities_is_fully_covered() -> None:
    v = score("what is it?", "It is blue.", ("It is blue.",), encoder=FakeEncoder())
    assert (v["entity_coverage"], v["sufficiency"], v["question_entities"]) == (1.0, 1.0, "[]")


def test_without_contexts_faithfulness_sufficiency_hallucination_and_overall_are_nan() -> None:
    v = score(Q, A, (), encoder=fake())
    assert all(math.isnan(v[k]) for k in ("faithfulness", "sufficiency", "hallucination", "overall"))
    assert v["level"] is None and v["entity_coverage"] == 1.0
    assert v["not_computed"] == "sufficiency, faithfulness, hallucination, overall: no retrieved contexts"


@pytest.mark.parametrize(
    ("overall", "level"),
    [(0.85, "优秀"), (0.8, "优秀"), (0.7999, "良好"), (0.7, "良好"), (0.6, "一般"), (0.59, "较差")],
)
def test_levels(overall: float, level: str) -> None:
    assert level_of(overall, {"优秀": 0.8, "良好": 0.7, "一般": 0.6}, "较差") == level


def test_weights_must_name_every_dimension() -> None:
    with pytest.raises(InputError) as e:
        build_scorer("earag", {"weights": {"entity_coverage": 1.0}})
    assert e.value.field == "weights"


# ------------------------------------------------------------------ seed 003's test scenarios (real MiniLM)

SCENARIOS = {
    "good": (
        "中小企业税收优惠政策有哪些？",
        "中小企业享受所得税减免、增值税优惠等政策支持",
        "财政部、国家税务总局发布公告，中小企业可享受所得税减免、增值税优惠等税收优惠政策支持。",
    ),
    "missing_entities": (
        "华侨投资审批流程是什么？",
        "需要提交相关材料进行审批",
        "华侨投资企业的审批流程：投资者向商务主管部门提交申请材料，审批机关在二十日内作出决定。",
    ),
    "hallucination": (
        "企业注册资本要求",
        "注册资本最低100万元，需要验资报告",
        "《公司法》规定，有限责任公司的注册资本为在公司登记机关登记的全体股东认缴的出资额。",
    ),
}
PROBLEMS = {
    "entity_coverage_low",
    "unverified_entities",
    "faithfulness_low",
    "context_insufficient",
    "hallucination_high",
}


def _issues(name: str) -> set[str]:
    q, a, ctx = SCENARIOS[name]
    return set(filter(None, score(q, a, (ctx,))["issues"].split(",")))


def test_seed_good_answer_has_no_entity_faithfulness_or_hallucination_problem() -> None:
    assert not _issues("good") & PROBLEMS


def test_seed_answer_missing_entities_is_diagnosed_as_such() -> None:
    q, a, ctx = SCENARIOS["missing_entities"]
    v = score(q, a, (ctx,))
    assert "entity_coverage_low" in v["issues"] and json.loads(v["missing_entities"]) == ["华侨投资"]


def test_seed_hallucinated_answer_is_diagnosed_as_high_risk() -> None:
    q, a, ctx = SCENARIOS["hallucination"]
    v = score(q, a, (ctx,))
    assert {"hallucination_high", "unverified_entities"} <= set(v["issues"].split(","))
    assert "高风险，建议重新生成答案" in v["diagnosis"] and v["level"] == "较差"
    assert "1000000cny" in json.loads(v["unverified_entities"])
