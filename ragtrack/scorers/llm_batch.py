"""Asking an LLM for a scorer's decisions over a whole batch: planned, sent concurrently, then looked up.

A scorer's per-case code asks its questions through `LlmBatch.ask(prompt, read, stand_in)`.
`prefetch(evaluate)` runs that code (`evaluate`: every case of the batch) in planning
passes: a question not answered yet is recorded and gets its `stand_in`, so the code goes
on and records what it will ask next; after each pass every recorded question is sent at
once through `ragtrack.clients.llm` (at most `concurrency` requests in flight) and the generation
cache. Passes repeat until one records nothing new: a question that depends on an earlier
answer (a support verdict needs the statements) goes out in the next pass. Then the code
runs for real and every answer is looked up (a question that was not planned is sent on
its own).

A question without a usable answer (its call failed for good, or `read` rejected the
reply with `ReplyError`) is a failure: `ask` raises `JudgeFailure` with the reason, which
the scorer turns into NaN or the seed's fallback, and it is counted. At most
`max_failure_rate` of a batch's questions may fail: the client stops at the first failed
call beyond that share (an `LLMError` naming endpoint and model), and `check` raises
`LlmFailureRateError` when the failures, unreadable replies included, exceed it. A
401/403 stops the batch at once.

Reading a reply (`read_json`): strict JSON of the whole reply first, then each fenced
block, then the span from the first `{` to the last `}` and from the first `[` to the last
`]`; the first candidate the reader accepts wins, else the last problem found is the
failure's reason.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field

from ragtrack.clients.gencache import open_cache
from ragtrack.clients.llm import BatchStats, LLMClient, LLMError, LLMSettings, Message
from ragtrack.core.errors import InputError
from ragtrack.core.registry import reaching
from ragtrack.core.types import ScoreValue
from ragtrack.inputs.prompts import Prompt, load_prompt
from ragtrack.scorers.judge import JudgeFailure

__all__ = [
    "PROMPT_DIR",
    "JudgeLLMSettings",
    "LlmBatch",
    "LlmFailureRateError",
    "ReplyError",
    "llm_info",
    "load_prompts",
    "read_json",
]

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
T = TypeVar("T")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*(.*?)```", re.DOTALL)


class JudgeLLMSettings(LLMSettings):
    """An LLM backend's server, decoding and limits: the `llm` block of `scorers.rag` / `scorers.earag`."""

    prompt_dir: str | None = reaching(
        "path", None
    )  # folder holding the backend's prompt files; None: the shipped ones
    max_failure_rate: float = Field(0.1, ge=0, le=1)


class ReplyError(ValueError):
    """What is wrong with a reply (empty, no JSON, the wrong shape, a value out of range)."""


class LlmFailureRateError(RuntimeError):
    """Too many of a batch's LLM questions got no usable answer: the scores would not be the judge's."""


def read_json(text: str, accept: Callable[[Any], T]) -> T:
    """The first JSON candidate of `text` (see the module doc) that `accept` takes; else `ReplyError`."""
    if not text.strip():
        raise ReplyError("empty reply")
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for opening, closing in ("{}", "[]"):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    problem = "no JSON in the reply"
    for candidate in candidates:
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        try:
            return accept(obj)
        except ReplyError as e:
            problem = str(e)
    raise ReplyError(problem)


def llm_info(settings: JudgeLLMSettings, prompts: dict[str, Prompt]) -> dict[str, ScoreValue]:
    """The settings and each prompt's sha256, as flat `llm.<key>` scorer parameters (logged; the key never
    is)."""
    out: dict[str, ScoreValue] = {f"llm.{k}": v for k, v in settings.model_dump().items()}
    out.update({f"llm.{kind}_prompt_sha256": p.sha256 for kind, p in prompts.items()})
    return out


def load_prompts(
    settings: JudgeLLMSettings, files: dict[str, tuple[str, tuple[str, ...]]], field: str
) -> dict[str, Prompt]:
    """Each prompt file (`kind: (file name, placeholders)`) from `prompt_dir`, every placeholder required."""
    folder = Path(settings.prompt_dir) if settings.prompt_dir else PROMPT_DIR
    prompts = {}
    for kind, (name, placeholders) in files.items():
        path = folder / name
        prompt = load_prompt(path, path.stem, placeholders=placeholders, field=field)
        missing = [p for p in placeholders if not re.search(r"\{\{\s*" + p + r"\s*\}\}", prompt.text)]
        if missing:
            raise InputError(str(path), f"the prompt has no {{{{{missing[0]}}}}} placeholder", field=field)
        prompts[kind] = prompt
    return prompts


class _Failed:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _read(read: Callable[[str], Any], text: str) -> Any:
    try:
        return read(text)
    except ReplyError as e:
        return _Failed(f"unreadable reply: {e}")


class LlmBatch:
    """The questions of one scorer's batch and their answers (see the module doc)."""

    def __init__(self, settings: JudgeLLMSettings, label: str) -> None:
        self.s = settings
        self.label = label
        self.client = LLMClient(settings)
        self.stats = BatchStats()
        self.planning = False
        self._answers: dict[str, Any] = {}  # request key -> the read answer, or _Failed
        self._pending: dict[str, tuple[list[Message], Callable[[str], Any]]] = {}

    def ask(self, prompt: str, read: Callable[[str], T], stand_in: T) -> T:
        """The answer to `prompt` read by `read`; while planning, `stand_in` until it is known."""
        messages = [Message(role="user", content=prompt)]
        key = self.client.cache_key(messages)
        if key not in self._answers:
            if self.planning:
                self._pending.setdefault(key, (messages, read))
                return stand_in
            self._send({key: (messages, read)})
        got = self._answers[key]
        if isinstance(got, _Failed):
            raise JudgeFailure(got.reason)
        return got

    def prefetch(self, evaluate: Callable[[], object]) -> None:
        """Run `evaluate` in planning passes, sending each pass's new questions at once, until none is new."""
        self.planning = True
        try:
            while True:
                evaluate()
                if not self._pending:
                    return
                pending, self._pending = self._pending, {}
                self._send(pending)
        finally:
            self.planning = False
            self._pending = {}

    def _send(self, pending: dict[str, tuple[list[Message], Callable[[str], Any]]]) -> None:
        allowed = math.floor(self.s.max_failure_rate * (len(self._answers) + len(pending))) - len(
            self.failures
        )
        cache = open_cache(self.s.cache_dir)
        try:
            results, stats = self.client.complete_all(
                [m for m, _ in pending.values()],
                cache=cache,
                desc=f"{self.label} {self.s.model}",
                max_errors=max(0, allowed),
            )
        finally:
            cache.close()
        self.stats.merge(stats)
        for (key, (_, read)), r in zip(pending.items(), results, strict=True):
            self._answers[key] = (
                _Failed(f"call failed: {r}") if isinstance(r, LLMError) else _read(read, r.text)
            )

    @property
    def failures(self) -> list[str]:
        """The reasons of the questions without a usable answer, in the order they were asked."""
        return [a.reason for a in self._answers.values() if isinstance(a, _Failed)]

    def metrics(self, prefix: str, failure: str) -> dict[str, float]:
        """`<prefix>/llm/questions`, `/<failure>s`, `/<failure>_rate`, and the client's requests, cache use,
        tokens, latency."""
        n, failed = len(self._answers), len(self.failures)
        return {
            **self.stats.metrics(f"{prefix}/llm"),
            f"{prefix}/llm/questions": float(n),
            f"{prefix}/llm/{failure}s": float(failed),
            f"{prefix}/llm/{failure}_rate": failed / n if n else 0.0,
        }

    def check(self) -> None:
        """Raise `LlmFailureRateError` when more than `max_failure_rate` of the questions failed."""
        n, failed = len(self._answers), self.failures
        if n and len(failed) / n > self.s.max_failure_rate:
            raise LlmFailureRateError(
                f"{self.label}: {len(failed)} of {n} LLM questions ({len(failed) / n:.0%}) got no usable "
                f"answer, above max_failure_rate {self.s.max_failure_rate:g} (judge {self.s.model!r} at "
                f"{self.client.endpoint}); first: {failed[0]}"
            )
