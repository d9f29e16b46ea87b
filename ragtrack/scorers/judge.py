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

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator
from rapidfuzz import fuzz

from ragtrack.nlp.contradiction import (
    SourceClause,
    added_words,
    conflict,
    grounding,
    quantity_conflict,
    reversed_polarity,
    source_clauses,
    support_tokens,
    word_coverage,
    words,
)
from ragtrack.nlp.entities import focus
from ragtrack.nlp.facts import facts, missing_fact, provided_keys
from ragtrack.nlp.lexical import coverage, split_statements
from ragtrack.nlp.questions import asks
from ragtrack.nlp.text import norm

__all__ = ["Encoder", "JudgeFailure", "OfflineJudge", "RagJudge", "Verdict", "unmatched"]

# The share of its closeness a supported statement keeps when a clause of it is negated where the source
# clause it restates is not (`contradiction.reversed_polarity`, version 10).
REVERSED_POLARITY_FACTOR = 0.5


class _Sources(NamedTuple):
    """What `OfflineJudge.support` reads of its sources once for all statements."""

    sents: Sequence[str]  # their sentences
    whole: str  # all of them, `norm`ed
    keys: frozenset[str]  # `provided_keys`
    tokens: frozenset[str]  # `support_tokens`
    vocab: frozenset[str]  # `words`
    clauses: tuple[SourceClause, ...]  # `source_clauses` of their sentences


class Verdict(BaseModel):
    """Whether a statement is supported, and how well (`score`, 0..1: SPEC §3's graded support).

    `reason` when it is not: `no_match`, `fact_mismatch: <token>`, or `contradicts: <what>`
    (`contradicted`). A backend that only says yes or no scores 1 or 0.
    """

    model_config = ConfigDict(frozen=True)

    statement: str
    supported: bool
    reason: str = ""
    score: float = -1.0  # -1: not given, 1 when supported else 0
    closeness: float = -1.0  # how close the best evidence is, 0..1 (-1: not given, as `score`)
    contradicted: bool = False

    @model_validator(mode="after")
    def _binary_by_default(self) -> Verdict:
        for field in ("score", "closeness"):
            if getattr(self, field) < 0:
                object.__setattr__(self, field, 1.0 if self.supported else 0.0)
        return self


def unmatched(statements: Sequence[str]) -> list[Verdict]:
    """The verdicts when the sources hold no sentence: every statement unsupported, matching nothing."""
    return [Verdict(statement=s, supported=False, reason="no_match") for s in statements]


class JudgeFailure(Exception):
    """A backend could not decide (its LLM call failed, or the reply could not be read): the reason."""


class Encoder(Protocol):
    """Texts to L2-normalised row vectors (`ragtrack.clients.embeddings.Embedder`, or a fake in tests)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class RagJudge(Protocol):
    """The decisions a `rag` backend makes; everything else is arithmetic in the scorers."""

    def prepare(self, texts: Iterable[str]) -> None:
        """Called once per batch with every text the batch will ask about."""

    def statements(self, text: str) -> list[str]:
        """The atomic statements of an answer (or ground-truth answer)."""

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        """One verdict per statement: is it supported by the source texts, and how well?"""

    def relevance(self, question: str, text: str) -> float:
        """How well `text` (an answer or a retrieved chunk) addresses `question`, 0..1."""

    def cosine(self, a: str, b: str) -> float:
        """Embedding cosine of two texts."""


class OfflineJudge:
    """SPEC §3 `offline`: a statement is supported when its normalised text is contained in the
    sources, or when it matches them and every one of its facts occurs in them (an answer may
    join the facts of several sentences and chunks). It matches when some source sentence has
    cosine ≥ `support_threshold` with it, or holds a share ≥ `lexical_threshold` of its content
    tokens, or when the sources together hold a share ≥ `sources_lexical_threshold` of them
    (an answer's sentence that joins several source sentences).

    Relevance (of an answer or a chunk), averaged over the asks of the question =
    `relevance_cosine_weight` · max(0, the best cosine of one of its sentences with the ask's
    focus) + (1 − that weight) · the share of the focus's words it has
    (`contradiction.word_coverage`); the focus is the ask without the names and terms of its topic.
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

    def similarities(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosines of every text of `a` (rows) with every text of `b` (columns)."""
        return self._vec(list(a)) @ self._vec(list(b)).T

    # -------------------------------------------------------------- decisions

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        sents = [s for src in sources for s in split_statements(src)]
        if not statements or not sents:
            return unmatched(statements)
        joined = "\n".join(sources)
        src = _Sources(
            sents=sents,
            whole=norm(joined),
            keys=provided_keys(joined),
            tokens=support_tokens(joined),
            vocab=words(joined),
            clauses=source_clauses(sents),
        )
        cos = self.similarities(statements, sents)
        return [self._verdict(st, cos[i], src) for i, st in enumerate(statements)]

    def _verdict(self, st: str, cos: np.ndarray, src: _Sources) -> Verdict:
        """SPEC §3's graded support of one statement against the sources `src` (its cosines with their
        sentences `cos`)."""
        sents, whole, keys, vocab = src.sents, src.whole, src.keys, src.vocab
        n = norm(st)
        if n and n in whole:
            return Verdict(statement=st, supported=True, score=1.0, closeness=1.0)
        tokens = support_tokens(st)
        lex = [coverage(tokens, support_tokens(s)) for s in sents]
        best = max(range(len(sents)), key=lambda j: (max(float(cos[j]), lex[j]), -j))
        evidence = sents[best]
        closeness = 0.5 * max(0.0, float(cos[best])) + 0.5 * fuzz.partial_ratio(n, norm(evidence)) / 100
        matched = (
            any(
                float(cos[j]) >= self.support_threshold or lex[j] >= self.lexical_threshold
                for j in range(len(sents))
            )
            or coverage(tokens, src.tokens) >= self.sources_lexical_threshold
        )

        def unsupported(reason: str) -> Verdict:
            return Verdict(
                statement=st, supported=False, reason=reason, score=0.5 * closeness, closeness=closeness
            )

        if not matched:
            return unsupported("no_match")
        st_facts = facts(st)
        why = quantity_conflict(st_facts, facts(evidence), keys)
        why = f"quantity {why}" if why else conflict(st, evidence)
        if why:
            return Verdict(
                statement=st,
                supported=False,
                reason=f"contradicts: {why}",
                score=0.0,
                closeness=closeness,
                contradicted=True,
            )
        missing = missing_fact(st_facts, whole, keys)
        if missing is not None:
            return unsupported(f"fact_mismatch: {missing}")
        added = added_words(st, evidence, vocab)
        if added:
            return unsupported(f"adds: {', '.join(sorted(added))}")
        closeness *= grounding(st, vocab)
        if reversed_polarity(st, src.clauses):  # a clause negated where the source clause it restates is not
            closeness *= REVERSED_POLARITY_FACTOR
        return Verdict(statement=st, supported=True, score=0.5 + 0.5 * closeness, closeness=closeness)

    def relevance(self, question: str, text: str) -> float:
        """SPEC §3: how well `text` answers each ask of the question (`questions.asks`), on average. An ask
        is read by its focus (`entities.focus`: the names a whole topic shares do not make a chunk or an
        answer relevant, what the question asks of them does): the best cosine of one of the text's
        sentences with it, and the share of its words the text has."""
        sentences = self.statements(text) or [text]
        focuses = [focus(a) for a in asks(question)]
        best = self.similarities(focuses, sentences).max(axis=1)
        return math.fsum(
            self.w * max(0.0, float(b)) + (1 - self.w) * word_coverage(f, text)
            for f, b in zip(focuses, best, strict=True)
        ) / len(focuses)
