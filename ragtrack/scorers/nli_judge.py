"""The `nli` backend: support and contradiction from a natural-language-inference cross-encoder (SPEC §3).

A statement is judged against its closest source sentences: the `candidates` nearest by
embedding cosine, each alone and all joined (an answer's sentence may join several). The
model gives, per (premise, statement) pair, the probabilities of entailment and
contradiction; with e and c their maxima over the premises:

    score = max(0, e − c)      contradicted: c ≥ 0.5 and c > e      supported: e ≥ 0.5, not contradicted

A statement whose normalised text is contained in the sources is supported with score 1,
as in the offline backend. Statements, relevance and cosine stay the offline backend's.

`NliModel` loads any sentence-transformers `CrossEncoder` NLI model (a local folder or a hub
name from the local cache; nothing is downloaded unless named), finds the entailment and
contradiction outputs by their labels (`id2label`), and judges each distinct pair once per
process; a batch's pairs are collected first (`NliJudge.prefetch`) and predicted in one
call, sorted, so the same inputs give the same batches and the same bits. Its files'
sha256 is logged with the scorer, like the embedder's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragtrack.clients.embeddings import ModelIdentity, model_identity, resolve_model
from ragtrack.core.errors import InputError
from ragtrack.nlp.lexical import split_statements
from ragtrack.nlp.text import norm
from ragtrack.scorers.judge import OfflineJudge, Verdict, unmatched

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["NliJudge", "NliModel"]

_models: dict[str, CrossEncoder] = {}
_memo: dict[tuple[str, str, str], tuple[float, float]] = {}  # (model sha256, premise, hypothesis) -> (e, c)
_lock = threading.Lock()


class NliModel:
    """An NLI cross-encoder: (entailment, contradiction) probabilities per pair, each pair predicted once
    per process."""

    def __init__(self, name: str, *, batch_size: int = 16, field: str = "nli_model") -> None:
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

    def _load(self) -> tuple[CrossEncoder, int, int]:
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
        assert model.model is not None, "a cross-encoder loaded from a folder wraps a transformers model"
        labels = {int(i): str(label).lower() for i, label in (model.model.config.id2label or {}).items()}
        entail = next((i for i, label in labels.items() if label.startswith("entail")), None)
        contra = next((i for i, label in labels.items() if label.startswith("contradict")), None)
        if entail is None or contra is None:
            raise InputError(
                self.name,
                f"not an NLI model: its labels are {sorted(labels.values())}; expected "
                "entailment and contradiction (and neutral)",
                field=self.field,
            )
        return model, entail, contra

    def probs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        """(entailment, contradiction) of each (premise, hypothesis); the pairs not judged yet go to the
        model at once."""
        sha = self.identity.sha256
        todo = sorted({p for p in pairs if (sha, *p) not in _memo})
        if todo:
            model, entail, contra = self._load()
            out = np.asarray(
                model.predict(todo, batch_size=self.batch_size, apply_softmax=True, show_progress_bar=False)
            )
            self.predicted += len(todo)
            with _lock:
                for pair, row in zip(todo, out, strict=True):
                    _memo.setdefault((sha, *pair), (float(row[entail]), float(row[contra])))
        return [_memo[(sha, *p)] for p in pairs]


class NliJudge:
    """`RagJudge` with an NLI model's support verdicts; statements, relevance and cosine from `offline`."""

    def __init__(self, model: NliModel, offline: OfflineJudge, *, candidates: int = 3) -> None:
        self.model = model
        self.offline = offline
        self.candidates = candidates
        self.planning = False
        self._wanted: set[tuple[str, str]] = set()

    def prepare(self, texts: Iterable[str]) -> None:
        self.offline.prepare(texts)

    def prefetch(self, evaluate: Callable[[], object]) -> None:
        """Run `evaluate` once to collect every pair it needs, then predict them all in one call."""
        self.planning = True
        try:
            evaluate()
        finally:
            self.planning = False
        self.model.probs(sorted(self._wanted))
        self._wanted.clear()

    def statements(self, text: str) -> list[str]:
        return self.offline.statements(text)

    def relevance(self, question: str, text: str) -> float:
        return self.offline.relevance(question, text)

    def relevances(self, question: str, chunks: Sequence[str]) -> list[float]:
        return self.offline.relevances(question, chunks)

    def cosine(self, a: str, b: str) -> float:
        return self.offline.cosine(a, b)

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        sents = [s for src in sources for s in split_statements(src)]
        if not statements or not sents:
            return unmatched(statements)
        whole = norm("\n".join(sources))
        cos = self.offline.similarities(statements, sents)
        return [self._verdict(st, cos[i], sents, whole) for i, st in enumerate(statements)]

    def _premises(self, cos: np.ndarray, sents: Sequence[str]) -> list[str]:
        order = sorted(range(len(sents)), key=lambda j: (-float(cos[j]), j))[: self.candidates]
        chosen = [sents[j] for j in sorted(order)]  # in source order, so the joined premise reads as written
        return chosen + ([" ".join(chosen)] if len(chosen) > 1 else [])

    def _verdict(self, st: str, cos: np.ndarray, sents: Sequence[str], whole: str) -> Verdict:
        n = norm(st)
        if n and n in whole:
            return Verdict(statement=st, supported=True, score=1.0)
        pairs = [(premise, st) for premise in self._premises(cos, sents)]
        if self.planning:
            self._wanted.update(pairs)
            return Verdict(statement=st, supported=True)
        probs = self.model.probs(pairs)
        e = max(p[0] for p in probs)
        c = max(p[1] for p in probs)
        score = max(0.0, e - c)
        if c >= 0.5 and c > e:
            return Verdict(
                statement=st,
                supported=False,
                reason=f"contradicts: nli contradiction {c:.2f}",
                score=score,
                contradicted=True,
            )
        if e < 0.5:
            return Verdict(
                statement=st,
                supported=False,
                reason=f"no_match: nli entailment {e:.2f}",
                score=score,
            )
        return Verdict(statement=st, supported=True, score=score)
