"""Scorer `eval_json_v2`: structured JSON answers against `question_v2` (SPEC §1).

Each string is normalised once per comparison list, and its bigram set is built only when
containment did not already decide fuzzy equality (once per string and case), so list F1
over a dozen items costs a few substring tests and set operations. `_Fuzzy` is a faster
equivalent of `ragtrack.nlp.text.fuzzy_equal_normed`; the tests prove them equal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from ragtrack.core.types import ContextChunk, EvalCase, Prediction, ScorerOutput, ScoreValue
from ragtrack.nlp.text import evidence_keywords, norm
from ragtrack.scorers.base import (
    Batch,
    CaseColumns,
    CaseTerms,
    Scorer,
    ScorerParams,
    ScoreTable,
    mean_or_nan,
    mean_terms,
    register_scorer,
)

__all__ = ["EvalJsonV2Scorer", "SUBSCORES", "parse_answer"]

NAME = "eval_json_v2"
SUBSCORES = (
    "target_audience",
    "main_topic",
    "sub_topic",
    "detailed_description_f1",
    "original_evidence",
    "predicted_questions_f1",
    "grounding",
)
_STR_KEYS = ("target_audience", "main_topic", "sub_topic", "original_evidence")
_STR_LIST_KEYS = ("detailed_description", "predicted_questions")
_LABEL_KEYS = ("target_audience", "main_topic", "sub_topic")  # subscores that are 1 or 0 (fuzzy_equal)
_FENCE = re.compile(r"\A```[A-Za-z0-9_\-]*(.*)```\Z", re.DOTALL)
_SCORE, _SCHEMA_OK, _ERROR = f"{NAME}/score", f"{NAME}/schema_ok", f"{NAME}/error"
_SUB_COLUMNS = tuple(f"{NAME}/{k}" for k in SUBSCORES)  # a case's columns: score, schema_ok, these, error


class Params(ScorerParams):
    """Every number of SPEC §1 that a user may want to tune; all logged."""

    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "target_audience": 0.10,
            "main_topic": 0.10,
            "sub_topic": 0.10,
            "detailed_description_f1": 0.30,
            "original_evidence": 0.20,
            "predicted_questions_f1": 0.10,
            "grounding": 0.10,
        }
    )
    jaccard_threshold: float = 0.72
    min_containment_chars: int = 2
    max_description_items: int = 12
    max_question_items: int = 10
    max_keywords: int = 30
    keyword_hits_for_full: int = 8
    min_evidence_chars: int = 40
    max_source_map_entries: int = 12
    max_refs_per_entry: int = 6
    max_anchors_per_ref: int = 6

    @field_validator("weights")
    @classmethod
    def _known_subscores(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(SUBSCORES))
        if unknown:
            raise ValueError(f"unknown subscore(s) {unknown}; known: {list(SUBSCORES)}")
        return v


def parse_answer(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a raw answer into the answer object, or `(None, reason)`.

    Surrounding whitespace is stripped and one Markdown code fence with an optional
    language tag is tolerated; prose around the JSON is not.
    """
    s = text.strip()
    if not s:
        return None, "empty answer"
    m = _FENCE.match(s) if len(s) >= 6 else None
    if m:
        s = m.group(1).strip()
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        return None, f"not JSON: {e}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object: {type(obj).__name__}"
    for key in _STR_KEYS:
        if key not in obj:
            return None, f"missing key: {key}"
        if not isinstance(obj[key], str):
            return None, f"{key}: expected string, got {_json_type(obj[key])}"
    for key in _STR_LIST_KEYS:
        if key not in obj:
            return None, f"missing key: {key}"
        v = obj[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            return None, f"{key}: expected list of strings, got {_json_type(v)}"
    if "source_map" not in obj:
        return None, "missing key: source_map"
    if not isinstance(obj["source_map"], list):
        return None, f"source_map: expected list, got {_json_type(obj['source_map'])}"
    return obj, None


def _json_type(v: Any, top: bool = True) -> str:
    """JSON type name for error messages; a list names its items' types (one level deep)."""
    if v is None:
        return "null"
    if isinstance(v, list):
        kinds = sorted({_json_type(x, False) for x in v}) if top else []
        return f"list of {'/'.join(kinds)}" if kinds else "list"
    return {bool: "boolean", str: "string", dict: "object", int: "number", float: "number"}.get(
        type(v), type(v).__name__
    )


def _bigrams(x: str) -> set[Any]:
    """A stand-in for `bigrams_normed(x)`, with the same sizes of intersections and unions.

    Each bigram is the pair of its characters (equal pairs are equal bigrams); a string shorter
    than 2 is itself, as there, and no pair equals it.
    """
    if len(x) < 2:
        return {x} if x else set()
    return set(zip(x, x[1:], strict=False))  # neighbours: one pair fewer than characters


class _Fuzzy:
    """`fuzzy_equal_normed` with the scorer's threshold and containment length, on normalised strings.

    A string's bigram set is built only when containment did not decide, and kept (one case's strings).
    """

    __slots__ = ("threshold", "min_chars", "grams")

    def __init__(self, threshold: float, min_chars: int) -> None:
        self.threshold = threshold
        self.min_chars = min_chars
        self.grams: dict[str, set[Any]] = {}

    def equal(self, x: str, y: str) -> bool:
        """SPEC §0 fuzzy equality of normalised `x` and `y`: `contained`, else bigram Jaccard >= threshold."""
        if self.contained(x, y):
            return True
        return bool(x and y) and self.similar(x, y)

    def contained(self, x: str, y: str) -> bool:
        """Fuzzy equality without bigrams: both empty, or the shorter side is inside the longer.

        `min(len) >= min_chars and (x in y or y in x)` is tested on the shorter side only: the
        longer string is never inside the shorter one, and at equal lengths either test is `x == y`.
        """
        if not x or not y:
            return not x and not y
        if len(x) <= len(y):
            return len(x) >= self.min_chars and x in y
        return len(y) >= self.min_chars and y in x

    def similar(self, x: str, y: str) -> bool:
        """Bigram Jaccard of two non-empty normalised strings (`|A ∩ B| / |A ∪ B|`) >= threshold.

        `|A ∩ B| <= min(|A|, |B|)` and `|A ∪ B| >= max(|A|, |B|)`, and rounded division is monotonic:
        when `min / max` is below the threshold, so is the Jaccard, and the intersection is not needed.
        """
        grams = self.grams
        a = grams.get(x)
        if a is None:
            a = grams[x] = _bigrams(x)
        b = grams.get(y)
        if b is None:
            b = grams[y] = _bigrams(y)
        na, nb = len(a), len(b)
        if (na / nb if na <= nb else nb / na) < self.threshold:
            return False
        inter = len(a & b)
        return inter / (na + nb - inter) >= self.threshold


_Params = Params  # the type of `EvalJsonV2Scorer.p` (in its body, `Params` is the class attribute)


@register_scorer
class EvalJsonV2Scorer(Scorer):
    """SPEC §1. Scores cases that carry a `question_v2` expectation."""

    name = NAME
    headline = "eval_score_avg"
    version = "1"
    section = "expected"
    Params = Params
    p: _Params

    chunked = True

    def begin(self) -> ScoreTable:
        return ScoreTable()

    def add(self, state: ScoreTable, batch: Batch) -> None:
        for case, pred in zip(batch.cases, batch.predictions, strict=True):
            if case.expected is not None:
                state.add(case.id, self.score_case(case, pred))

    def finish(self, state: ScoreTable) -> ScorerOutput:
        metrics = self.aggregate(state)
        return state.output(self.info, metrics, self._report(state, metrics))

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """Every metric is a mean over the cases scored; schema_ok and the three label matches are
        pass/fail."""
        return [
            mean_terms(f"{NAME}/eval_score_avg", columns[f"{NAME}/score"]),
            mean_terms(f"{NAME}/schema_pass_rate", columns[f"{NAME}/schema_ok"], binary=True),
            *(mean_terms(f"{NAME}/{k}", columns[f"{NAME}/{k}"], binary=k in _LABEL_KEYS) for k in SUBSCORES),
        ]

    # -------------------------------------------------------------- one case

    def score_case(self, case: EvalCase, pred: Prediction) -> dict[str, ScoreValue]:
        p = self.p
        assert case.expected is not None
        got, error = parse_answer(pred.answer)
        subs = [0.0] * len(SUBSCORES)
        if got is not None:
            exp = case.expected.answer_example
            fuzzy = _Fuzzy(p.jaccard_threshold, p.min_containment_chars)  # this case's bigram sets
            for i, key in enumerate(_LABEL_KEYS):
                subs[i] = 1.0 if fuzzy.equal(norm(getattr(exp, key)), norm(got[key])) else 0.0
            descriptions = got["detailed_description"][: p.max_description_items]
            subs[3] = self._list_f1(fuzzy, exp.detailed_description, descriptions)
            subs[4] = self._evidence(exp.original_evidence, got["original_evidence"])
            questions = got["predicted_questions"][: p.max_question_items]
            subs[5] = self._list_f1(fuzzy, exp.predicted_questions, questions)
            subs[6] = self._grounding(got["source_map"], pred.contexts)
        weights = p.weights
        total = math.fsum(weights.get(k, 0.0) * s for k, s in zip(SUBSCORES, subs, strict=True))
        out: dict[str, ScoreValue] = {_SCORE: 100.0 * min(1.0, max(0.0, total)), _SCHEMA_OK: got is not None}
        out.update(zip(_SUB_COLUMNS, subs, strict=True))
        out[_ERROR] = error
        return out

    @staticmethod
    def _list_f1(fuzzy: _Fuzzy, expected: Sequence[str], got: Sequence[str]) -> float:
        """F1 of a maximum one-to-one matching between expected and got items.

        The matching is first sought among the pairs that containment alone makes equal: when that
        already matches every item of the shorter list, no larger matching exists and no bigram set is
        needed. Otherwise it is sought again among all fuzzy-equal pairs (`_Fuzzy.equal`).
        """
        if not expected or not got:
            return 1.0 if not expected and not got else 0.0
        e = [norm(x) for x in expected]
        g = [norm(x) for x in got]
        contained = fuzzy.contained
        adj = [[j for j, y in enumerate(g) if contained(x, y)] for x in e]
        m = _max_matching(adj, len(g))
        if m < min(len(e), len(g)):  # add the pairs that are equal by their bigrams (both non-empty)
            similar = fuzzy.similar
            adj = [
                [j for j, y in enumerate(g) if j in row or (x and y and similar(x, y))]
                for x, row in zip(e, adj, strict=True)
            ]
            m = _max_matching(adj, len(g))
        if m == 0:
            return 0.0
        recall, precision = m / len(e), m / len(g)
        return 2 * precision * recall / (precision + recall)

    def _evidence(self, expected: str, got: str) -> float:
        p = self.p
        keywords = evidence_keywords(expected, p.max_keywords)
        stripped = got.strip()
        if keywords:
            target = norm(got)
            hit = sum(1 for k in keywords if k in target)
            kw_score = min(1.0, hit / min(p.keyword_hits_for_full, len(keywords)))
        else:
            kw_score = 1.0 if stripped else 0.0
        n = len(stripped)
        length_pen = 1.0 if n >= p.min_evidence_chars else n / p.min_evidence_chars
        return kw_score * length_pen

    def _grounding(self, source_map: list[Any], contexts: Sequence[ContextChunk]) -> float:
        """Share of the refs considered whose file is a context's `source_path` and one of whose
        first anchors is in the normalised context text (both computed only when a ref needs them)."""
        p = self.p
        paths: set[str] | None = None
        context_text: str | None = None
        total = ok = 0
        for entry in source_map[: p.max_source_map_entries]:
            refs = entry.get("refs") if isinstance(entry, dict) else None
            if not isinstance(refs, list):
                continue
            for ref in refs[: p.max_refs_per_entry]:
                total += 1
                if not isinstance(ref, dict) or not isinstance(file := ref.get("file"), str):
                    continue
                if paths is None:
                    paths = {c.source_path for c in contexts if c.source_path is not None}
                anchors = ref.get("anchors")
                if file not in paths or not isinstance(anchors, list):
                    continue
                if context_text is None:
                    context_text = norm("\n".join(c.text for c in contexts))
                for a in anchors[: p.max_anchors_per_ref]:
                    if isinstance(a, str) and (na := norm(a)) and na in context_text:
                        ok += 1
                        break
        return ok / total if total else 0.0

    # -------------------------------------------------------------- the batch

    def aggregate(self, table: ScoreTable) -> dict[str, float]:
        def mean(column: str) -> float:
            return mean_or_nan(list(map(float, table.column(column))))  # type: ignore[arg-type]

        metrics = {f"{NAME}/eval_score_avg": mean(_SCORE), f"{NAME}/schema_pass_rate": mean(_SCHEMA_OK)}
        metrics.update(
            {f"{NAME}/{k}": mean(column) for k, column in zip(SUBSCORES, _SUB_COLUMNS, strict=True)}
        )
        metrics[f"{NAME}/n_cases"] = float(len(table))
        return metrics

    def report(self, table: ScoreTable, worst: int = 10) -> str:
        return self._report(table, self.aggregate(table), worst)

    def _report(self, table: ScoreTable, m: dict[str, float], worst: int = 10) -> str:
        """`report` with the batch's metrics (`aggregate(table)`) already computed."""
        lines = [
            f"## {NAME}",
            "",
            f"- Cases scored: **{len(table)}**",
            f"- Mean score: **{m[f'{NAME}/eval_score_avg']:.2f}** / 100",
            f"- Schema pass rate: **{100 * m[f'{NAME}/schema_pass_rate']:.1f}%**",
            "",
            "| subscore | mean |",
            "|---|---|",
            *(f"| {k} | {m[f'{NAME}/{k}']:.4f} |" for k in SUBSCORES),
        ]
        scores, ids = table.column(_SCORE), table.ids
        ranked = sorted(range(len(ids)), key=lambda i: (scores[i], ids[i]))[:worst]
        if ranked:
            lines += [
                "",
                f"### Lowest {len(ranked)} cases",
                "",
                "Reason: the parse error, else each subscore that lost points, with its value and the points "
                "it cost.",
                "",
                "| id | score | schema_ok | reason |",
                "|---|---|---|---|",
            ]
            for i in ranked:
                v = table.row(i)
                reason = self._reason(v).replace("|", "\\|")[:200]
                lines.append(
                    f"| {ids[i]} | {v[f'{NAME}/score']:.2f} | "
                    f"{str(v[f'{NAME}/schema_ok']).lower()} | {reason} |"
                )
        return "\n".join(lines) + "\n"

    def _reason(self, values: dict[str, ScoreValue]) -> str:
        """Why a case lost points: its parse error, or its subscores below 1 by points lost."""
        if values[f"{NAME}/error"]:
            return f"schema: {values[f'{NAME}/error']}"
        lost = []
        for k in SUBSCORES:
            v = float(values[f"{NAME}/{k}"])  # type: ignore[arg-type]
            cost = 100 * self.p.weights.get(k, 0.0) * (1 - v)
            if cost > 0:
                lost.append((cost, f"{k} {v:.2g} (-{cost:.1f})"))
        return ", ".join(text for _, text in sorted(lost, key=lambda x: -x[0])) or "-"


def _max_matching(adj: list[list[int]], n_right: int) -> int:
    """Size of a maximum bipartite matching (Kuhn's augmenting paths; lists are short)."""
    match_right = [-1] * n_right
    return sum(1 for i in range(len(adj)) if adj[i] and _augment(adj, i, match_right, [False] * n_right))


def _augment(adj: list[list[int]], i: int, match_right: list[int], seen: list[bool]) -> bool:
    """Kuhn's step: match left node `i`, re-matching along an augmenting path.

    A module function, not a closure: a recursive closure is a reference cycle left per call.
    """
    for j in adj[i]:
        if not seen[j]:
            seen[j] = True
            if match_right[j] == -1 or _augment(adj, match_right[j], match_right, seen):
                match_right[j] = i
                return True
    return False
