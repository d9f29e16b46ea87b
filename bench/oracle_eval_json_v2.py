"""Plain-Python oracle for the `eval_json_v2` scorer: an independent implementation of SPEC §0, §1 and §6.

    python bench/oracle_eval_json_v2.py --eval-set questions.json --predictions predictions.jsonl [--json]

Reads the same files as `ragtrack score --eval-set E --predictions P --scorer eval_json_v2` (a `question_v2`
eval set, a predictions JSONL) and prints the same aggregate metrics (`eval_json_v2/*`, `predictions/*`,
`gate/dev100`, `gate/all`) in the same layout, or `{"metrics": {...}}` with `--json` (full precision).

Standard library only, written from the scoring specification (docs/SPEC.md §0–§1, not from
`ragtrack/scorers/`), and written to be fast in the plain-Python sense: one read and one `json.loads` per file
or line, every string normalised once per case, bigram sets built lazily and only when containment did not
already decide. It is the speed reference of issue 18, item 4 (`bench/bench_score_process.py`) and a
correctness cross-check of ragtrack's scorer.

Points the SPEC leaves open, decided here: the keyword order interleaves English
tokens and CJK bigrams by position in the NFKC+casefold text; CJK bigrams are taken from that same text; a
later prediction for an already-matched case replaces the earlier one and is counted in
`predictions/duplicates_dropped`; blank JSONL lines are skipped; a JSON `null` answer is an empty answer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCORER = "eval_json_v2"
SUBSCORES = (
    "target_audience",
    "main_topic",
    "sub_topic",
    "detailed_description_f1",
    "original_evidence",
    "predicted_questions_f1",
    "grounding",
)
WEIGHTS = (0.10, 0.10, 0.10, 0.30, 0.20, 0.10, 0.10)
STRING_KEYS = ("target_audience", "main_topic", "sub_topic", "original_evidence")
LIST_KEYS = ("detailed_description", "predicted_questions")
JACCARD_MIN = 0.72
MIN_CONTAINMENT_CHARS = 2
DESCRIPTIONS_CUT, QUESTIONS_CUT = 12, 10
SOURCE_MAP_CUT, REFS_CUT, ANCHORS_CUT = 12, 6, 6
KEYWORDS_CUT, KEYWORDS_FULL, EVIDENCE_FULL_LEN = 30, 8, 40
GATE_DEV100 = ((f"{SCORER}/eval_score_avg", 95.0), (f"{SCORER}/schema_pass_rate", 0.98))

_FENCE = re.compile(r"```[A-Za-z0-9_\-]*(.*)```", re.DOTALL)
# One pass, in order of appearance: an English token, or an unbroken run of CJK ideographs (disjoint classes).
_KEYWORD = re.compile(r"([a-z0-9]+(?:[.\-][a-z0-9]+)*)|([\u3400-\u4dbf\u4e00-\u9fff]+)")
_NFKC = unicodedata.normalize

Case = tuple[str, str, dict[str, Any]]  # (id, question, expected)


class InputError(Exception):
    """Bad input: names the file, the item or line, and the field."""


# ---------------------------------------------------------------- §0 text helpers


def norm(s: str | None) -> str:
    """NFKC, then drop every whitespace character (`str.split` splits on exactly `\\s`), then casefold."""
    if not s:
        return ""
    return "".join(_NFKC("NFKC", s).split()).casefold()


def bigrams(x: str) -> set[str]:
    """Character bigrams of an already normalised string (norm is idempotent on every code point)."""
    if len(x) < 2:
        return {x} if x else set()
    return {x[i : i + 2] for i in range(len(x) - 1)}


def fuzzy_equal_n(x: str, y: str) -> bool:
    """`fuzzy_equal` of two normalised strings."""
    if not x or not y:
        return x == y
    if len(x) <= len(y):
        if len(x) >= MIN_CONTAINMENT_CHARS and x in y:
            return True
    elif len(y) >= MIN_CONTAINMENT_CHARS and y in x:
        return True
    a, b = bigrams(x), bigrams(y)
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) >= JACCARD_MIN  # both non-empty: the union is too


# ---------------------------------------------------------------- §1 subscores


def parse_answer(text: str) -> dict[str, Any] | None:
    """The model output as an object, with one surrounding code fence tolerated; None when it is not one."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        m = _FENCE.fullmatch(text)
        if m is not None:
            text = m.group(1).strip()
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return None
    return obj if isinstance(obj, dict) else None


def schema_ok(got: dict[str, Any]) -> bool:
    """All seven keys with their types; `null` is no value of any type."""
    for key in STRING_KEYS:
        if type(got.get(key)) is not str:
            return False
    for key in LIST_KEYS:
        value = got.get(key)
        if type(value) is not list or not all(type(v) is str for v in value):
            return False
    return type(got.get("source_map")) is list


def max_matching(adjacency: list[list[int]], n_right: int) -> int:
    """Size of a maximum bipartite matching (Kuhn's augmenting paths; the graphs have at most ~10x12
    nodes)."""
    owner = [-1] * n_right

    def augment(u: int, seen: list[bool]) -> bool:
        for v in adjacency[u]:
            if not seen[v]:
                seen[v] = True
                if owner[v] < 0 or augment(owner[v], seen):
                    owner[v] = u
                    return True
        return False

    return sum(1 for u in range(len(adjacency)) if adjacency[u] and augment(u, [False] * n_right))


def list_f1(expected: list[str], got: list[str]) -> float:
    """One-to-one list F1 of normalised items under `fuzzy_equal` (inlined: this is the scorer's inner
    loop)."""
    if not expected or not got:
        return 1.0 if not expected and not got else 0.0
    sets: dict[str, set[str]] = {}  # by string: an expected item often recurs verbatim among the got items
    adjacency: list[list[int]] = []
    for x in expected:
        lx = len(x)
        bx: set[str] | None = None
        row: list[int] = []
        for j, y in enumerate(got):
            ly = len(y)
            if not lx or not ly:
                if lx == ly:
                    row.append(j)
                continue
            if lx <= ly:
                if lx >= MIN_CONTAINMENT_CHARS and x in y:
                    row.append(j)
                    continue
            elif ly >= MIN_CONTAINMENT_CHARS and y in x:
                row.append(j)
                continue
            if bx is None:
                bx = sets.get(x)
                if bx is None:
                    bx = sets[x] = bigrams(x)
            by = sets.get(y)
            if by is None:
                by = sets[y] = bigrams(y)
            inter = len(bx & by)
            if inter / (len(bx) + len(by) - inter) >= JACCARD_MIN:
                row.append(j)
        adjacency.append(row)
    m = max_matching(adjacency, len(got))
    if m == 0:
        return 0.0
    recall, precision = m / len(expected), m / len(got)
    return 2 * precision * recall / (precision + recall)


def evidence_keywords(evidence: str) -> list[str]:
    """Keywords of the expected evidence, in order of first appearance, de-duplicated, first 30."""
    seen: dict[str, None] = {}
    for m in _KEYWORD.finditer(_NFKC("NFKC", evidence).casefold()):
        token, run = m.group(1), m.group(2)
        if token is not None:
            if len(token) >= 2 or token.isdigit():
                seen[token] = None
        elif len(run) == 1:
            seen[run] = None
        else:
            for i in range(len(run) - 1):
                seen[run[i : i + 2]] = None  # re-setting a known key keeps its first position
                if len(seen) == KEYWORDS_CUT:
                    break
        if len(seen) >= KEYWORDS_CUT:
            break
    return list(seen)


def original_evidence(keywords: list[str], got: str) -> float:
    """Keyword hits (at most 8 needed) times the length penalty of the given evidence."""
    if keywords:
        got_n = norm(got)
        hit = sum(1 for k in keywords if k in got_n)
        kw_score = min(1.0, hit / min(KEYWORDS_FULL, len(keywords)))
    else:
        kw_score = 1.0 if got else 0.0
    length = len(got.strip())
    return kw_score * (1.0 if length >= EVIDENCE_FULL_LEN else length / EVIDENCE_FULL_LEN)


def grounding(source_map: list[Any], contexts: Sequence[Any]) -> float:
    """Share of considered refs whose file is a context's source_path and one anchor is in the context
    text."""
    paths: set[str] | None = None
    context_n: str | None = None
    total = ok = 0
    for entry in source_map[:SOURCE_MAP_CUT]:
        refs = entry.get("refs") if type(entry) is dict else None
        if type(refs) is not list:
            continue
        for ref in refs[:REFS_CUT]:
            total += 1
            if type(ref) is not dict:
                continue
            if paths is None:
                paths, context_n = context_paths_and_text(contexts)
            file = ref.get("file")
            if type(file) is not str or file not in paths:
                continue
            anchors = ref.get("anchors")
            if type(anchors) is not list:
                continue
            for a in anchors[:ANCHORS_CUT]:
                if type(a) is str:
                    a_n = norm(a)
                    if a_n and a_n in context_n:  # type: ignore[operator]
                        ok += 1
                        break
    return ok / total if total else 0.0


def context_paths_and_text(contexts: Sequence[Any]) -> tuple[set[str], str]:
    """The contexts' `source_path`s (strings only) and `norm` of their texts joined by newlines."""
    paths: set[str] = set()
    texts: list[str] = []
    for c in contexts:
        if type(c) is str:
            texts.append(c)
        elif type(c) is dict:
            path, text = c.get("source_path"), c.get("text")
            if type(path) is str:
                paths.add(path)
            if type(text) is str:
                texts.append(text)
    return paths, norm("\n".join(texts))


def score_case(expected: dict[str, Any], answer: str, contexts: Sequence[Any]) -> tuple[bool, list[float]]:
    """`(schema_ok, the seven subscores)` of one case."""
    got = parse_answer(answer) if answer else None
    if got is None or not schema_ok(got):
        return False, [0.0] * 7
    ex = expected["answer_example"]
    subs = [1.0 if fuzzy_equal_n(norm(ex[k]), norm(got[k])) else 0.0 for k in STRING_KEYS[:3]]
    subs.append(
        list_f1(
            [norm(s) for s in ex["detailed_description"]],
            [norm(s) for s in got["detailed_description"][:DESCRIPTIONS_CUT]],
        )
    )
    subs.append(original_evidence(evidence_keywords(ex["original_evidence"]), got["original_evidence"]))
    subs.append(
        list_f1(
            [norm(s) for s in ex["predicted_questions"]],
            [norm(s) for s in got["predicted_questions"][:QUESTIONS_CUT]],
        )
    )
    subs.append(grounding(got["source_map"], contexts))
    return True, subs


def total_score(subs: list[float]) -> float:
    """`100 * clamp(sum(w_i * s_i), 0, 1)`."""
    total = sum(w * s for w, s in zip(WEIGHTS, subs, strict=True))
    return 100.0 * min(1.0, max(0.0, total))


# ---------------------------------------------------------------- §6 inputs


def load_question_v2(path: Path) -> tuple[str, list[Case]]:
    """`(eval_set_version, cases)` of a `question_v2` JSON array."""
    data = path.read_bytes()
    version = f"{path.stem}@{hashlib.sha1(data).hexdigest()}"
    try:
        items = json.loads(data)
    except ValueError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    if type(items) is not list or not items:
        raise InputError(f"{path}: a question_v2 eval set is a non-empty JSON array")
    cases: list[Case] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if type(item) is not dict:
            raise InputError(f"{path}: item {i}: not an object")
        cid = item.get("id")
        cid = str(i) if cid is None else _id_text(cid, f"{path}: item {i}", "id")
        if cid in seen:
            raise InputError(f"{path}: item {i}: field id: duplicate id {cid!r}")
        seen.add(cid)
        question, expected = item.get("question"), item.get("expected")
        if type(question) is not str:
            raise InputError(f"{path}: item {i}: field question: not a string")
        check_expected(expected, f"{path}: item {i}")
        cases.append((cid, question, expected))
    return version, cases


def check_expected(expected: Any, where: str) -> None:
    """SPEC §6 contract: `answer_example` has the six fields, typed; `source_map`, when given, is a list."""
    if type(expected) is not dict:
        raise InputError(f"{where}: field expected: not an object")
    ex = expected.get("answer_example")
    if type(ex) is not dict:
        raise InputError(f"{where}: field expected.answer_example: not an object")
    for key in STRING_KEYS:
        if type(ex.get(key)) is not str:
            raise InputError(f"{where}: field expected.answer_example.{key}: missing or not a string")
    for key in LIST_KEYS:
        value = ex.get(key)
        if type(value) is not list or not all(type(v) is str for v in value):
            raise InputError(
                f"{where}: field expected.answer_example.{key}: missing or not a list of strings"
            )
    if type(expected.get("source_map", ())) not in (list, tuple):
        raise InputError(f"{where}: field expected.source_map: not a list")


def _id_text(value: Any, where: str, field: str) -> str:
    """An id as text: strings as they are, integers in decimal; anything else is bad input."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    raise InputError(f"{where}: field {field}: not a string or an integer")


def read_predictions(path: Path, cases: list[Case]) -> tuple[dict[str, dict[str, Any]], int, int]:
    """`(case id -> prediction, n_unmatched, duplicates_dropped)`: by id when a prediction has one, else by
    question."""
    ids = {c[0] for c in cases}
    by_question: dict[str, str] | None = None
    matched: dict[str, dict[str, Any]] = {}
    unmatched = duplicates = 0
    loads = json.loads
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                pred = loads(line)
            except ValueError as e:
                if not line.strip():  # open point: blank lines are skipped
                    continue
                raise InputError(f"{path}: line {lineno}: not JSON: {e}") from None
            if type(pred) is not dict:
                raise InputError(f"{path}: line {lineno}: not an object")
            key = pred.get("id")
            if key is None:
                key = pred.get("qid")
            if key is not None:
                cid: str | None = _id_text(key, f"{path}: line {lineno}", "id")
                if cid not in ids:
                    cid = None
            else:
                q = pred.get("q")
                if q is None:
                    q = pred.get("question")
                if type(q) is not str:
                    raise InputError(f"{path}: line {lineno}: field id: no id, qid, q or question")
                if by_question is None:
                    by_question = {c[1]: c[0] for c in cases}
                cid = by_question.get(q)
            if cid is None:
                unmatched += 1
                continue
            if cid in matched:  # open point: the later prediction replaces the earlier one
                duplicates += 1
            matched[cid] = pred
    return matched, unmatched, duplicates


def prediction_parts(pred: dict[str, Any] | None, where: str) -> tuple[str, Sequence[Any]]:
    """`(answer text, contexts)` of a matched prediction; a missing prediction is an empty answer."""
    if pred is None:
        return "", ()
    answer = pred.get("answer")
    if answer is None:
        answer = ""
    elif type(answer) is not str:
        raise InputError(f"{where}: field answer: not a string")
    for key in ("contexts", "retrieved_contexts", "chunks"):
        contexts = pred.get(key)
        if contexts is not None:
            if type(contexts) is not list:
                raise InputError(f"{where}: field {key}: not a list")
            return answer, contexts
    return answer, ()


# ---------------------------------------------------------------- run


def score_files(eval_set: Path, predictions: Path) -> tuple[str, int, dict[str, float]]:
    """`(eval_set_version, n_cases, metrics)`."""
    version, cases = load_question_v2(eval_set)
    matched, unmatched, duplicates = read_predictions(predictions, cases)
    sums = [0.0] * 7
    score_sum = 0.0
    n_ok = 0
    for cid, _question, expected in cases:
        answer, contexts = prediction_parts(matched.get(cid), f"{predictions}: case {cid!r}")
        ok, subs = score_case(expected, answer, contexts)
        if ok:
            n_ok += 1
            score_sum += total_score(subs)
            for i, s in enumerate(subs):
                sums[i] += s
    n = len(cases)
    metrics: dict[str, float] = {f"{SCORER}/{name}": sums[i] / n for i, name in enumerate(SUBSCORES)}
    metrics[f"{SCORER}/eval_score_avg"] = score_sum / n
    metrics[f"{SCORER}/schema_pass_rate"] = n_ok / n
    metrics[f"{SCORER}/n_cases"] = n
    metrics["predictions/n_cases"] = n
    metrics["predictions/n_missing"] = n - len(matched)
    metrics["predictions/n_unmatched"] = unmatched
    metrics["predictions/duplicates_dropped"] = duplicates
    passed = all(metrics[name] >= bound for name, bound in GATE_DEV100)
    metrics["gate/dev100"] = metrics["gate/all"] = 1 if passed else 0
    return version, n, metrics


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--eval-set", required=True, type=Path, metavar="FILE", help="question_v2 eval set (JSON array)"
    )
    ap.add_argument("--predictions", required=True, type=Path, metavar="FILE", help="predictions JSONL")
    ap.add_argument("--scorer", action="append", choices=[SCORER], help="accepted for ragtrack compatibility")
    ap.add_argument("--json", action="store_true", help='print {"metrics": {...}} at full precision')
    args = ap.parse_args(argv)
    try:
        version, n, metrics = score_files(args.eval_set, args.predictions)
    except (InputError, OSError, UnicodeDecodeError) as e:
        print(f"oracle: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        finite = {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}
        sys.stdout.write(json.dumps({"metrics": finite}) + "\n")
        return 0
    lines = [f"eval set {version}: {n} cases"]
    lines += [f"  {k:<42} {v:.6g}" for k, v in sorted(metrics.items())]
    lines.append(f"  gate dev100: {'pass' if metrics['gate/dev100'] else 'FAIL'}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
