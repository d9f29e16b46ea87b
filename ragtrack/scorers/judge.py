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
    found_words,
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
from ragtrack.nlp.text import has_cjk, norm
from ragtrack.scorers import support_model
from ragtrack.scorers.support_model import SupportFeatures, SupportModel

__all__ = ["Encoder", "JudgeFailure", "OfflineJudge", "RagJudge", "Verdict", "unmatched"]

# The share of the support model's score a statement keeps when it contradicts its evidence (version 13): a
# contradiction costs more than a lack of support, yet the rules also fire on faithful paraphrases
CONTRADICTED_SHARE = 0.5


class _Sources(NamedTuple):
    """What `OfflineJudge.support` reads of its sources once for all statements."""

    sents: Sequence[str]  # their sentences
    text: str  # all of them, joined by newlines
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
    contradicted: bool = False

    @model_validator(mode="after")
    def _binary_by_default(self) -> Verdict:
        if self.score < 0:
            object.__setattr__(self, "score", 1.0 if self.supported else 0.0)
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
        """How well `text` (an answer) addresses `question`, 0..1."""

    def relevances(self, question: str, chunks: Sequence[str]) -> list[float]:
        """How well each retrieved chunk addresses `question`, 0..1, read among the others."""

    def cosine(self, a: str, b: str) -> float:
        """Embedding cosine of two texts."""


class OfflineJudge:
    """SPEC §3 `offline`: a statement is supported when its normalised text is contained in the
    sources; otherwise the support model (`support_model`, version 13) weighs what the judge measures of
    it against them (`measure`: cosines, lexical shares, its facts, contradiction, grounding) into the
    probability that it is unsupported, and it is supported when that probability is below the model's
    threshold and it contradicts nothing, states no fact the sources lack and adds no word to the
    evidence it copies. Its graded score is 1 − that probability.

    Relevance (of an answer or a chunk), averaged over the asks of the question =
    `relevance_cosine_weight` · max(0, the best cosine of one of its sentences with the ask's
    focus) + (1 − that weight) · the share of the focus's words it has
    (`contradiction.word_coverage`); the focus is the ask without the names and terms of its topic. A
    retrieved chunk's share is read among the other chunks (`relevances`, version 15).
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        relevance_cosine_weight: float,
        model: SupportModel | None = None,
    ) -> None:
        self.encoder = encoder
        self.w = relevance_cosine_weight
        self.model = model or support_model.load()
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
        measured = self.measure(statements, sources)
        if measured is None:
            return unmatched(statements)
        return [self._verdict(st, m) for st, m in zip(statements, measured, strict=True)]

    def measure(
        self, statements: Sequence[str], sources: Sequence[str]
    ) -> list[tuple[SupportFeatures, str] | None] | None:
        """What the support model weighs of each statement against the sources and why it cannot be supported
        (`_features`), None for one whose normalised text they contain; None when they hold no sentence."""
        sents = [s for src in sources for s in split_statements(src)]
        if not statements or not sents:
            return None
        joined = "\n".join(sources)
        src = _Sources(
            sents=sents,
            text=joined,
            whole=norm(joined),
            keys=provided_keys(joined),
            tokens=support_tokens(joined),
            vocab=words(joined),
            clauses=source_clauses(sents),
        )
        cos = self.similarities(statements, sents)
        return [
            None if (n := norm(st)) and n in src.whole else self._features(st, cos[i], src)
            for i, st in enumerate(statements)
        ]

    def _verdict(self, st: str, measured: tuple[SupportFeatures, str] | None) -> Verdict:
        """SPEC §3's graded support of one statement, from what `measure` found of it."""
        if measured is None:
            return Verdict(statement=st, supported=True, score=1.0)
        features, reason = measured
        unsupported = self.model.unsupported(features)
        if reason.startswith("contradicts"):
            score = CONTRADICTED_SHARE * (1 - unsupported)
            return Verdict(statement=st, supported=False, reason=reason, score=score, contradicted=True)
        if not reason and unsupported >= self.model.threshold:
            reason = "no_match"
        return Verdict(statement=st, supported=not reason, reason=reason, score=1 - unsupported)

    def _features(self, st: str, cos: np.ndarray, src: _Sources) -> tuple[SupportFeatures, str]:
        """What the support model weighs of statement `st` against the sources `src` (its cosines with their
        sentences `cos`), and why it is not supported whatever the model says: `contradicts: <what>`,
        `fact_mismatch: <token>`, `adds: <words>`, or "" when nothing rules it out."""
        sents, keys, vocab = src.sents, src.keys, src.vocab
        tokens = support_tokens(st)
        lex = [coverage(tokens, support_tokens(s)) for s in sents]
        best = max(range(len(sents)), key=lambda j: (max(float(cos[j]), lex[j]), -j))
        evidence = sents[best]
        st_facts = facts(st)
        rival = quantity_conflict(st_facts, facts(evidence), keys)
        conflicting = None if rival else conflict(st, evidence)
        missing = missing_fact(st_facts, src.whole, keys)
        added = added_words(st, evidence, vocab)
        measured = SupportFeatures(
            cosine=float(cos.max()),
            lexical=max(lex),
            sources_lexical=coverage(tokens, src.tokens),
            fuzz=fuzz.partial_ratio(norm(st), norm(evidence)) / 100,
            quantity_conflict=float(rival is not None),
            conflict=float(conflicting is not None),
            missing_fact=float(missing is not None),
            added_words=float(len(added)),
            grounding=grounding(st, vocab),
            reversed_polarity=float(reversed_polarity(st, src.clauses) is not None),
            word_coverage=word_coverage(st, src.text),
            chinese=float(has_cjk(st)),
        )
        if rival or conflicting:
            return measured, f"contradicts: {f'quantity {rival}' if rival else conflicting}"
        if missing is not None:
            return measured, f"fact_mismatch: {missing}"
        if added:
            return measured, f"adds: {', '.join(sorted(added))}"
        return measured, ""

    def relevance(self, question: str, text: str) -> float:
        """SPEC §3: how well `text` answers each ask of the question (`questions.asks`), on average. An ask
        is read by its focus (`entities.focus`: the names a whole topic shares do not make a chunk or an
        answer relevant, what the question asks of them does): the best cosine of one of the text's
        sentences with it, and the share of its words the text has."""
        (value,) = self.relevances(question, [text])
        return value

    def relevances(self, question: str, chunks: Sequence[str]) -> list[float]:
        """`relevance` of each chunk, its words read among the others' (version 15): a word of an ask's
        focus that every chunk has tells none of them from another, so the lexical half is the mean of the
        share of the focus's words the chunk has and the share it has of those that tell the chunks apart
        (`_lexical`)."""
        focuses = [focus(a) for a in asks(question)]
        lexical = [_lexical(f, chunks) for f in focuses]
        out = []
        for k, chunk in enumerate(chunks):
            best = self.similarities(focuses, self.statements(chunk) or [chunk]).max(axis=1)
            out.append(
                math.fsum(
                    self.w * max(0.0, float(b)) + (1 - self.w) * lex[k]
                    for b, lex in zip(best, lexical, strict=True)
                )
                / len(focuses)
            )
        return out


def _lexical(focus_text: str, texts: Sequence[str]) -> list[float]:
    """The lexical half of each text's relevance to one ask's focus: the mean of the share of the focus's
    words it has (`word_coverage`) and the share it has of the focus's words that not every distinct text
    has — a word they all have weighs nothing in telling them apart, as its inverse document frequency over
    them is 0. With one distinct text, or when no word tells them apart, both shares are the first."""
    own = words(focus_text)
    if not own:
        return [0.0] * len(texts)
    found = [found_words(focus_text, t) for t in texts]
    telling = own.difference(frozenset.intersection(*found)) if len(set(texts)) > 1 else own
    return [
        (len(f) / len(own) + (len(f & telling) / len(telling) if telling else len(f) / len(own))) / 2
        for f in found
    ]
