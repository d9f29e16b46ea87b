"""Predictions JSONL: loading, validation and matching to cases (SPEC §6).

A prediction is matched by id (`id` or `qid`) when it has one, else by exact question
text (`q`, then `question`, as the seed's reference scorer reads it). Cases without a
prediction become empty `missing` predictions (`n_missing`); predictions that match no
case are counted (`n_unmatched`); a later prediction for the same case replaces the
earlier one (`duplicates_dropped`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragtrack.errors import InputError
from ragtrack.jsonl import iter_jsonl
from ragtrack.types import ContextChunk, EvalCase, Generation, Prediction

__all__ = ["PredictionRecord", "load_predictions", "match_predictions", "parse_prediction"]

_CONTEXT_KEYS = ("contexts", "retrieved_contexts", "chunks")


class PredictionRecord(BaseModel):
    """One validated line: how to find its case, and the prediction (case id not yet set)."""

    model_config = ConfigDict(frozen=True)

    key_id: str | None
    key_question: str | None
    prediction: Prediction


def _id_of(value: Any, file: str, where: str, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(file, f"expected a string or integer id, got {type(value).__name__}", where=where, field=field)
    return str(value)


def parse_prediction(obj: Any, file: str, where: str) -> PredictionRecord:
    """Validate one prediction object; errors name the file, line and field."""
    if not isinstance(obj, dict):
        raise InputError(file, f"expected an object, got {type(obj).__name__}", where=where)
    key_id = None
    for k in ("id", "qid"):
        if obj.get(k) is not None:
            key_id = _id_of(obj[k], file, where, k)
            break
    question = obj.get("q") or obj.get("question") or None
    if question is not None and not isinstance(question, str):
        raise InputError(file, "expected a string", where=where, field="q" if obj.get("q") else "question")
    if key_id is None and question is None:
        raise InputError(file, "a prediction needs an id (`id`/`qid`) or the question text (`q`/`question`)", where=where)
    answer = obj.get("answer")
    if answer is None:
        answer = ""
    elif not isinstance(answer, str):
        raise InputError(file, f"expected the raw model output as a string, got {type(answer).__name__}", where=where, field="answer")
    contexts = _contexts(obj, file, where)
    citations = obj.get("citations")
    # As the seed's reference scorer reads them: a list field is taken with str() of each
    # item; any other value counts as no field (citations are then parsed from the answer).
    citations = [str(x) for x in citations] if isinstance(citations, list) else None
    latency = obj.get("latency_ms")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
        raise InputError(file, "expected a number", where=where, field="latency_ms")
    usage = obj.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise InputError(file, "expected an object", where=where, field="usage")
    pred = Prediction(
        case_id=key_id or "",
        answer=answer,
        contexts=contexts,
        citations=citations,
        latency_ms=latency,
        usage=usage,
    )
    return PredictionRecord(key_id=key_id, key_question=question, prediction=pred)


def _contexts(obj: dict[str, Any], file: str, where: str) -> list[ContextChunk]:
    key = next((k for k in _CONTEXT_KEYS if obj.get(k) is not None), None)
    if key is None:
        return []
    raw = obj[key]
    if not isinstance(raw, list):
        raise InputError(file, f"expected a list, got {type(raw).__name__}", where=where, field=key)
    chunks = []
    for i, c in enumerate(raw):
        field = f"{key}[{i}]"
        if isinstance(c, str):
            chunks.append(ContextChunk(text=c))
        elif isinstance(c, dict):
            for k in ("text", "source_path"):
                if c.get(k) is not None and not isinstance(c[k], str):
                    raise InputError(file, "expected a string", where=where, field=f"{field}.{k}")
            cid = c.get("id")
            chunks.append(
                ContextChunk(
                    text=c.get("text") or "",
                    source_path=c.get("source_path"),
                    id=None if cid is None else _id_of(cid, file, where, f"{field}.id"),
                )
            )
        else:
            raise InputError(file, f"expected an object or a string, got {type(c).__name__}", where=where, field=field)
    return chunks


def load_predictions(path: str | Path) -> list[PredictionRecord]:
    """Read a predictions JSONL file (blank lines ignored)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    return [parse_prediction(obj, str(path), f"line {lineno}") for lineno, obj in iter_jsonl(text, str(path))]


def match_predictions(cases: Sequence[EvalCase], records: Sequence[PredictionRecord]) -> Generation:
    """Align predictions with cases; count what is missing, unmatched or duplicated."""
    by_id = {c.id: c for c in cases}
    by_question: dict[str, EvalCase] = {}
    for c in cases:
        by_question[c.question] = c  # the last case with a text wins, as in the seed's scorer
    found: dict[str, Prediction] = {}
    unmatched: list[str] = []
    duplicates = 0
    for r in records:
        case = by_id.get(r.key_id) if r.key_id is not None else by_question.get(r.key_question or "")
        if case is None:
            unmatched.append(r.key_id if r.key_id is not None else f"q={r.key_question!r}")
            continue
        if case.id in found:
            duplicates += 1
        found[case.id] = r.prediction.model_copy(update={"case_id": case.id})
    predictions = [found.get(c.id) or Prediction(case_id=c.id, missing=True) for c in cases]
    return Generation(
        predictions=predictions,
        n_missing=sum(1 for p in predictions if p.missing),
        n_unmatched=len(unmatched),
        duplicates_dropped=duplicates,
        unmatched_keys=unmatched,
        missing_ids=[p.case_id for p in predictions if p.missing],
    )
