"""Cutting a corpus file's text into chunks: character spans of the text, at the best boundary.

`chunk_spans(text, cfg)` returns `(start, end)` spans of `text` (code points, whitespace
trimmed), each at most `cfg.size` characters:

- `boundary: paragraph` packs whole paragraphs (blocks between blank lines) into a chunk
  while they fit; a paragraph longer than `size` is cut into its sentences, packed alike
  (never together with the next paragraph), a sentence longer than `size` into clauses,
  then words, and a run with none of these (CJK text without punctuation) is cut every
  `size` characters.
- `boundary: sentence` packs sentences (a paragraph break ends a sentence), with the same
  fall-backs; chunks fill up more evenly, and may span a paragraph break.
- `boundary: char` cuts fixed windows of `size` characters every `size - overlap`.

Sentence ends are CJK `。！？；…` (closing quotes and brackets after them stay with the
sentence) and Latin `.!?;` followed by whitespace; clause marks are `，、：,:`. So Chinese
text is cut at its own punctuation, never needs spaces, and sizes count characters, not
bytes. Consecutive chunks share whole trailing units of at most `overlap` characters (a
unit — sentence, clause, word — is never shared in part), as LangChain's recursive splitter
does; only `char` windows overlap by exactly `overlap`.

`paragraph_spans` numbers the paragraphs of a file that are not Markdown headings from 1:
the demo's `chunks.jsonl` ids `<source_path>#<n>` and the qaset's gold ids use that
numbering, so citations by paragraph do not depend on the chunker.
"""

from __future__ import annotations

import re

from ragtrack.inputs.config import ChunkerConfig

__all__ = ["Span", "chunk_spans", "paragraph_spans", "sentence_spans", "title"]

Span = tuple[int, int]

_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and the whitespace after it)
_SENTENCE = re.compile(r"[。！？；…]+[”’」』）)\]\"']*|[.!?;]+[\"')\]”’]*(?=\s)|\n")
_CLAUSE = re.compile(r"[，、：]|[,:](?=\s)")
_WORD = re.compile(r"\s+")
_LEVELS = {"paragraph": (_PARAGRAPH, _SENTENCE, _CLAUSE, _WORD), "sentence": (_SENTENCE, _CLAUSE, _WORD)}
_HEADING = re.compile(r"^#{1,6}\s")


def _trim(text: str, s: int, e: int) -> Span:
    """`(s, e)` narrowed to exclude leading and trailing whitespace."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _length(text: str, s: int, e: int) -> int:
    a, b = _trim(text, s, e)
    return b - a


def _merge(text: str, pieces: list[Span], size: int, overlap: int) -> list[Span]:
    """Greedy packing of consecutive pieces (each within `size`) into chunks; each next chunk restarts on
    the last pieces within `overlap`."""

    def length(i: int, j: int) -> int:
        return _length(text, pieces[i][0], pieces[j][1])

    out: list[Span] = []
    i = 0
    while i < len(pieces):
        j = i
        while j + 1 < len(pieces) and length(i, j + 1) <= size:
            j += 1
        out.append((pieces[i][0], pieces[j][1]))
        if j + 1 == len(pieces):
            break
        k = i + 1
        while k <= j and (length(k, j) > overlap or length(k, j + 1) > size):
            k += 1
        i = k
    return out


def _split(text: str, s: int, e: int, levels: tuple[re.Pattern[str], ...], cfg: ChunkerConfig) -> list[Span]:
    """Chunks of `[s, e)`: its pieces at the first level that cuts it, runs of fitting pieces packed
    together, a piece too long for a chunk split at the next level (as LangChain's recursive splitter)."""
    if _length(text, s, e) <= cfg.size:
        return [(s, e)]
    if not levels:
        return [(i, min(i + cfg.size, e)) for i in range(s, e, cfg.size)]
    cuts = [m.end() for m in levels[0].finditer(text, s, e) if s < m.end() < e]
    if not cuts:
        return _split(text, s, e, levels[1:], cfg)
    bounds = [s, *cuts, e]
    out: list[Span] = []
    run: list[Span] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        if _length(text, a, b) <= cfg.size:
            run.append((a, b))
            continue
        out += _merge(text, run, cfg.size, cfg.overlap) + _split(text, a, b, levels[1:], cfg)
        run = []
    return out + _merge(text, run, cfg.size, cfg.overlap)


def chunk_spans(text: str, cfg: ChunkerConfig) -> list[Span]:
    """The chunks of `text` as trimmed `(start, end)` spans, in text order; empty chunks dropped."""
    if cfg.boundary == "char":
        step = cfg.size - cfg.overlap
        raw = [(s, min(s + cfg.size, len(text))) for s in range(0, max(len(text) - cfg.overlap, 1), step)]
    else:
        raw = _split(text, 0, len(text), _LEVELS[cfg.boundary], cfg)
    spans = [_trim(text, s, e) for s, e in raw]
    return [(s, e) for s, e in spans if e > s]


def _blocks(text: str) -> list[Span]:
    bounds = [0, *(m.end() for m in _PARAGRAPH.finditer(text)), len(text)]
    spans = [_trim(text, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    return [(s, e) for s, e in spans if e > s]


def paragraph_spans(text: str) -> list[Span]:
    """The paragraphs (blocks between blank lines) that are not Markdown headings; paragraph n is item n-1."""
    return [(s, e) for s, e in _blocks(text) if not _HEADING.match(text[s:e])]


def title(text: str) -> str:
    """The first Markdown heading's text, or ""."""
    for s, e in _blocks(text):
        line = text[s:e].splitlines()[0]
        if _HEADING.match(line):
            return line.lstrip("#").strip()
    return ""


def sentence_spans(text: str, s: int = 0, e: int | None = None) -> list[Span]:
    """The sentences of `text[s:e]` as trimmed spans; Markdown heading lines are left out."""
    e = len(text) if e is None else e
    bounds = [s, *(m.end() for m in _SENTENCE.finditer(text, s, e) if s < m.end() < e), e]
    spans = [_trim(text, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    return [(a, b) for a, b in spans if b > a and not _HEADING.match(text[a:b])]
