"""Predictions JSONL: validation, and streaming it against the cases (SPEC §6).

A prediction is matched by id (`id` or `qid`) when it has one, else by exact question
text (`q`, then `question`, as the seed's reference scorer reads it). Cases without a
prediction become empty `missing` predictions (`n_missing`, `missing_ids`); predictions
that match no case are counted (`n_unmatched`); a later prediction for the same case
replaces the earlier one (`duplicates_dropped`).

The file is read line by line and only predictions that match a case are kept, so memory
is bounded by the eval set, not by the file; every line is still validated and hashed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import zlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.spool import Spool
from ragtrack.core.types import ContextChunk, EvalCase, Generation, Prediction
from ragtrack.inputs.jsonl import iter_jsonl

__all__ = [
    "PREDICTION_KEYS",
    "UNMATCHED_KEYS_LIMIT",
    "PredictionRecord",
    "filter_prediction_file",
    "match_prediction_file",
    "match_predictions",
    "parse_prediction",
]

_CONTEXT_KEYS = ("contexts", "retrieved_contexts", "chunks")
# Keys that only a prediction carries: an eval-set item with one is a predictions line.
PREDICTION_KEYS = ("answer", *_CONTEXT_KEYS, "citations", "latency_ms")
UNMATCHED_KEYS_LIMIT = 1000  # unmatched keys listed in a Generation; the rest are only counted
_KEY_TEXT_CHARS = 120  # an unmatched question is listed cut to this many characters


class PredictionRecord(BaseModel):
    """One validated line: how to find its case, and the prediction (case id not yet set)."""

    model_config = ConfigDict(frozen=True)

    key_id: str | None
    key_question: str | None
    prediction: Prediction


def _id_of(value: Any, file: str, where: str, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            file, f"expected a string or integer id, got {type(value).__name__}", where=where, field=field
        )
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
        raise InputError(
            file, "a prediction needs an id (`id`/`qid`) or the question text (`q`/`question`)", where=where
        )
    if obj.get("answer") is None:
        got = "missing" if "answer" not in obj else "null"
        raise InputError(file, f'{got}; a recorded empty answer is ""', where=where, field="answer")
    answer = obj["answer"]
    if not isinstance(answer, str):
        raise InputError(
            file,
            f"expected the raw model output as a string, got {type(answer).__name__}",
            where=where,
            field="answer",
        )
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
            cid, score = c.get("id"), c.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise InputError(file, "expected a number", where=where, field=f"{field}.score")
            chunks.append(
                ContextChunk(
                    text=c.get("text") or "",
                    source_path=c.get("source_path"),
                    id=None if cid is None else _id_of(cid, file, where, f"{field}.id"),
                    score=score,
                )
            )
        else:
            raise InputError(
                file, f"expected an object or a string, got {type(c).__name__}", where=where, field=field
            )
    return chunks


def case_keys(cases: Sequence[EvalCase]) -> list[tuple[str, str]]:
    """Each case's `(id, question)`: from the spool's memo when its loader kept them, else read."""
    memo = cases.memo if isinstance(cases, Spool) else None
    return list(memo) if memo is not None else [(c.id, c.question) for c in cases]


class _CaseIndex:
    """Finds a prediction's case, as a position in the cases: by id when it has one, else by exact question
    text."""

    def __init__(self, cases: Sequence[EvalCase]) -> None:
        keys = case_keys(cases)
        self.ids = [case_id for case_id, _ in keys]
        self.by_id = {case_id: i for i, case_id in enumerate(self.ids)}
        # the last case with a text wins, as in the seed's scorer
        self.by_question = {question: i for i, (_, question) in enumerate(keys)}

    def find(self, r: PredictionRecord) -> int | None:
        if r.key_id is not None:
            return self.by_id.get(r.key_id)
        return self.by_question.get(r.key_question or "")


def _unmatched_key(r: PredictionRecord) -> str:
    if r.key_id is not None:
        return r.key_id
    q = r.key_question or ""
    return f"q={q[:_KEY_TEXT_CHARS] + '…' if len(q) > _KEY_TEXT_CHARS else q!r}"


def _for_case(pred: Prediction, case_id: str) -> Prediction:
    """The prediction with its case's id: itself when it already has it (matched by id; it is frozen)."""
    return pred if pred.case_id == case_id else pred.model_copy(update={"case_id": case_id})


def _hashed(f: Iterable[bytes], hasher: Any) -> Iterator[bytes]:
    for line in f:
        hasher.update(line)
        yield line


def _records(path: Path, hasher: Any) -> Iterator[tuple[bytes, PredictionRecord]]:
    """`(raw line, record)` for every non-blank line; every byte read goes into `hasher`."""
    file = str(path)
    try:
        with (
            gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as f
        ):  # a compressed file: its content
            for lineno, raw, obj in iter_jsonl(_hashed(f, hasher), file):
                yield raw, parse_prediction(obj, file, f"line {lineno}")
    except (EOFError, zlib.error) as e:
        raise InputError(file, f"not a readable gzip file ({e})") from None
    except OSError as e:
        raise InputError.from_os_error(path, e) from None


def match_predictions(
    records: Iterable[PredictionRecord],
    cases: Sequence[EvalCase],
    *,
    keep: Collection[str] | None = None,
    spool: bool = True,
) -> Generation:
    """Match validated predictions against `cases`: one prediction per case, in case order.

    With `keep` (the ids of a dev subset), only the cases of `keep` get a prediction, and
    a prediction that matches a case outside it is counted in `n_outside_subset`, not as
    unmatched.
    """
    index = _CaseIndex(cases)
    ids = index.ids
    # each case's position among the scored cases (None: outside `keep`)
    slot: list[int | None] = list(range(len(ids))) if keep is None else [None] * len(ids)
    scored = ids if keep is None else [case_id for case_id in ids if case_id in keep]
    if keep is not None:
        for k, j in enumerate(j for j, case_id in enumerate(ids) if case_id in keep):
            slot[j] = k

    def resolve(position: int, found: list[Prediction]) -> Prediction:
        return found[-1] if found else Prediction(case_id=scored[position], missing=True)

    predictions: Spool[Prediction] = Spool(resolve=resolve, in_memory=None if spool else sys.maxsize)
    seen = bytearray(len(scored))
    unmatched_keys: list[str] = []
    n_unmatched = n_outside = duplicates = 0
    for r in records:
        i = index.find(r)
        if i is None:
            n_unmatched += 1
            if len(unmatched_keys) < UNMATCHED_KEYS_LIMIT:
                unmatched_keys.append(_unmatched_key(r))
        elif (n := slot[i]) is None:
            n_outside += 1
        else:
            duplicates += seen[n]
            seen[n] = 1
            predictions.put(n, _for_case(r.prediction, ids[i]))
    missing_ids = [case_id for case_id, found in zip(scored, seen, strict=True) if not found]
    return Generation(
        predictions=predictions.seal(len(scored)),
        n_missing=len(missing_ids),
        missing_ids=missing_ids,
        n_unmatched=n_unmatched,
        unmatched_keys=unmatched_keys,
        n_outside_subset=n_outside,
        duplicates_dropped=duplicates,
    )


def match_prediction_file(
    path: str | Path, cases: Sequence[EvalCase], *, keep: Collection[str] | None = None, spool: bool = True
) -> Generation:
    """Stream a predictions JSONL file against `cases` (see `match_predictions`).

    The file's sha1 is `provenance["predictions_sha1"]`. An empty file is accepted with a warning.
    """
    path = Path(path)
    hasher = hashlib.sha1()
    n_lines = 0

    def records() -> Iterator[PredictionRecord]:
        nonlocal n_lines
        for _, r in _records(path, hasher):
            n_lines += 1
            yield r

    generation = match_predictions(records(), cases, keep=keep, spool=spool)
    warnings = [] if n_lines else [f"{path}: no predictions: every case is scored as missing"]
    return generation.model_copy(
        update={"provenance": {"predictions_sha1": hasher.hexdigest()}, "warnings": warnings}
    )


def filter_prediction_file(
    src: str | Path, dst: str | Path, cases: Sequence[EvalCase], keep: Collection[str], expected_sha1: str
) -> None:
    """Write to `dst` the lines of `src` whose case is in `keep`, and those that match no case.

    Lines are copied byte for byte, in order (blank lines left out), so that scoring `dst`
    against the subset's cases gives the counts `match_prediction_file(src, cases,
    keep=keep)` gave. `src` must still have the sha1 `expected_sha1` (the one the run
    read); otherwise nothing is written and the error says that the file changed.
    """
    src, dst = Path(src), Path(dst)
    index = _CaseIndex(cases)
    hasher = hashlib.sha1()
    part = dst.with_name(dst.name + ".part")
    try:
        with part.open("wb") as out:
            for raw, r in _records(src, hasher):
                i = index.find(r)
                if i is None or index.ids[i] in keep:
                    out.write(raw)
        if hasher.hexdigest() != expected_sha1:
            raise InputError(
                str(src),
                f"changed during the run: its sha1 is now {hasher.hexdigest()}, the run read {expected_sha1}",
            )
        os.replace(part, dst)
    except OSError as e:
        raise InputError(str(dst), f"cannot write: {e.strerror or e}") from None
    finally:
        part.unlink(missing_ok=True)
