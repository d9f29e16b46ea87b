"""Retrieval over a built index of the tiny bilingual corpus, with the real MiniLM."""

from __future__ import annotations

import math

import pytest

from ragtrack.index.build import index_spec, open_index
from ragtrack.index.retriever import BM25, Retriever
from tests.index.corpus import index_config, write_corpus

ENGLISH = [
    ("What uptime is guaranteed for compute instances?", "99.95% monthly uptime"),
    ("How much can I spend on a hotel per night?", "650 yuan per night"),
    ("When must I submit a credit claim?", "within 30 days"),
]
CHINESE = [
    ("退款多久能退回来？", "5 个工作日内原路退回"),
    ("密码多长时间要换一次？", "每 90 天至少更换一次"),
    ("账户被锁定多久？", "锁定 30 分钟"),
]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> Retriever:
    corpus = write_corpus(tmp_path_factory.mktemp("corpus"))
    return Retriever(open_index(index_spec(index_config(corpus, size=70))))


@pytest.mark.parametrize("query,answer", ENGLISH)
def test_dense_finds_the_english_chunk_holding_the_answer_first(retriever, query, answer):
    assert answer in retriever.search([query], 3, "dense")[0][0].chunk.text


@pytest.mark.parametrize("query,answer", ENGLISH + CHINESE)
def test_bm25_finds_the_chunk_holding_the_answer_first_in_both_languages(retriever, query, answer):
    assert answer in retriever.search([query], 3, "bm25")[0][0].chunk.text


@pytest.mark.parametrize("query,answer", ENGLISH + CHINESE)
def test_hybrid_finds_the_chunk_holding_the_answer_in_the_top_two(retriever, query, answer):
    assert any(answer in h.chunk.text for h in retriever.search([query], 2, "hybrid")[0])


def test_hits_are_ranked_best_first_and_name_their_file(retriever):
    hits = retriever.search([ENGLISH[0][0]], 4, "dense")[0]
    assert [h.rank for h in hits] == [1, 2, 3, 4] and [h.score for h in hits] == sorted(
        (h.score for h in hits), reverse=True
    )
    assert hits[0].chunk.source_path == "en/sla.md"


def test_bm25_embeds_no_query(retriever):
    before = retriever.index.spec.embedder.stats.requested
    retriever.search([q for q, _ in ENGLISH + CHINESE], 3, "bm25")
    assert retriever.index.spec.embedder.stats.requested == before


def test_bm25_returns_nothing_for_a_query_sharing_no_term(retriever):
    assert retriever.search(["zebra quokka"], 3, "bm25") == [[]]


def test_a_query_ranks_the_same_alone_or_in_a_batch(retriever):
    alone = retriever.search([CHINESE[0][0]], 5, "hybrid")[0]
    batched = retriever.search([ENGLISH[1][0], CHINESE[0][0], ENGLISH[0][0]], 5, "hybrid")[1]
    assert alone == batched


def test_bm25_scores_by_hand():
    # Two documents; "a" occurs in both (idf ln(1 + 0.5/2.5)), "b" only in the first (idf ln(1 + 1.5/1.5)).
    bm = BM25([["a", "b"], ["a", "a"]], k1=1.2, b=0.0)
    tf1 = 2.2 / (1 + 1.2)
    expected = math.log(1 + 0.5 / 2.5) * tf1 + math.log(2.0) * tf1
    assert bm.scores(["a", "b"])[0] == pytest.approx(expected)
