"""Statements and content tokens: the lexical side of the `rag` scorers (SPEC §3).

    split_statements("退款7日内到账。节假日顺延")   # -> ["退款7日内到账", "节假日顺延"]
    content_tokens("The refunds arrive in 7 days")  # -> {"refund", "arrive", "7", "day"}
    coverage(content_tokens(q), content_tokens(t)) # share of q's tokens that t has

Content tokens, after NFKC and casefold: Latin-script words `[a-z0-9]+` (decimals kept
whole) that are not stop words, with a plural `s`/`ies` stripped; and for Chinese the
character bigrams of each run of CJK ideographs, the runs first cut at function
characters (的 了 是 …) and question words (什么 多少 …) removed (a run of one ideograph
gives that character). Both languages are compared the same way: as sets.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ragtrack.nlp.text import cjk_runs

__all__ = ["content_tokens", "coverage", "split_statements"]

# SPEC §3: sentence ends 。！？!?；; and `.` followed by whitespace or the end, and newlines.
_SPLIT = re.compile(r"[。！？!?；;\n]+|\.(?=\s|$)")
_HAS_CONTENT = re.compile(r"[^\W_]")  # a letter, digit or ideograph: a piece of only punctuation is dropped
# as ragtrack.scorers.refusal_citation reads them
_CITATIONS = re.compile(r"citations\s*:\s*\[[^\]]*\]", re.IGNORECASE)

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)*")
_EN_STOP = frozenset(
    """a an the and or but if then than so of in on at to for from by with without about into onto over
    under is are was were be been being am do does did done have has had having can could may might must
    shall should will would it its this that these those there here which who whom whose what when where
    why how i you he she we they me him her us them my your his our their as not no yes any some all each
    every such also only just very more most much many other same own too again further once both either
    neither nor per via upon while""".split()
)
_CJK_QUESTION_WORDS = re.compile("什么|哪些|哪个|哪里|多少|怎么|怎样|如何|为什么|为何|是否|吗|呢|吧")
_CJK_FUNCTION = re.compile("[的了是在和与及或也都就被把将对于之其这那个着过]")


def split_statements(text: str | None) -> list[str]:
    """The text's statements: pieces between sentence ends and newlines, stripped, non-empty.

    A piece with no letter, digit or ideograph (a lone `-` or `…`) is dropped too, and a
    `citations: [...]` list (SPEC §2's pattern) is not a statement: it is removed first.
    """
    if not text:
        return []
    text = _CITATIONS.sub(" ", text)
    return [p.strip() for p in _SPLIT.split(text) if p and _HAS_CONTENT.search(p)]


def _stem(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@lru_cache(maxsize=262144)
def content_tokens(text: str) -> frozenset[str]:
    """The content tokens of `text` (see the module doc)."""
    s = unicodedata.normalize("NFKC", text).casefold()
    out = {_stem(w) for w in _WORD.findall(s) if w not in _EN_STOP}
    for run in cjk_runs(s):
        for piece in _CJK_FUNCTION.split(_CJK_QUESTION_WORDS.sub(" ", run).replace(" ", "的")):
            if len(piece) == 1:
                out.add(piece)
            else:
                out.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return frozenset(out)


def coverage(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a|: the share of `a`'s tokens that `b` has; 0 when `a` is empty."""
    return len(a & b) / len(a) if a else 0.0
