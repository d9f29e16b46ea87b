"""Shared text helpers of SPEC §0, used by every deterministic scorer.

The `*_normed` variants take text that is already `norm()`-ed, so that a scorer can
normalise each string once and compare it many times.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "bigrams",
    "bigrams_normed",
    "CJK_RUNS",
    "cjk_runs",
    "evidence_keywords",
    "fuzzy_equal",
    "fuzzy_equal_normed",
    "has_cjk",
    "jaccard",
    "norm",
    "terms",
]

_CJK_RUN = r"[\u3400-\u4dbf\u4e00-\u9fff]+"  # an unbroken run of CJK ideographs
# English tokens and unbroken runs of CJK ideographs, in text order (SPEC §1.3).
_KEYWORD_PIECE = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*|" + _CJK_RUN)
CJK_RUNS = re.compile(_CJK_RUN)


def norm(s: str | None) -> str:
    """Unicode NFKC, then drop all whitespace, then casefold; `None` is `""`.

    `str.split()` splits at exactly the code points `\\s` matches (both are `str.isspace`), so joining
    its pieces drops the same whitespace as `re.sub(r"\\s+", "")`, faster (tests check every code point).
    """
    if not s:
        return ""
    return "".join(unicodedata.normalize("NFKC", s).split()).casefold()


def bigrams_normed(x: str) -> frozenset[str]:
    """Character bigrams of an already normalised string (length 1: the string itself)."""
    if len(x) < 2:
        return frozenset((x,)) if x else frozenset()
    return frozenset(x[i : i + 2] for i in range(len(x) - 1))


def bigrams(s: str | None) -> frozenset[str]:
    """The set of character bigrams of `norm(s)`."""
    return bigrams_normed(norm(s))


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """|A ∩ B| / |A ∪ B|, and 0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def fuzzy_equal_normed(
    x: str,
    y: str,
    bx: frozenset[str],
    by: frozenset[str],
    *,
    threshold: float = 0.72,
    min_containment_chars: int = 2,
) -> bool:
    """`fuzzy_equal` on normalised strings `x`, `y` with their bigram sets `bx`, `by`."""
    if not x or not y:
        return not x and not y
    if min(len(x), len(y)) >= min_containment_chars and (x in y or y in x):
        return True
    return jaccard(bx, by) >= threshold


def fuzzy_equal(
    a: str | None, b: str | None, *, threshold: float = 0.72, min_containment_chars: int = 2
) -> bool:
    """SPEC §0: containment (shorter side ≥ `min_containment_chars`) or bigram Jaccard ≥ threshold."""
    x, y = norm(a), norm(b)
    return fuzzy_equal_normed(
        x,
        y,
        bigrams_normed(x),
        bigrams_normed(y),
        threshold=threshold,
        min_containment_chars=min_containment_chars,
    )


def cjk_runs(s: str) -> list[str]:
    """The unbroken runs of CJK ideographs (U+3400–U+4DBF, U+4E00–U+9FFF) of `s`, in order."""
    return CJK_RUNS.findall(s)


def has_cjk(s: str) -> bool:
    """Whether `s` holds a CJK ideograph: it is (partly) written in Chinese. `£`, an em dash or an accented
    letter does not make English Chinese."""
    return CJK_RUNS.search(s) is not None


def terms(text: str | None) -> list[str]:
    """Lexical terms of a text, in order, repeats kept (SPEC §1.3's keyword rule without the de-duplication).

    English tokens come from the NFKC+casefold text (length ≥ 2, or purely numeric);
    Chinese terms are the bigrams of each unbroken run of CJK ideographs (a run of one
    ideograph gives that character).
    """
    out: list[str] = []
    for m in _KEYWORD_PIECE.finditer(unicodedata.normalize("NFKC", text or "").casefold()):
        piece = m.group(0)
        if piece[0].isascii():
            if len(piece) >= 2 or piece.isdigit():
                out.append(piece)
        elif len(piece) == 1:
            out.append(piece)
        else:
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
    return out


def evidence_keywords(text: str | None, limit: int = 30) -> list[str]:
    """Keywords of an evidence text (`terms`), in order of first appearance, de-duplicated, first `limit`.

    The text is read only until `limit` distinct keywords are found.
    """
    if limit <= 0:  # a slice `[:limit]` that is empty or counts from the end
        return list(dict.fromkeys(terms(text)))[:limit]
    seen: dict[str, None] = {}
    for piece in _KEYWORD_PIECE.findall(unicodedata.normalize("NFKC", text or "").casefold()):
        if piece[0].isascii():
            if len(piece) >= 2 or piece.isdigit():
                seen[piece] = None
        elif len(piece) == 1:
            seen[piece] = None
        else:
            for i in range(len(piece) - 1):
                seen[piece[i : i + 2]] = None
                if len(seen) >= limit:
                    return list(seen)
        if len(seen) >= limit:
            return list(seen)
    return list(seen)
