"""Eval-set loaders for the `question_v2`, `qaset` and `rag` formats, and subsets (SPEC §6).

Every problem with a file is an `InputError` naming the file, the item (JSON array) or
line (JSONL), and the field. Several files may describe the same cases (a `question_v2`
file and its matching `qaset`): `load_eval_set` merges them by id.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_bytes
from ragtrack.core.spool import Spool
from ragtrack.core.types import (
    EvalCase,
    EvalFile,
    EvalFormat,
    EvalSet,
    ExpectedV2,
    Gold,
    RagReference,
    SubsetInfo,
)
from ragtrack.inputs.jsonl import iter_jsonl, loads
from ragtrack.inputs.predictions import PREDICTION_KEYS

__all__ = [
    "MAX_CASE_ID",
    "LoadedFile",
    "detect_format",
    "id_problem",
    "load_eval_file",
    "load_eval_set",
    "make_subset",
    "subset_eval_set",
]

# characters: MLflow's MAX_CHARS_IN_TRACE_INFO_METADATA (each case's trace keeps its id there)
MAX_CASE_ID = 250
SUBSET_ALGORITHM = "random.Random(seed).sample(range(n_items), n), kept in file order"


class _Item(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class _QuestionV2Item(_Item):
    id: str | int | None = None
    question: str
    expected: ExpectedV2


class _QasetItem(_Item):
    qid: str | int
    q: str
    answerable: bool
    gold_ids: list[str] = []
    gold_claim: str | None = None


class _RagItem(_Item):
    id: str | int
    question: str
    ground_truth_answer: str | None = None
    ground_truth_contexts: list[str] | None = None
    graph_entities: list[str] | None = None
    metadata: dict[str, Any] | None = None


_MODELS: dict[str, type[_Item]] = {"question_v2": _QuestionV2Item, "qaset": _QasetItem, "rag": _RagItem}


@dataclass(frozen=True)
class LoadedFile:
    """A validated file: its identity, its raw items and their case ids (for subsets), and its cases (a
    spool: see `ragtrack.core.spool`; empty when `load_eval_set` took them as they were validated)."""

    file: EvalFile
    items: list[dict[str, Any]]
    ids: list[str]
    cases: Sequence[EvalCase]
    jsonl: bool


# The key that announces each format (detect_format's order), for error messages.
_FORMAT_KEYS = {
    "question_v2": lambda item: "expected",
    "qaset": lambda item: "qid" if "qid" in item else "q",
    "rag": lambda item: "question",
}


def detect_format(item: dict[str, Any]) -> EvalFormat | None:
    """The format an item's keys announce, or None."""
    if "expected" in item:
        return "question_v2"
    if "qid" in item or "q" in item:
        return "qaset"
    if "question" in item:
        return "rag"
    return None


def inner(path: Path) -> Path:
    """The name of the content: `questions.json` for `questions.json.gz`."""
    return path.with_suffix("") if path.suffix == ".gz" else path


def _read_items(path: Path) -> tuple[bytes, list[Any], list[str]]:
    """The file's bytes, its items, and where each item is (`item i` or `line n`)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError.from_os_error(path, e) from None
    if path.suffix == ".gz":  # a compressed file (as a run archives a large one): its content
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(str(path), f"not a readable gzip file ({e})") from None
    if inner(path).suffix == ".jsonl":
        items, where = [], []
        for lineno, _, obj in iter_jsonl(io.BytesIO(data), str(path)):
            items.append(obj)
            where.append(f"line {lineno}")
        return data, items, where
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    obj = loads(text, str(path), items=True)
    if not isinstance(obj, list):
        raise InputError(str(path), f"expected a JSON array of items, got {type(obj).__name__}")
    return data, obj, [f"item {i}" for i in range(len(obj))]


_PREDICTION_KEY_SET = frozenset(PREDICTION_KEYS)
_UNION_BRANCHES = {"str", "int", "bool", "float", "list", "dict", "none"}


def _field_of(err: Mapping[str, Any]) -> str:
    """`expected.answer_example.detailed_description[2]`; union branch tags left out."""
    out = ""
    for part in err["loc"]:
        if isinstance(part, str) and (part in _UNION_BRANCHES or part.startswith(("function-", "list["))):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(item)"


def load_eval_file(
    path: str | Path, fmt: EvalFormat | None = None, *, add: Callable[[EvalCase], None] | None = None
) -> LoadedFile:
    """Load and validate one eval-set file (format detected from the keys unless given).

    Each case goes to `add` as it is validated when given (then `cases` is empty), else into the
    returned file's `cases`.
    """
    path = Path(path)
    data, raw, places = _read_items(path)
    jsonl = inner(path).suffix == ".jsonl"
    if not raw:
        raise InputError(str(path), "the eval set is empty")
    where = places.__getitem__
    _reject_predictions(raw, str(path), where)
    detected = fmt is None
    if fmt is None:
        first = raw[0]
        fmt = detect_format(first) if isinstance(first, dict) else None
        if fmt is None:
            raise InputError(
                str(path),
                "cannot tell the format: expected `expected` (question_v2), `qid`/`q` (qaset) "
                "or `question` (rag)",
                where=where(0),
            )
    model = _MODELS[fmt]
    cases: Spool[EvalCase] = Spool()
    add = add or cases.append
    seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InputError(str(path), f"expected an object, got {type(item).__name__}", where=where(i))
        other = detect_format(item)
        try:
            parsed = model.model_validate(item)
        except ValidationError as e:
            err = e.errors()[0]
            hint = ""
            if other and other != fmt:
                hint = f" (this item looks like {other}, the file is {fmt}: one format per file)"
            raise InputError(str(path), err["msg"] + hint, where=where(i), field=_field_of(err)) from None
        if detected and other is not None and other != fmt:
            raise InputError(
                str(path),
                f"this item looks like {other}, the file is {fmt}: one format per file",
                where=where(i),
                field=_FORMAT_KEYS[other](item),
            )
        case = _to_case(parsed, i)
        if (problem := id_problem(case.id)) is not None:
            raise InputError(str(path), problem, where=where(i), field="qid" if fmt == "qaset" else "id")
        if not case.question.strip():
            raise InputError(
                str(path), "must not be empty", where=where(i), field="q" if fmt == "qaset" else "question"
            )
        if case.id in seen:
            raise InputError(
                str(path),
                f"duplicate id {case.id!r} (first at {where(seen[case.id])})",
                where=where(i),
                field="qid" if fmt == "qaset" else "id",
            )
        seen[case.id] = i
        add(case)
    file = EvalFile(
        path=str(path), stem=inner(path).stem, format=fmt, sha1=sha1_bytes(data), n_items=len(raw)
    )
    return LoadedFile(file=file, items=raw, ids=list(seen), cases=cases.seal(), jsonl=jsonl)


def id_problem(case_id: str) -> str | None:
    """Why `case_id` cannot identify a case, or None: it must show, and fit where MLflow keeps it."""
    if not case_id.strip():
        return "must not be empty"
    if len(case_id) > MAX_CASE_ID:
        return (
            f"is {len(case_id)} characters long; at most {MAX_CASE_ID} (MLflow's limit on a trace's metadata "
            "values, where the case id is kept)"
        )
    return None


def _reject_predictions(raw: list[Any], file: str, where: Callable[[int], str]) -> None:
    """A predictions file given as an eval set is an error naming its first prediction key."""
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or _PREDICTION_KEY_SET.isdisjoint(item):
            continue
        key = next((k for k in PREDICTION_KEYS if k in item), None)
        if key is not None:
            raise InputError(
                file,
                "this looks like a predictions file (it carries a model's output), not an eval set",
                where=where(i),
                field=key,
            )


def _to_case(item: _Item, index: int) -> EvalCase:
    if isinstance(item, _QuestionV2Item):
        cid = str(index) if item.id is None else str(item.id)
        return EvalCase(id=cid, question=item.question, expected=item.expected)
    if isinstance(item, _QasetItem):
        gold = Gold(answerable=item.answerable, gold_ids=item.gold_ids, gold_claim=item.gold_claim)
        return EvalCase(id=str(item.qid), question=item.q, gold=gold)
    assert isinstance(item, _RagItem)
    ref = RagReference(
        ground_truth_answer=item.ground_truth_answer,
        ground_truth_contexts=item.ground_truth_contexts,
        graph_entities=item.graph_entities,
        metadata=item.metadata,
    )
    return EvalCase(id=str(item.id), question=item.question, reference=ref)


_SECTIONS = ("expected", "gold", "reference")


def _merged_case(position: int, parts: list[EvalCase]) -> EvalCase:
    """A case given by several files: the first file's, with each later file's sections added."""
    case = parts[0]
    for later in parts[1:]:
        case = case.model_copy(
            update={k: getattr(later, k) for k in _SECTIONS if getattr(later, k) is not None}
        )
    return case


class _Merger:
    """Cases of several files merged by id, in order of first appearance, spooled as they come."""

    def __init__(self, spool: bool = True) -> None:
        self.cases: Spool[EvalCase] = Spool(resolve=_merged_case, in_memory=None if spool else sys.maxsize)
        # id -> (position, first file, question, the sections given so far as bits: 1 expected, 2 gold,
        # 4 reference)
        self.seen: dict[str, tuple[int, str, str, int]] = {}
        self.file = ""  # the file being read

    def add(self, case: EvalCase) -> None:
        sections = (
            (case.expected is not None) | (case.gold is not None) << 1 | (case.reference is not None) << 2
        )
        seen = self.seen.get(case.id)
        if seen is None:
            self.seen[case.id] = (len(self.seen), self.file, case.question, sections)
        else:
            position, origin, question, given = seen
            if question != case.question:
                raise InputError(
                    self.file,
                    f"question differs from {origin} for the same id",
                    where=f"id {case.id!r}",
                    field="question",
                )
            clash = [k for bit, k in enumerate(_SECTIONS) if sections & given & 1 << bit]
            if clash:
                raise InputError(
                    self.file, f"also given by {origin}", where=f"id {case.id!r}", field=clash[0]
                )
            self.seen[case.id] = (position, origin, question, given | sections)
        self.cases.put(self.seen[case.id][0], case)


def load_eval_set(
    paths: list[str | Path],
    name: str | None = None,
    formats: list[EvalFormat | None] | None = None,
    *,
    spool: bool = True,
) -> tuple[EvalSet, list[LoadedFile]]:
    """Load one or more files into one `EvalSet` (merged by id); a large one spooled to disk unless `spool`
    is False (see `ragtrack.core.spool`)."""
    if not paths:
        raise InputError("eval_set.files", "no eval-set file given")
    formats = formats or [None] * len(paths)
    merger = _Merger(spool)
    loaded = []
    for path, fmt in zip(paths, formats, strict=True):
        merger.file = str(path)
        loaded.append(load_eval_file(path, fmt, add=merger.add))
    name = name or loaded[0].file.stem
    cases = merger.cases.seal(len(merger.seen))
    cases.memo = [(case_id, question) for case_id, (_, _, question, _) in merger.seen.items()]
    es = EvalSet(name=name, files=[lf.file for lf in loaded], cases=cases)
    return es, loaded


def _subset_bytes(lf: LoadedFile, ids: set[str]) -> bytes:
    """The file's items whose case id is in `ids`, in file order, with missing ids made explicit."""
    chosen = []
    for item, case_id in zip(lf.items, lf.ids, strict=True):
        if case_id in ids:
            if lf.file.format == "question_v2" and item.get("id") is None:
                item = {"id": case_id, **{k: v for k, v in item.items() if k != "id"}}
            chosen.append(item)
    if lf.jsonl:
        return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in chosen).encode("utf-8")
    return (json.dumps(chosen, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _draw(case_ids: list[str], n: int, seed: int, what: str, field: str) -> list[str]:
    if not 0 < n <= len(case_ids):
        raise InputError(
            what, f"subset size n={n} must be between 1 and the {len(case_ids)} cases", field=field
        )
    picked = sorted(random.Random(seed).sample(range(len(case_ids)), n))
    return [case_ids[i] for i in picked]


def make_subset(src: str | Path, n: int, seed: int) -> tuple[bytes, SubsetInfo]:
    """A reproducible subset of one file: the bytes to write and how they were drawn."""
    lf = load_eval_file(src)
    ids = _draw(lf.ids, n, seed, str(src), "--n")
    info = SubsetInfo(parent_version=lf.file.version, seed=seed, n=n, ids=ids)
    return _subset_bytes(lf, set(ids)), info


def subset_eval_set(es: EvalSet, loaded: list[LoadedFile], n: int, seed: int) -> EvalSet:
    """The dev subset of a loaded eval set, drawn exactly as `ragtrack subset` draws it.

    For a single file the subset's version equals that of the file `ragtrack subset
    --n N --seed S --out <stem>_devN.json` writes.
    """
    ids = _draw([c.id for c in es.cases], n, seed, f"eval set {es.name!r}", "stages.dev_n")
    keep = set(ids)
    files = []
    for lf in loaded:
        data = _subset_bytes(lf, keep)
        files.append(
            EvalFile(
                path=lf.file.path,  # drawn from this file; the subset itself is not written
                stem=f"{lf.file.stem}_dev{n}",
                format=lf.file.format,
                sha1=sha1_bytes(data),
                n_items=sum(1 for case_id in lf.ids if case_id in keep),
                data=data,
            )
        )
    return EvalSet(
        name=f"{es.name}_dev{n}",
        files=files,
        cases=[c for c in es.cases if c.id in keep],
        subset=SubsetInfo(parent_version=es.version, seed=seed, n=n, ids=ids),
    )
