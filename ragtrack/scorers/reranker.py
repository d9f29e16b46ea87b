"""Relevance from a reranker: a cross-encoder that scores how well a text answers a question (SPEC §3).

With `reranker_model` set, `answer_relevancy` and `context_relevance` of the `offline` and
`nli` backends come from a sentence-transformers `CrossEncoder` with one output — an MS MARCO
style reranker such as `cross-encoder/ms-marco-MiniLM-L-6-v2` (English) or a multilingual one
such as `BAAI/bge-reranker-v2-m3` (Chinese too) — instead of embedding cosines: the relevance
of a text to a question is the sigmoid of the model's one logit for the pair (question,
text), in 0..1, whatever activation the model's own configuration names (rerankers saved with
none would otherwise give unbounded logits). A bi-encoder reads topic overlap; a
cross-encoder reads the question and the text together, which is what tells an answer from a
text on another facet of the same subject.

`Reranker` loads a local folder or a hub name from the local cache (nothing is downloaded
unless named), refuses a model with more than one output, and scores each distinct pair once
per process: a batch's pairs are collected first (`prefetch`) and predicted in one call,
sorted, so the same inputs give the same batches and the same bits. Its files' sha256 is
logged with the scorer, like the embedder's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragtrack.clients.embeddings import ModelIdentity, model_identity, resolve_model
from ragtrack.core.errors import InputError
from ragtrack.scorers.judge import RagJudge, Verdict

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["RerankedJudge", "Reranker"]

_models: dict[str, CrossEncoder] = {}
_memo: dict[tuple[str, str, str], float] = {}  # (model sha256, question, text) -> score
_lock = threading.Lock()


class Reranker:
    """A reranking cross-encoder: one relevance in 0..1 per (question, text), each pair scored once per
    process."""

    def __init__(self, name: str, *, batch_size: int = 16, field: str = "reranker_model") -> None:
        self.name = name
        self.batch_size = batch_size
        self.field = field
        try:
            self.folder = resolve_model(name)
        except InputError as e:
            raise InputError(e.file, e.problem, field=field) from None
        self.predicted = 0  # pairs this instance sent to the model

    @property
    def identity(self) -> ModelIdentity:
        return model_identity(self.name, self.folder)

    def _load(self) -> CrossEncoder:
        with _lock:
            if self.folder not in _models:
                from sentence_transformers import CrossEncoder

                try:
                    _models[self.folder] = CrossEncoder(self.folder, device="cpu")
                except Exception as e:
                    raise InputError(
                        self.name,
                        f"cannot load as a cross-encoder: {type(e).__name__}: {e}".splitlines()[0],
                        field=self.field,
                    ) from None
            model = _models[self.folder]
        if model.num_labels != 1:
            raise InputError(
                self.name,
                f"not a reranker: it has {model.num_labels} outputs, a reranker has one relevance score",
                field=self.field,
            )
        return model

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Score every pair not scored yet, in one call."""
        sha = self.identity.sha256
        todo = sorted({p for p in pairs if (sha, *p) not in _memo})
        if not todo:
            return
        import torch

        logits = self._load().predict(
            todo, batch_size=self.batch_size, show_progress_bar=False, activation_fn=torch.nn.Identity()
        )
        scores = 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float64).reshape(-1)))
        self.predicted += len(todo)
        with _lock:
            for pair, score in zip(todo, scores, strict=True):
                _memo.setdefault((sha, *pair), float(score))

    def score(self, question: str, text: str) -> float:
        """The model's relevance of `text` to `question`."""
        key = (self.identity.sha256, question, text)
        if key not in _memo:
            self.prefetch([(question, text)])
        return _memo[key]


class RerankedJudge:
    """`RagJudge` whose relevance comes from a `Reranker`; statements, support and cosine from `inner`."""

    def __init__(self, inner: RagJudge, reranker: Reranker) -> None:
        self.inner = inner
        self.reranker = reranker

    def prepare(self, texts: Iterable[str]) -> None:
        self.inner.prepare(texts)

    def statements(self, text: str) -> list[str]:
        return self.inner.statements(text)

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        return self.inner.support(statements, sources)

    def relevance(self, question: str, text: str) -> float:
        return self.reranker.score(question, text)

    def relevances(self, question: str, chunks: Sequence[str]) -> list[float]:
        return [self.reranker.score(question, c) for c in chunks]

    def cosine(self, a: str, b: str) -> float:
        return self.inner.cosine(a, b)
