"""Who decides statements, support and relevance for the `rag` family: the backend seam (SPEC §3).

`RagJudge` is what a backend implements; the scorers compute every formula from its
answers. `OfflineJudge` is the deterministic backend: embeddings (any `Encoder`), lexical
coverage and fact tokens. The `llm` backend (`ragtrack.scorers.llm_judge.LlmJudge`) makes
the same decisions with an LLM (statement decomposition, support verdicts, relevance); a
decision it could not get raises `JudgeFailure`, and the metric that needed it is NaN
with that reason.

Batch use: `prepare(texts)` is given every text a batch will ask about (statements,
context sentences, questions, answers), so an embedding backend encodes them all in one
call; the other methods then only look vectors up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragtrack.facts import facts, missing_fact, provided_keys
from ragtrack.lexical import content_tokens, coverage, split_statements
from ragtrack.text import norm

__all__ = ["Encoder", "JudgeFailure", "OfflineJudge", "RagJudge", "Verdict"]


class Verdict(BaseModel):
    """Whether a statement is supported; `reason` is `no_match` or `fact_mismatch: <token>` when not."""

    model_config = ConfigDict(frozen=True)

    statement: str
    supported: bool
    reason: str = ""


class JudgeFailure(Exception):
    """A backend could not decide (its LLM call failed, or the reply could not be read): the reason."""


class Encoder(Protocol):
    """Texts to L2-normalised row vectors (`ragtrack.embeddings.Embedder`, or a fake in tests)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class RagJudge(Protocol):
    """The decisions a `rag` backend makes; everything else is arithmetic in the scorers."""

    def prepare(self, texts: Iterable[str]) -> None:
        """Called once per batch with every text the batch will ask about."""

    def statements(self, text: str) -> list[str]:
        """The atomic statements of an answer (or ground-truth answer)."""

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        """One verdict per statement: is it supported by the source texts?"""

    def relevance(self, question: str, text: str) -> float:
        """How well `text` addresses `question`, 0..1."""

    def cosine(self, a: str, b: str) -> float:
        """Embedding cosine of two texts."""


class OfflineJudge:
    """SPEC §3 `offline`: a statement is supported when its normalised text is contained in the
    sources, or when it matches them and every one of its facts occurs in them (an answer may
    join the facts of several sentences and chunks). It matches when some source sentence has
    cosine ≥ `support_threshold` with it, or holds a share ≥ `lexical_threshold` of its content
    tokens, or when the sources together hold a share ≥ `sources_lexical_threshold` of them
    (an answer's sentence that joins several source sentences).

    Relevance = `relevance_cosine_weight` · max(0, cosine) + (1 − that weight) · the share
    of the question's content tokens that the text has.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        support_threshold: float,
        lexical_threshold: float,
        sources_lexical_threshold: float,
        relevance_cosine_weight: float,
    ) -> None:
        self.encoder = encoder
        self.support_threshold = support_threshold
        self.lexical_threshold = lexical_threshold
        self.sources_lexical_threshold = sources_lexical_threshold
        self.w = relevance_cosine_weight
        self._row: dict[str, int] = {}
        self._vecs = np.zeros((0, 0), dtype=np.float32)

    # -------------------------------------------------------------- texts and vectors

    @staticmethod
    def statements(text: str) -> list[str]:
        return split_statements(text)

    def prepare(self, texts: Iterable[str]) -> None:
        new = sorted({t for t in texts if t not in self._row})
        if not new:
            return
        vecs = self.encoder.encode(new)
        start = len(self._row)
        self._row.update((t, start + i) for i, t in enumerate(new))
        self._vecs = vecs if start == 0 else np.vstack([self._vecs, vecs])

    def _vec(self, texts: Sequence[str]) -> np.ndarray:
        self.prepare(texts)  # texts not announced are encoded on demand
        return self._vecs[[self._row[t] for t in texts]]

    def cosine(self, a: str, b: str) -> float:
        va, vb = self._vec([a, b])
        return float(np.dot(va, vb))

    # -------------------------------------------------------------- decisions

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        if not statements:
            return []
        sents = [s for src in sources for s in split_statements(src)]
        if not sents:
            return [Verdict(statement=s, supported=False, reason="no_match") for s in statements]
        joined = "\n".join(sources)
        whole, keys, all_tokens = norm(joined), provided_keys(joined), content_tokens(joined)
        cos = self._vec(list(statements)) @ self._vec(sents).T
        out = []
        for i, st in enumerate(statements):
            n = norm(st)
            if n and n in whole:
                out.append(Verdict(statement=st, supported=True))
                continue
            tokens = content_tokens(st)
            if not any(
                cos[i, j] >= self.support_threshold or coverage(tokens, content_tokens(s)) >= self.lexical_threshold
                for j, s in enumerate(sents)
            ) and coverage(tokens, all_tokens) < self.sources_lexical_threshold:
                out.append(Verdict(statement=st, supported=False, reason="no_match"))
                continue
            missing = missing_fact(facts(st), whole, keys)
            reason = "" if missing is None else f"fact_mismatch: {missing}"
            out.append(Verdict(statement=st, supported=missing is None, reason=reason))
        return out

    def relevance(self, question: str, text: str) -> float:
        lex = coverage(content_tokens(question), content_tokens(text))
        return self.w * max(0.0, self.cosine(question, text)) + (1 - self.w) * lex
