"""Scorer `eval_json_v2`: structured JSON answers against `question_v2` (SPEC §1).

Each string is normalised once per case and compared through its precomputed bigram
set, so list F1 over a dozen items costs set operations, not re-normalisation.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from ragtrack.core.types import CaseScore, ContextChunk, EvalCase, Prediction, ScorerOutput, ScoreValue
from ragtrack.nlp.text import bigrams_normed, evidence_keywords, fuzzy_equal_normed, norm
from ragtrack.scorers.base import (
    Batch,
    CaseColumns,
    CaseTerms,
    Scorer,
    ScorerParams,
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


class _Normed:
    """A string normalised once, with its bigram set."""

    __slots__ = ("text", "grams")

    def __init__(self, raw: str) -> None:
        self.text = norm(raw)
        self.grams = bigrams_normed(self.text)


@register_scorer
class EvalJsonV2Scorer(Scorer):
    """SPEC §1. Scores cases that carry a `question_v2` expectation."""

    name = NAME
    headline = "eval_score_avg"
    version = "1"
    section = "expected"
    Params = Params

    def score(self, batch: Batch) -> ScorerOutput:
        rows: list[CaseScore] = []
        for case, pred in zip(batch.cases, batch.predictions, strict=True):
            if case.expected is not None:
                rows.append(CaseScore(case_id=case.id, values=self.score_case(case, pred)))
        return ScorerOutput(
            info=self.info, cases=rows, metrics=self.aggregate(rows), report_md=self.report(rows)
        )

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """Every metric is a mean over the cases scored; schema_ok and the three label matches are pass/fail."""
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
        subs = dict.fromkeys(SUBSCORES, 0.0)
        if got is not None:
            exp = case.expected.answer_example
            for key in _LABEL_KEYS:
                subs[key] = 1.0 if self._eq(_Normed(getattr(exp, key)), _Normed(got[key])) else 0.0
            subs["detailed_description_f1"] = self._list_f1(
                exp.detailed_description, got["detailed_description"][: p.max_description_items]
            )
            subs["predicted_questions_f1"] = self._list_f1(
                exp.predicted_questions, got["predicted_questions"][: p.max_question_items]
            )
            subs["original_evidence"] = self._evidence(exp.original_evidence, got["original_evidence"])
            subs["grounding"] = self._grounding(got["source_map"], pred.contexts)
        total = math.fsum(p.weights.get(k, 0.0) * subs[k] for k in SUBSCORES)
        out: dict[str, ScoreValue] = {
            f"{NAME}/score": 100.0 * min(1.0, max(0.0, total)),
            f"{NAME}/schema_ok": got is not None,
        }
        out.update({f"{NAME}/{k}": v for k, v in subs.items()})
        out[f"{NAME}/error"] = error
        return out

    def _eq(self, a: _Normed, b: _Normed) -> bool:
        return fuzzy_equal_normed(
            a.text,
            b.text,
            a.grams,
            b.grams,
            threshold=self.p.jaccard_threshold,
            min_containment_chars=self.p.min_containment_chars,
        )

    def _list_f1(self, expected: Sequence[str], got: Sequence[str]) -> float:
        """F1 of a maximum one-to-one matching between expected and got items."""
        if not expected or not got:
            return 1.0 if not expected and not got else 0.0
        e = [_Normed(x) for x in expected]
        g = [_Normed(x) for x in got]
        adj = [[j for j, gj in enumerate(g) if self._eq(ei, gj)] for ei in e]
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
        p = self.p
        paths = {c.source_path for c in contexts if c.source_path is not None}
        context_text = norm("\n".join(c.text for c in contexts))
        total = ok = 0
        for entry in source_map[: p.max_source_map_entries]:
            refs = entry.get("refs") if isinstance(entry, dict) else None
            if not isinstance(refs, list):
                continue
            for ref in refs[: p.max_refs_per_entry]:
                total += 1
                if (
                    not isinstance(ref, dict)
                    or not isinstance(ref.get("file"), str)
                    or ref["file"] not in paths
                ):
                    continue
                anchors = ref.get("anchors")
                if not isinstance(anchors, list):
                    continue
                for a in anchors[: p.max_anchors_per_ref]:
                    if isinstance(a, str) and (na := norm(a)) and na in context_text:
                        ok += 1
                        break
        return ok / total if total else 0.0

    # -------------------------------------------------------------- the batch

    def aggregate(self, rows: Sequence[CaseScore]) -> dict[str, float]:
        def col(key: str) -> list[float]:
            return [float(r.values[f"{NAME}/{key}"]) for r in rows]  # type: ignore[arg-type]

        metrics = {
            f"{NAME}/eval_score_avg": mean_or_nan(col("score")),
            f"{NAME}/schema_pass_rate": mean_or_nan(col("schema_ok")),
        }
        metrics.update({f"{NAME}/{k}": mean_or_nan(col(k)) for k in SUBSCORES})
        metrics[f"{NAME}/n_cases"] = float(len(rows))
        return metrics

    def report(self, rows: Sequence[CaseScore], worst: int = 10) -> str:
        m = self.aggregate(rows)
        lines = [
            f"## {NAME}",
            "",
            f"- Cases scored: **{len(rows)}**",
            f"- Mean score: **{m[f'{NAME}/eval_score_avg']:.2f}** / 100",
            f"- Schema pass rate: **{100 * m[f'{NAME}/schema_pass_rate']:.1f}%**",
            "",
            "| subscore | mean |",
            "|---|---|",
            *(f"| {k} | {m[f'{NAME}/{k}']:.4f} |" for k in SUBSCORES),
        ]
        ranked = sorted(rows, key=lambda r: (r.values[f"{NAME}/score"], r.case_id))[:worst]
        if ranked:
            lines += [
                "",
                f"### Lowest {len(ranked)} cases",
                "",
                "Reason: the parse error, else each subscore that lost points, with its value and the points it cost.",
                "",
                "| id | score | schema_ok | reason |",
                "|---|---|---|---|",
            ]
            for r in ranked:
                v = r.values
                reason = self._reason(v).replace("|", "\\|")[:200]
                lines.append(
                    f"| {r.case_id} | {v[f'{NAME}/score']:.2f} | {str(v[f'{NAME}/schema_ok']).lower()} | {reason} |"
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

    def augment(i: int, seen: list[bool]) -> bool:
        for j in adj[i]:
            if not seen[j]:
                seen[j] = True
                if match_right[j] == -1 or augment(match_right[j], seen):
                    match_right[j] = i
                    return True
        return False

    return sum(1 for i in range(len(adj)) if adj[i] and augment(i, [False] * n_right))
