"""Top-k retrieval over a built index: dense cosine, BM25, or both fused.

- `dense`: cosine of the query's embedding with each chunk's (both L2-normalised).
- `bm25`: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over `text.terms`: Latin words and
  numbers, and CJK character bigrams, so Chinese is matched without a segmenter. A chunk
  sharing no term with the query is not returned (so a search may return fewer than k).
- `hybrid`: reciprocal-rank fusion of the two rankings, `1/(60 + rank_dense) + 1/(60 +
  rank_bm25)` (Cormack et al. 2009), which needs no score calibration between them.

Ties keep the index's chunk order, and scores are computed one query at a time in float64,
so a query's ranking does not depend on the other queries of the batch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragtrack.core.types import ContextChunk
from ragtrack.index.build import Chunk, Index
from ragtrack.nlp.text import terms

__all__ = ["BM25", "Hit", "Mode", "Retriever"]

Mode = Literal["dense", "bm25", "hybrid"]
RRF_K = 60


class Hit(BaseModel):
    """A retrieved chunk, its rank (1 = best) and the mode's score."""

    model_config = ConfigDict(frozen=True)

    chunk: Chunk
    rank: int
    score: float

    def context(self) -> ContextChunk:
        """The hit as a prediction's retrieved context: text, source, chunk id and score."""
        return ContextChunk(
            text=self.chunk.text, source_path=self.chunk.source_path, id=self.chunk.id, score=self.score
        )


class BM25:
    """Okapi BM25 over tokenised documents, with an inverted index."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1.0)) if self.n else lengths
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self.postings.setdefault(term, []).append((i, tf * (k1 + 1) / (tf + norm[i])))
        self.idf = {
            t: math.log(1 + (self.n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()
        }

    def scores(self, query: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float64)
        for term in sorted(set(query)):
            for i, w in self.postings.get(term, ()):
                out[i] += self.idf[term] * w
        return out


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of every position; ties keep position order."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


class Retriever:
    """Searches one index; query embeddings come from the index's own embedder."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.vectors = index.vectors.astype(np.float64)
        self._bm25: BM25 | None = None

    @property
    def bm25(self) -> BM25:
        if self._bm25 is None:
            self._bm25 = BM25([terms(c.text) for c in self.index.chunks])
        return self._bm25

    def search(self, queries: Sequence[str], k: int, mode: Mode = "dense") -> list[list[Hit]]:
        """The top `k` chunks of each query, best first (`bm25` embeds nothing: no model is loaded)."""
        qvecs = self.index.spec.embedder.encode(list(queries)).astype(np.float64) if mode != "bm25" else None
        return [
            self._one(query, None if qvecs is None else qvecs[i], k, mode) for i, query in enumerate(queries)
        ]

    def _one(self, query: str, qvec: np.ndarray | None, k: int, mode: Mode) -> list[Hit]:
        if mode == "bm25":
            scores = self.bm25.scores(terms(query))
        else:
            assert qvec is not None
            scores = self.vectors @ qvec
            if mode == "hybrid":
                scores = 1.0 / (RRF_K + _ranks(scores)) + 1.0 / (
                    RRF_K + _ranks(self.bm25.scores(terms(query)))
                )
        order = np.argsort(-scores, kind="stable")[:k]
        if mode == "bm25":
            order = order[scores[order] > 0]  # a chunk sharing no term with the query is not a match
        chunks = self.index.chunks
        return [Hit(chunk=chunks[i], rank=r, score=float(scores[i])) for r, i in enumerate(order, 1)]
