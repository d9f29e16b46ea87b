"""The `llm` backend of `earag` (SPEC §4): seed 003's entity-extraction and faithfulness prompts, with its
fallbacks.

- Entities (`earag_entities_v1.md`, the seed's prompt): a text's first `max_text_length`
  characters (the seed's `text[:1000]`) and its role (`question`, `answer`) → a JSON
  array of strings. Each string is a name entity (`entities.Entity`, kind `name`, key its
  §0 `norm` without 《》 or quotes; repeated keys dropped), so it is found in a text when
  its key is contained in the text's `norm` (§4's matching rule), or when every entity the
  offline extractor finds in the string occurs there (`第十九条` in `第19条`). An empty text
  is not asked.
- Faithfulness (`earag_faithfulness_v1.md`, the seed's prompt): the first `faithfulness_top_k`
  (the seed's 3) contexts joined by newlines, and the answer → one number, the seed's
  `llm_score`, clamped to 0..1 as the seed does.
Each text goes in as data inside a delimiter block (the seed's prompts plus the blocks and
a line saying they are data). A call that failed for good, or a reply that cannot be read
(not a JSON array of strings; not a finite number), gives the seed's fallback, no entities
or `llm_score = 0.5`, with its reason: the caller marks the case and the batch counts it.
"""

from __future__ import annotations

import math
from typing import Any

from ragtrack.inputs.prompts import Prompt, fill_as_data
from ragtrack.nlp.entities import Entity, extract
from ragtrack.nlp.text import norm
from ragtrack.scorers.judge import JudgeFailure
from ragtrack.scorers.llm_batch import LlmBatch, ReplyError, read_json

__all__ = ["FALLBACK_SCORE", "PROMPTS", "llm_entities", "llm_score", "read_entities", "read_score"]

PROMPTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "entities": ("earag_entities_v1.md", ("role", "text")),
    "faithfulness": ("earag_faithfulness_v1.md", ("context", "answer")),
}
FALLBACK_SCORE = 0.5  # the seed's llm_score when the call or its reply fails


def _names(obj: Any) -> list[str]:
    if not isinstance(obj, list):
        raise ReplyError("not a JSON array")
    if not all(isinstance(e, str) for e in obj):
        raise ReplyError("an entity is not a string")
    return [e.strip() for e in obj if e.strip()]


def read_entities(text: str) -> list[str]:
    """The entity names of an extraction reply (a JSON array of strings)."""
    return read_json(text, _names)


def _score(obj: Any) -> float:
    if isinstance(obj, bool) or not isinstance(obj, (int, float)) or not math.isfinite(obj):
        raise ReplyError(f"{obj!r} is not a number")
    return min(1.0, max(0.0, float(obj)))


def read_score(text: str) -> float:
    """The `llm_score` of a faithfulness reply: one number, clamped to 0..1 (the seed's rule)."""
    return read_json(text, _score)


def llm_entities(
    batch: LlmBatch, prompt: Prompt, text: str, role: str, max_chars: int
) -> tuple[list[Entity], str]:
    """The entities of `text` and, when the seed's fallback (no entities) was taken, why."""
    if not text.strip():
        return [], ""
    try:
        names: list[str] = batch.ask(
            fill_as_data(prompt.text, {"role": role, "text": text[:max_chars]}), read_entities, []
        )
    except JudgeFailure as e:
        return [], str(e)
    found: dict[str, Entity] = {}
    for name in names:
        key = norm(name).strip('《》"')
        if key:
            found.setdefault(key, Entity(text=name, key=key, kind="name", parts=tuple(extract(name))))
    return list(found.values()), ""


def llm_score(
    batch: LlmBatch, prompt: Prompt, answer: str, contexts: list[str], top_k: int
) -> tuple[float, str]:
    """The seed's `llm_score` of `answer` against its first `top_k` contexts and, when the fallback 0.5 was
    taken, why."""
    try:
        return batch.ask(
            fill_as_data(prompt.text, {"context": "\n".join(contexts[:top_k]), "answer": answer}),
            read_score,
            FALLBACK_SCORE,
        ), ""
    except JudgeFailure as e:
        return FALLBACK_SCORE, str(e)
