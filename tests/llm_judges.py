"""Scripted judges for the `llm` backends of `rag` and `earag`: replies chosen by each prompt's data blocks.

LLMServer(script=rag_judge(statements={answer: [...]}, support={...}, relevance={...}))
LLMServer(script=lenient_judge())   # a well-formed reply to every judge prompt, echo to anything else
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.llm_server import Reply, reply, route

STATEMENTS = "You split a text into atomic statements"
SUPPORT = "You check numbered statements"
RELEVANCE = "You rate how relevant"
ENTITIES = "提取关键政策实体"
FAITHFULNESS = "评估答案对上下文的事实忠实度"

Script = Callable[[int, dict[str, Any]], Reply]


def block(prompt: str, tag: str) -> str:
    """The data between `<tag>` and `</tag>` in a prompt."""
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    assert m, f"no <{tag}> block in the prompt"
    return m.group(1)


def statements_of(prompt: str) -> tuple[str, ...]:
    """The numbered statements of a support prompt."""
    return tuple(line.split(". ", 1)[1] for line in block(prompt, "statements").splitlines())


def sources_of(prompt: str) -> tuple[str, ...]:
    """The sources of a support prompt, without their `[n]` lines."""
    return tuple(s.split("\n", 1)[1] for s in block(prompt, "sources").split("\n\n"))


def rag_judge(
    statements: dict[str, list[str]],
    support: dict[tuple[tuple[str, ...], tuple[str, ...]], list[bool]],
    relevance: dict[str, float],
    *,
    reason: str = "the sources say otherwise",
) -> Script:
    """Decompositions by text, verdicts by (statements, sources), relevance by text; a KeyError is a test
    bug."""

    def verdicts(prompt: str) -> Reply:
        flags = support[(statements_of(prompt), sources_of(prompt))]
        return reply(
            json.dumps(
                {
                    "verdicts": [
                        {"index": i, "supported": ok, "reason": "" if ok else reason}
                        for i, ok in enumerate(flags, 1)
                    ]
                }
            )
        )

    return route(
        (STATEMENTS, lambda p: reply(json.dumps({"statements": statements[block(p, "text")]}))),
        (SUPPORT, verdicts),
        (RELEVANCE, lambda p: reply(json.dumps({"relevance": relevance[block(p, "text")]}))),
    )


def earag_judge(entities: dict[str, Any], scores: dict[str, Any]) -> Script:
    """Entity lists by text and llm_scores by answer: a value that is a `Reply` is sent as it is, else as
    JSON."""

    def answer(value: Any) -> Reply:
        return value if isinstance(value, Reply) else reply(json.dumps(value, ensure_ascii=False))

    return route(
        (ENTITIES, lambda p: answer(entities[block(p, "text")])),
        (FAITHFULNESS, lambda p: answer(scores[block(p, "answer")])),
    )


def lenient_judge() -> Script:
    """Every statement supported, every text relevant, no entities, llm_score 1; anything else is echoed."""
    return route(
        (
            STATEMENTS,
            lambda p: reply(
                json.dumps({"statements": [s for s in re.split(r"(?<=[.。])\s*", block(p, "text")) if s]})
            ),
        ),
        (SUPPORT, lambda p: reply(json.dumps({"verdicts": [{"supported": True} for _ in statements_of(p)]}))),
        (RELEVANCE, reply('{"relevance": 1}')),
        (ENTITIES, reply("[]")),
        (FAITHFULNESS, reply("1")),
    )
