"""`earag` with `backend: llm` (seed 003's prompts) against a scripted judge on 127.0.0.1: formulas,
fallbacks, counts, cache."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference
from ragtrack.scorers import Batch, build_scorer
from ragtrack.scorers.earag_llm import read_score
from ragtrack.scorers.llm_batch import LlmFailureRateError, ReplyError
from ragtrack.scorers.rag import EmbeddingScorer
from tests.fake_encoder import FakeEncoder
from tests.llm_judges import ENTITIES, FAITHFULNESS, block, earag_judge
from tests.llm_server import LLMServer, reply, status

Q = "What does FHA require?"
A = "FHA requires 3.5% down, says the Federal Reserve Board."
CTX = ("FHA loans require 3.5% down.", "Second chunk.", "Third chunk.", "Fourth chunk.")
ENTITY_LISTS = {Q: ["FHA"], A: ["FHA", "Federal Reserve Board", "《FHA》"]}


def _scorer(url: str, tmp_path, **llm: Any):
    params = {
        "backend": "llm",
        "llm": {
            "base_url": url,
            "model": "judge-1",
            "cache_dir": str(tmp_path / "cache"),
            "backoff_s": 0.01,
            "max_retries": 0,
            **llm,
        },
    }
    scorer = build_scorer("earag", params)
    assert isinstance(scorer, EmbeddingScorer)
    return scorer.use_encoder(FakeEncoder({Q: [1, 0], A: [0.6, 0.8]}))


def _batch(answer: str = A, contexts: tuple[str, ...] = CTX) -> Batch:
    case = EvalCase(id="c", question=Q, reference=RagReference())
    return Batch(
        cases=[case],
        predictions=[
            Prediction(case_id="c", answer=answer, contexts=[ContextChunk(text=t) for t in contexts])
        ],
    )


def _score(
    script, tmp_path, batch: Batch | None = None, **llm: Any
) -> tuple[dict[str, Any], dict[str, float], LLMServer]:
    with LLMServer(script=script) as srv:
        out = _scorer(srv.url, tmp_path, **llm).score(batch or _batch())
    return {k.removeprefix("earag/"): v for k, v in out.cases[0].values.items()}, out.metrics, srv


def test_every_dimension_by_hand_from_the_judges_entities_and_llm_score(tmp_path):
    # Q {FHA} found in the answer; A {FHA, Federal Reserve Board} (《FHA》 = FHA): the second not in the
    # contexts -> 1/2
    v, _, _ = _score(earag_judge(ENTITY_LISTS, {A: 0.9}), tmp_path)
    faith, halluc = 0.9 - 0.1 * 0.5, (1 - (0.9 - 0.1 * 0.5)) + 0.5 * 0.5
    assert (v["entity_coverage"], v["sufficiency"], v["unmatched_ratio"], v["llm_score"]) == (
        1.0,
        1.0,
        0.5,
        0.9,
    )
    assert (v["faithfulness"], v["relevancy"], v["hallucination"]) == pytest.approx((faith, 0.6, halluc))
    assert v["overall"] == pytest.approx(0.30 + 0.25 * faith + 0.15 * 0.6 + 0.15 - 0.15 * halluc)
    assert (json.loads(v["answer_entities"]), json.loads(v["unverified_entities"]), v["llm_fallback"]) == (
        ["FHA", "Federal Reserve Board"],
        ["Federal Reserve Board"],
        "",
    )


def test_a_case_asks_question_entities_answer_entities_and_the_llm_score(tmp_path):
    _, m, srv = _score(earag_judge(ENTITY_LISTS, {A: 0.9}), tmp_path)
    asked = sorted(
        (ENTITIES in c, FAITHFULNESS in c) for b in srv.bodies() for c in [b["messages"][0]["content"]]
    )
    assert (asked, m["earag/llm/questions"], m["earag/llm/fallbacks"]) == (
        [(False, True), (True, False), (True, False)],
        3.0,
        0.0,
    )


@pytest.mark.parametrize("answer, contexts, n", [("", CTX, 1), (A, (), 2)])
def test_an_empty_answer_or_no_context_asks_less(tmp_path, answer, contexts, n):
    _, m, srv = _score(earag_judge(ENTITY_LISTS, {A: 0.9}), tmp_path, _batch(answer, contexts))
    assert (srv.count, m["earag/llm/questions"]) == (n, float(n))


def test_the_llm_score_sees_the_first_three_contexts(tmp_path):
    _, _, srv = _score(earag_judge(ENTITY_LISTS, {A: 0.9}), tmp_path)
    (prompt,) = [c for b in srv.bodies() if FAITHFULNESS in (c := b["messages"][0]["content"])]
    assert block(prompt, "context") == "\n".join(CTX[:3])


def test_entity_extraction_sees_the_first_max_text_length_characters(tmp_path):
    with LLMServer(script=earag_judge({Q[:10]: [], A[:10]: []}, {A: 0.9})) as srv:
        build_scorer(
            "earag",
            {
                "backend": "llm",
                "max_text_length": 10,
                "llm": {"base_url": srv.url, "model": "judge-1", "cache_dir": str(tmp_path / "cache")},
            },
        ).use_encoder(FakeEncoder()).score(_batch())
    assert sorted(
        block(b["messages"][0]["content"], "text")
        for b in srv.bodies()
        if ENTITIES in b["messages"][0]["content"]
    ) == [A[:10], Q[:10]]


# ------------------------------------------------------------------ the seed's fallbacks


def test_failed_calls_and_unreadable_replies_take_the_seeds_fallbacks_and_mark_the_case(tmp_path):
    v, _, _ = _score(
        earag_judge({Q: ["FHA"], A: reply("FHA, Federal Reserve Board")}, {A: status(500)}),
        tmp_path,
        max_failure_rate=1,
    )
    assert (v["llm_score"], v["answer_entities"], v["unmatched_ratio"], v["faithfulness"]) == (
        0.5,
        "[]",
        0.0,
        0.5,
    )
    assert v["llm_fallback"].startswith(
        "answer_entities: unreadable reply: no JSON in the reply; llm_score: call failed: http://127.0.0.1:"
    )


def test_fallbacks_are_counted(tmp_path):
    _, m, _ = _score(
        earag_judge({Q: ["FHA"], A: reply("none")}, {A: reply("about 0.8")}), tmp_path, max_failure_rate=1
    )
    assert (m["earag/llm/fallbacks"], m["earag/llm/fallback_rate"]) == (2.0, 2 / 3)


def test_more_fallbacks_than_allowed_fail_the_batch(tmp_path):
    with pytest.raises(
        LlmFailureRateError,
        match=r"earag: 1 of 3 LLM questions \(33%\) got no usable answer, above max_failure_rate 0.1",
    ):
        _score(earag_judge({Q: ["FHA"], A: reply("none")}, {A: 0.9}), tmp_path)


@pytest.mark.parametrize(
    "text, score", [("0.7", 0.7), (" 1.4\n", 1.0), ("-0.2", 0.0), ("```\n0.25\n```", 0.25)]
)
def test_the_llm_score_is_a_number_clamped_to_0_1(text, score):
    assert read_score(text) == score


@pytest.mark.parametrize("text", ["", "high", "NaN", '{"score": 0.8}'])
def test_a_reply_that_is_not_one_number_is_unreadable(text):
    with pytest.raises(ReplyError):
        read_score(text)


def test_a_second_identical_batch_makes_no_request(tmp_path):
    with LLMServer(script=earag_judge(ENTITY_LISTS, {A: 0.9})) as srv:
        first = _scorer(srv.url, tmp_path).score(_batch())
        second = _scorer(srv.url, tmp_path).score(_batch())
    assert (srv.count, second.metrics["earag/llm/cache_hits"], second.cases == first.cases) == (3, 3.0, True)


def test_the_offline_backend_is_unchanged_by_the_llm_block(tmp_path):
    llm = {"base_url": "http://127.0.0.1:1/v1", "model": "judge-1"}
    enc = FakeEncoder({Q: [1, 0], A: [0.6, 0.8]})
    with_block = build_scorer("earag", {"llm": llm}).use_encoder(enc).score(_batch())
    without = build_scorer("earag", {}).use_encoder(enc).score(_batch())
    assert (with_block.cases, math.isnan(with_block.metrics.get("earag/llm/questions", math.nan))) == (
        without.cases,
        True,
    )
