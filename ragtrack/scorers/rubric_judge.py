"""Scorer `rubric_judge`: an LLM judge scores each answer 1–10 on accuracy, completeness and clarity
(SPEC §5).

The judge prompt (`prompts/rubric_judge_v1.md`, or `prompt_path`) is seed 001's
chain-of-thought template: analysis first, then one JSON object; with few-shot
calibration examples (a hallucinated answer marked 2) against score inflation, and a
pure-LLM mode when the prediction carries no retrieved chunks (the documents block then
reads `無參考文獻 (Pure LLM Mode)`). Only the first `top_k` chunks are shown. Question,
documents and the answer under test go in as delimited data (`<question>`,
`<documents>`, `<answer_under_test>`); a delimiter tag inside the data is defused
(its angle brackets become full-width), so an answer cannot close its block and speak
as the prompt, and the prompt tells the judge that the blocks are data, not instructions.

Parsing a reply: strict JSON first (the whole reply); else a rescue: a fenced block or
the span from the first `{` to the last `}` as JSON, then `"accuracy": 8`-style regexes.
A reply still without three scores in 1..10 (empty, prose only, out of range) is a
counted failure: every dimension gets `failure_score`, the case is flagged
`judge_parse_failed`, and the run fails when the failure rate exceeds
`max_parse_failure_rate`. `weighted_score = 0.5·accuracy + 0.3·completeness + 0.2·clarity`;
a case passes when `accuracy >= pass_threshold`.

Judge calls go through `ragtrack.clients.llm` and the generation cache; the prompt file's sha256
is logged with the judge's model id (`scorer/rubric_judge/prompt_sha256`, `…/model`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragtrack.clients.gencache import open_cache
from ragtrack.clients.llm import LLMClient, LLMSettings, Message
from ragtrack.core.errors import InputError
from ragtrack.core.registry import reaching
from ragtrack.core.types import ComponentInfo, ScorerOutput, ScoreValue
from ragtrack.inputs.prompts import defuse, fill, format_context, load_prompt
from ragtrack.scorers.base import Batch, Scorer, ScoreTable, mean_or_nan, register_scorer

__all__ = ["DEFAULT_PROMPT", "JudgeParseError", "RubricJudgeScorer", "Verdict", "as_data", "parse_verdict"]

NAME = "rubric_judge"
DEFAULT_PROMPT = Path(__file__).resolve().parent / "prompts" / "rubric_judge_v1.md"
PLACEHOLDERS = ("question", "context", "answer")
PURE_LLM_CONTEXT = "無參考文獻 (Pure LLM Mode)"  # the seed's documents text when there are none
WEIGHTS = {"accuracy": 0.5, "completeness": 0.3, "clarity": 0.2}
_TEXTS = ("analysis", "reason", "suggestion")
_TAGS = ("question", "documents", "answer_under_test")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*(.*?)```", re.DOTALL)


class JudgeParseError(RuntimeError):
    """Too many judge replies could not be read: the judge's scores are not to be trusted."""


class Params(LLMSettings):
    top_k: int = Field(5, ge=1)
    pass_threshold: float = Field(7.0, ge=1, le=10)
    max_parse_failure_rate: float = Field(0.1, ge=0, le=1)
    failure_score: float = Field(1.0, ge=1, le=10)
    prompt_path: str | None = reaching("path", None)  # None: the shipped prompts/rubric_judge_v1.md


_Params = Params  # the type of `RubricJudgeScorer.p` (in its body, `Params` is the class attribute)


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    accuracy: float
    completeness: float
    clarity: float
    analysis: str = ""
    reason: str = ""
    suggestion: str = ""

    @property
    def weighted_score(self) -> float:
        return (
            WEIGHTS["accuracy"] * self.accuracy
            + WEIGHTS["completeness"] * self.completeness
            + WEIGHTS["clarity"] * self.clarity
        )


def as_data(text: str) -> str:
    """`text` with every delimiter tag of the judge prompt defused (`<answer_under_test>` →
    `＜answer_under_test＞`)."""
    return defuse(text, _TAGS)


def _score(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _verdict(obj: Any) -> Verdict | str:
    """A verdict from a parsed object, or what is wrong with it."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    # floats here and strings in `texts`, typed Any: `Verdict(**scores, **texts)` takes each by name
    scores: dict[str, Any] = {}
    for dim in WEIGHTS:
        v = _score(obj.get(dim))
        if v is None or not math.isfinite(v):
            return f"{dim}: missing or not a number"
        if not 1 <= v <= 10:
            return f"{dim}: {v:g} is outside 1..10"
        scores[dim] = v
    texts: dict[str, Any] = {k: str(obj[k]) for k in _TEXTS if obj.get(k) is not None}
    return Verdict(**scores, **texts)


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _regex_rescue(text: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for dim in WEIGHTS:
        m = re.search(rf"""["']?{dim}["']?\s*[:：=]\s*["']?(-?\d+(?:\.\d+)?)""", text, re.IGNORECASE)
        if m:
            found[dim] = float(m.group(1))
    for key in _TEXTS:
        m = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if m:
            found[key] = _json_object(f'"{m.group(1)}"') or m.group(1)
    return found


def parse_verdict(text: str) -> tuple[Verdict | None, str, str | None]:
    """`(verdict, how, problem)`: `how` is `json` (strict), `rescued` or `failed` (then `problem` says
    why)."""
    if not text.strip():
        return None, "failed", "empty reply"
    strict = _json_object(text.strip())
    if strict is not None:
        v = _verdict(strict)
        return (v, "json", None) if isinstance(v, Verdict) else (None, "failed", v)
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    problem = "no JSON object with accuracy, completeness and clarity"
    for candidate in candidates:
        obj = _json_object(candidate.strip())
        if obj is not None:
            v = _verdict(obj)
            if isinstance(v, Verdict):
                return v, "rescued", None
            problem = v
    rescued = _regex_rescue(text)
    if rescued:
        v = _verdict(rescued)
        if isinstance(v, Verdict):
            return v, "rescued", None
        problem = v
    return None, "failed", problem


@register_scorer
class RubricJudgeScorer(Scorer):
    name = NAME
    headline = "weighted_score"
    version = "1"
    Params = Params
    p: _Params

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        path = Path(self.p.prompt_path) if self.p.prompt_path else DEFAULT_PROMPT
        self.prompt = load_prompt(
            path, path.stem, placeholders=PLACEHOLDERS, field=f"scorers.{NAME}.prompt_path"
        )
        if not re.search(r"\{\{\s*answer\s*\}\}", self.prompt.text):
            raise InputError(
                str(path),
                "the judge prompt has no {{answer}} placeholder: the answer would never reach the judge",
                field=f"scorers.{NAME}.prompt_path",
            )

    @property
    def info(self) -> ComponentInfo:
        """Parameters plus the judge prompt's path and sha256 (logged beside the judge's model id)."""
        params = {**self.p.model_dump(), "prompt_path": self.prompt.path, "prompt_sha256": self.prompt.sha256}
        return ComponentInfo(name=self.name, version=self.version, params=params)

    def render(self, question: str, answer: str, contexts: list[Any]) -> str:
        """The judge prompt for one case: every value as defused data, top-k chunks or pure-LLM mode."""
        chunks = contexts[: self.p.top_k]
        context = format_context(chunks) if chunks else PURE_LLM_CONTEXT
        return fill(
            self.prompt.text,
            {"question": as_data(question), "context": as_data(context), "answer": as_data(answer)},
        )

    def score(self, batch: Batch) -> ScorerOutput:
        conversations = [
            [Message(role="user", content=self.render(c.question, p.answer, p.contexts))]
            for c, p in zip(batch.cases, batch.predictions, strict=True)
        ]
        cache = open_cache(self.p.cache_dir)
        client = LLMClient(self.p)
        try:
            replies, stats = client.complete_all(conversations, cache=cache, desc=f"judge {self.p.model}")
        finally:
            cache.close()
        table = ScoreTable()
        for c, p, r in zip(batch.cases, batch.predictions, replies, strict=True):
            table.add(c.id, self.score_reply(r.text, bool(p.contexts)))
        metrics = self.aggregate(table)
        metrics.update(stats.metrics(NAME))
        rate, n = metrics[f"{NAME}/parse_failure_rate"], len(table)
        if n and rate > self.p.max_parse_failure_rate:
            failed = [table.ids[i] for i in self._failed(table)]
            raise JudgeParseError(
                f"{NAME}: {len(failed)} of {n} judge replies ({rate:.0%}) could not be parsed, above "
                f"max_parse_failure_rate {self.p.max_parse_failure_rate:g} (judge {self.p.model!r} at "
                f"{client.endpoint}; "
                f"cases {', '.join(failed[:10])}{' …' if len(failed) > 10 else ''})"
            )
        return table.output(self.info, metrics, self.report(table, metrics, client.endpoint))

    def score_reply(self, reply: str, has_documents: bool) -> dict[str, ScoreValue]:
        """One case's columns from the judge's reply."""
        verdict, how, problem = parse_verdict(reply)
        if verdict is None:
            low = self.p.failure_score
            verdict = Verdict(accuracy=low, completeness=low, clarity=low)
        values: dict[str, ScoreValue] = {
            f"{NAME}/accuracy": verdict.accuracy,
            f"{NAME}/completeness": verdict.completeness,
            f"{NAME}/clarity": verdict.clarity,
            f"{NAME}/weighted_score": verdict.weighted_score,
            f"{NAME}/is_passing": verdict.accuracy >= self.p.pass_threshold,
            f"{NAME}/judge_parse_failed": how == "failed",
            f"{NAME}/judge_parse": how,
            f"{NAME}/parse_error": problem,
            f"{NAME}/mode": "documents" if has_documents else "pure_llm",
            f"{NAME}/reason": verdict.reason,
            f"{NAME}/suggestion": verdict.suggestion,
            f"{NAME}/analysis": verdict.analysis,
        }
        return values

    def aggregate(self, table: ScoreTable) -> dict[str, float]:
        def column(key: str) -> list[float]:
            return [float(x) for x in table.column(f"{NAME}/{key}")]  # type: ignore[arg-type]

        metrics = {f"{NAME}/{k}": mean_or_nan(column(k)) for k in (*WEIGHTS, "weighted_score")}
        metrics[f"{NAME}/pass_rate"] = mean_or_nan(column("is_passing"))
        metrics[f"{NAME}/parse_failure_rate"] = mean_or_nan(column("judge_parse_failed"))
        metrics[f"{NAME}/n_parse_failed"] = math.fsum(column("judge_parse_failed"))
        metrics[f"{NAME}/n_judged"] = float(len(table))
        return metrics

    @staticmethod
    def _failed(table: ScoreTable) -> list[int]:
        """The positions of the cases whose judge reply could not be parsed."""
        return [i for i, x in enumerate(table.column(f"{NAME}/judge_parse_failed")) if x]

    def report(self, table: ScoreTable, metrics: dict[str, float], endpoint: str) -> str:
        failed = self._failed(table)
        lines = [
            f"## {NAME}",
            "",
            f"Judge `{self.p.model}` at `{endpoint}`, prompt `{Path(self.prompt.path).name}` "
            f"(sha256 `{self.prompt.sha256[:12]}…`).",
            f"Weighted score {metrics[f'{NAME}/weighted_score']:.3g}, "
            f"pass rate {metrics[f'{NAME}/pass_rate']:.3g}, "
            f"{len(failed)} unparsable judge repl{'y' if len(failed) == 1 else 'ies'} "
            f"(scored {self.p.failure_score:g}).",
        ]
        errors = table.column(f"{NAME}/parse_error")
        for i in failed[:20]:
            lines.append(f"- `{table.ids[i]}`: {errors[i]}")
        return "\n".join(lines) + "\n"
