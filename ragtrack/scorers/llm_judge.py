"""The `llm` backend of the `rag` family (SPEC §3): statements, support verdicts and relevance from an LLM.

Three versioned prompt files (in `prompts/`, or `llm.prompt_dir`; each sha256 logged as
`scorer/rag/llm.<kind>_prompt_sha256`), every text inside its delimiter block as data
(`prompts.fill_as_data`: a delimiter tag in the data is defused):
- `statements` (`rag_statements_v1.md`): a text → `{"statements": ["…", …]}` (a bare JSON
  list is read too); strings only, stripped, empty and repeated ones dropped; `[]` is a
  valid reply (no claim). A text without any letter, digit or ideograph is not asked.
- `support` (`rag_support_v1.md`): the sources (`[1]`, `[2]` … above each) and the
  numbered statements → `{"verdicts": [{"index": i, "supported": true|false, "reason":
  "…"}, …]}`, exactly one verdict per statement (`index` optional, in order then;
  `supported` may be 0/1). An unsupported statement keeps the judge's reason.
- `relevance` (`rag_relevance_v1.md`): question and text → `{"relevance": x}` (a bare
  number is read too), x in 0..1; a value outside is unreadable, not clamped.
`cosine` stays the embedding cosine of the offline judge (answer_correctness's term).

The scorer's batch flow (`LlmBatch.prefetch`) asks every case's questions in two
concurrent rounds (statements and relevance, then support verdicts); a question without
a usable answer raises `JudgeFailure` and the metric that needed it is NaN with the reason.
Requests per `rag` case with an answer, a ground truth and k contexts: 2 decompositions
(answer, ground truth), 4 support verdicts (answer and ground truth against the contexts,
each against the other), k + 1 relevances (each chunk, the answer): 7 + k; identical
questions are asked once, and a re-run takes every answer from the generation cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragtrack.inputs.prompts import Prompt, fill_as_data
from ragtrack.nlp.lexical import split_statements
from ragtrack.scorers.judge import OfflineJudge, Verdict
from ragtrack.scorers.llm_batch import LlmBatch, ReplyError, read_json

__all__ = ["PROMPTS", "LlmJudge", "read_relevance", "read_statements", "read_support"]

PROMPTS = {
    "statements": ("rag_statements_v1.md", ("text",)),
    "support": ("rag_support_v1.md", ("sources", "statements")),
    "relevance": ("rag_relevance_v1.md", ("question", "text")),
}


def _statements(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        obj = obj.get("statements")
    if not isinstance(obj, list):
        raise ReplyError("no statements list")
    if not all(isinstance(s, str) for s in obj):
        raise ReplyError("a statement is not a string")
    return list(dict.fromkeys(s.strip() for s in obj if s.strip()))


def read_statements(text: str) -> list[str]:
    """The statements of a decomposition reply; `ReplyError` when it has none in the expected shape."""
    return read_json(text, _statements)


def read_support(n: int) -> Callable[[str], list[tuple[bool, str]]]:
    """A reader of a support reply for `n` statements: `(supported, reason)` per statement, in order."""

    def accept(obj: Any) -> list[tuple[bool, str]]:
        if isinstance(obj, dict):
            obj = obj.get("verdicts")
        if not isinstance(obj, list):
            raise ReplyError("no verdicts list")
        if len(obj) != n:
            raise ReplyError(f"{len(obj)} verdicts for {n} statements")
        out: list[tuple[bool, str] | None] = [None] * n
        for pos, v in enumerate(obj, 1):
            if not isinstance(v, dict):
                raise ReplyError(f"verdict {pos} is not an object")
            i = v.get("index", pos)
            if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n or out[i - 1] is not None:
                raise ReplyError(f"verdict {pos}: index {i!r} is not a statement number, or repeats one")
            ok = v.get("supported")
            if not isinstance(ok, bool) and ok in (0, 1):
                ok = bool(ok)
            if not isinstance(ok, bool):
                raise ReplyError(f"verdict {pos}: supported is {ok!r}, not true or false")
            reason = v.get("reason")
            out[i - 1] = (ok, reason.strip() if isinstance(reason, str) else "")
        return [v for v in out if v is not None]

    return lambda text: read_json(text, accept)


def _relevance(obj: Any) -> float:
    if isinstance(obj, dict):
        obj = obj.get("relevance")
    if isinstance(obj, bool) or not isinstance(obj, (int, float)) or not math.isfinite(obj):
        raise ReplyError(f"relevance is {obj!r}, not a number")
    if not 0 <= obj <= 1:
        raise ReplyError(f"relevance {obj:g} is outside 0..1")
    return float(obj)


def read_relevance(text: str) -> float:
    """The relevance (0..1) of a relevance reply."""
    return read_json(text, _relevance)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class LlmJudge:
    """`RagJudge` through an LLM (see the module doc); `cosine` from `vectors`, the offline judge's
    embeddings."""

    def __init__(self, batch: LlmBatch, prompts: dict[str, Prompt], vectors: OfflineJudge) -> None:
        self.batch = batch
        self.prompts = prompts
        self.vectors = vectors
        self._cosine_texts: set[str] = set()

    def prefetch(self, evaluate: Callable[[], object]) -> None:
        """Ask every question `evaluate` asks (see `LlmBatch.prefetch`), then embed every text it compares,
        in one call."""
        self.batch.prefetch(evaluate)
        self.vectors.prepare(self._cosine_texts)

    def prepare(self, texts: Iterable[str]) -> None:
        self.vectors.prepare(texts)

    def statements(self, text: str) -> list[str]:
        if not split_statements(text):
            return []
        prompt = fill_as_data(self.prompts["statements"].text, {"text": text})
        return self.batch.ask(prompt, read_statements, [])

    def support(self, statements: Sequence[str], sources: Sequence[str]) -> list[Verdict]:
        if not statements:
            return []
        if not any(s.strip() for s in sources):
            return [Verdict(statement=s, supported=False, reason="no_match") for s in statements]
        prompt = fill_as_data(
            self.prompts["support"].text,
            {
                "sources": "\n\n".join(f"[{i}]\n{s}" for i, s in enumerate(sources, 1)),
                "statements": "\n".join(f"{i}. {_one_line(s)}" for i, s in enumerate(statements, 1)),
            },
        )
        flags = self.batch.ask(prompt, read_support(len(statements)), [(True, "")] * len(statements))
        return [
            Verdict(statement=s, supported=ok, reason="" if ok else why or "unsupported")
            for s, (ok, why) in zip(statements, flags, strict=True)
        ]

    def relevance(self, question: str, text: str) -> float:
        prompt = fill_as_data(self.prompts["relevance"].text, {"question": question, "text": text})
        return self.batch.ask(prompt, read_relevance, 0.0)

    def relevances(self, question: str, chunks: Sequence[str]) -> list[float]:
        return [self.relevance(question, c) for c in chunks]

    def cosine(self, a: str, b: str) -> float:
        if self.batch.planning:  # embedded together after planning
            self._cosine_texts.update((a, b))
            return 0.0
        return self.vectors.cosine(a, b)
