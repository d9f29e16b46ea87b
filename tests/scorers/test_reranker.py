"""Relevance from a reranking cross-encoder the tests build (`reranker_model`): plumbing, not language."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from sentence_transformers import CrossEncoder

from ragtrack.core.errors import InputError
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference
from ragtrack.scorers import Batch, build_scorer
from ragtrack.scorers.reranker import Reranker
from tests.fake_encoder import FakeEncoder
from tests.nli_models import build
from tests.scorers.test_rag import embedding_scorer

Q = "How long do refunds take?"
ANSWER = "Refunds take 5 days."
CHUNKS = ["Refunds take 5 days.", "The office opened in 1990."]


@pytest.fixture(scope="module")
def reranker_folder(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("reranker") / "tiny", labels={0: "LABEL_0"}, seed=3)


@pytest.fixture(scope="module")
def nli_folder(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("nli") / "tiny")


def expected(folder: Path, question: str, text: str) -> float:
    logit = CrossEncoder(str(folder), device="cpu").predict(
        [(question, text)], activation_fn=torch.nn.Identity()
    )
    return 1 / (1 + math.exp(-float(logit[0])))


def scored(folder: Path, **params):
    scorer = embedding_scorer("rag", {"reranker_model": str(folder), **params}).use_encoder(FakeEncoder())
    case = EvalCase(id="a", question=Q, reference=RagReference())
    pred = Prediction(case_id="a", answer=ANSWER, contexts=[ContextChunk(text=c) for c in CHUNKS])
    return scorer.score(Batch(cases=[case], predictions=[pred]))


def test_answer_relevancy_is_the_sigmoid_of_the_reranker_s_logit(reranker_folder: Path) -> None:
    (row,) = scored(reranker_folder).cases
    assert row.values["rag/answer_relevancy"] == pytest.approx(expected(reranker_folder, Q, ANSWER), abs=1e-6)


def test_context_relevance_is_the_mean_of_the_chunks_reranker_scores(reranker_folder: Path) -> None:
    (row,) = scored(reranker_folder).cases
    want = sum(expected(reranker_folder, Q, c) for c in CHUNKS) / 2
    assert row.values["rag/context_relevance"] == pytest.approx(want, abs=1e-6)


def test_each_pair_is_scored_once_per_process(reranker_folder: Path) -> None:
    model = Reranker(str(reranker_folder))
    model.prefetch([(Q, "A text scored once.")])
    model.prefetch([(Q, "A text scored once.")])
    model.score(Q, "A text scored once.")
    assert model.predicted == 1


def test_the_reranker_and_its_weights_sha256_are_logged(reranker_folder: Path) -> None:
    info = scored(reranker_folder).info
    assert info.params["reranker_model"] == str(reranker_folder)
    assert len(info.provenance["reranker_model_sha256"]) == 64


def test_without_a_reranker_its_keys_are_not_logged() -> None:
    assert "reranker_model" not in build_scorer("rag").info.params


def test_the_report_does_not_quote_the_offline_reliability_for_reranked_relevance(
    reranker_folder: Path,
) -> None:
    scorer = embedding_scorer("rag", {"reranker_model": str(reranker_folder)})
    assert "offline backend only" in scorer.trust_note("answer_relevancy")
    assert "pairwise accuracy" in scorer.trust_note("faithfulness")


def test_a_model_with_three_outputs_is_not_a_reranker(nli_folder: Path) -> None:
    with pytest.raises(InputError, match="not a reranker: it has 3 outputs"):
        Reranker(str(nli_folder), field="scorers.rag.reranker_model").score(Q, ANSWER)


def test_a_missing_reranker_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="reranker_model"):
        build_scorer("rag", {"reranker_model": str(tmp_path / "absent")})


def test_the_llm_backend_takes_no_reranker(reranker_folder: Path) -> None:
    llm = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(InputError, match="the llm backend judges relevance"):
        build_scorer("rag", {"backend": "llm", "llm": llm, "reranker_model": str(reranker_folder)})
