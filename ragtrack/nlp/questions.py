"""The asks of a question: `Who may apply, and how long does it take?` asks two things.

A question is cut after each question mark, and before a conjunction or comma that opens another
interrogative clause (English `, and who …`, `and how long …`; Chinese `，如果…怎么…？`); a piece
that holds no interrogative of its own (`在江城市献血后，要间隔多久？`: the first piece only sets the
scene) stays joined to the piece after it.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["asks"]

_EN_ASK = (
    r"(?:who|whom|whose|what|when|where|which|why|how|whether|is|are|was|were|does|do|did|can|could|may|must"
    r"|should|will|would|has|have)"
)
_CUT = re.compile(
    rf"(?<=[?？])\s*"  # after a question mark
    rf"|,?\s+and\s+(?={_EN_ASK}\b)"  # `…, and who …`
    r"|，(?=[^，？]*？)",  # the last Chinese comma before a question mark
    re.IGNORECASE,
)
_INTERROGATIVE = re.compile(
    rf"\b{_EN_ASK}\b|[?？]$|什么|哪|谁|怎|如何|多少|多久|多长|多大|多高|几|吗|是否|能否|可否|有没有|是不是|么",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def asks(question: str) -> tuple[str, ...]:
    """The interrogative clauses of `question`, in order; the whole question when it asks one thing."""
    pieces = [p.strip() for p in _CUT.split(question) if p and p.strip()]
    out: list[str] = []
    pending = ""
    for piece in pieces:
        text = f"{pending}，{piece}" if pending and not piece.isascii() else f"{pending} {piece}".strip()
        if _INTERROGATIVE.search(piece):
            out.append(text)
            pending = ""
        else:
            pending = text
    if pending:
        if out:
            out[-1] = f"{out[-1]} {pending}"
        else:
            out.append(pending)
    return tuple(out) if len(out) > 1 else (question,)
