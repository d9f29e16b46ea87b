"""Offline entity extraction for `earag` (SPEC §4), Chinese and English, deterministic.

    ents = extract("根据《劳动合同法》第十九条，北京住房公积金管理中心规定……")
    occurs(ents[0], text)   # does the entity occur in another text?

An entity is one of:
- a **fact** (`ragtrack.nlp.facts`): law-article references (`第十九条`, `Article 33`), titled or
  quoted names (`《劳动合同法》`), dates, and numbers with units or percentages
  (`120万元`, `10 days`, `3.5%`); a bare number is not an entity;
- an English **name**: a run of capitalised words (`Federal Housing Administration`,
  `Peace of Westphalia`, `EU Regulation 261`, `NASA`), small connectors (of, the, and, for,
  de, von, …) allowed inside and a number allowed at the end; a possessive `'s` dropped;
  month and weekday names are dates, not names; at a sentence start, a first word that is not
  all capitals starts a name only when another capitalised word follows it directly
  (`Neil Armstrong walked`), else it is dropped (`Amoxicillin for …`, `The Peace of …`, `Ask the
  State Department`, `Pay 95 dollars`); function words and connectors left at either end of a
  run are dropped;
- a Chinese **name**: a word that `jieba.posseg` tags as a person, place, organisation,
  other proper noun or abbreviation (`nr ns nt nz nrt nrfg j`: 郑和, 北京, 财政部, 中小企业), and
  a one-character proper noun joined to a next word with an administrative suffix (澜 + 州市);
- a Chinese **term**: two or more consecutive common-noun words (`n vn`) taken together
  (税收优惠政策, 华侨投资, 企业注册资本): policy questions name their subject this way.

**Why jieba.posseg** (0.42.1, MIT): a dictionary + HMM segmenter with part-of-speech tags,
deterministic, pure Python, no model download (its dictionary ships in the package), the
standard offline choice for Chinese; it separates proper nouns and organisations from
common words, which character n-grams cannot. Its prefix-dictionary cache is written under
`cache_root("jieba")`, never to the working directory, and its log is silenced.

**Matching** (`occurs`): a fact occurs in a text when the text's facts provide its token
(the rule of SPEC §3); a name when its normalised form (§0 `norm`) is contained in the
normalised text (also read without possessive `'s`), or when each word of a name of two or
more words is a capitalised word of the text or a word of one of its names (writers split
and reorder names: `Solvane` … `the HomeCell 10`); a term when it is contained whole, or
when at least half of its pieces (`jieba.cut_for_search`, words of two or more characters)
are: Chinese abbreviates and
reorders compounds (税收优惠政策 ↔ 所得税减免、增值税优惠等政策). A name that came from
elsewhere (an LLM's extraction) with `parts` (`extract` of the name) also occurs when every
part does: `第十九条` then occurs in `第19条`, and `《劳动合同法》第十九条` in a text that
cites `《劳动合同法》` and `第19条`.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragtrack.core.cachedir import cache_root
from ragtrack.nlp.facts import Fact, facts, missing_fact, provided_keys
from ragtrack.nlp.lexical import content_tokens
from ragtrack.nlp.text import norm

__all__ = ["Entity", "extract", "focus", "occurs", "segment"]

EntityKind = Literal["fact", "name", "term"]


class Entity(BaseModel):
    """One entity: its text as found, its normalised key and what it needs to occur elsewhere."""

    model_config = ConfigDict(frozen=True)

    text: str
    key: str  # the fact token, or §0 norm of the name/term
    kind: EntityKind
    fact: Fact | None = None
    pieces: tuple[str, ...] = ()  # a term's search-mode pieces (normalised)
    parts: tuple[Entity, ...] = ()  # a name from elsewhere (an LLM): the entities `extract` finds in it


# ------------------------------------------------------------------ English names

_LATIN = r"A-Za-zÀ-ÖØ-öø-ÿ"
_CAP_WORD = rf"(?:[A-Z][{_LATIN}0-9]*(?:['’\-][{_LATIN}0-9]+)*|[A-Z0-9]*[A-Z][A-Z0-9]+)"
_CONNECTOR = r"(?:of|the|for|on|de|du|des|la|le|von|van|der)"
_NAME = re.compile(
    rf"(?<![{_LATIN}0-9])({_CAP_WORD}(?:['’]s?)?(?:\s+(?:{_CONNECTOR}\s+)*{_CAP_WORD}(?:['’]s?)?)*(?:\s+\d+(?:\.\d+)*)?)(?![{_LATIN}0-9])"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？;；:：\n]\s*[\"'“‘(（]?)$")
_FUNCTION_WORDS = frozenset(
    """the a an this that these those in on at under for by with from to of as if when what which who how
    why where does do did is are was were can could should would will it its our your their his her my no
    yes not after before during since per each every all any some according under""".split()
)
_CALENDAR = frozenset(
    """january february march april may june july august september october november december jan feb mar
    apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday""".split()
)


def _english_names(text: str) -> list[str]:
    out = []
    for m in _NAME.finditer(text):
        words = [re.sub(r"['’]s$", "", w) for w in m.group(1).split()]
        if _SENTENCE_START.search(text[: m.start()]) and not words[0].isupper():
            # a sentence's first word is capitalised anyway: it starts a name only when another
            # capitalised word follows it directly (Neil Armstrong, Lumen Compute)
            named = [w for w in words if not w.isdigit()]
            if len(named) < 2 or words[0].lower() in _FUNCTION_WORDS or re.fullmatch(_CONNECTOR, words[1]):
                words = words[1:] if len(named) >= 2 else []
        while words and (words[0].lower() in _FUNCTION_WORDS or re.fullmatch(_CONNECTOR, words[0])):
            words = words[1:]
        while words and (words[-1].lower() in _FUNCTION_WORDS or re.fullmatch(_CONNECTOR, words[-1])):
            words.pop()
        if (
            not words
            or all(w.lower() in _CALENDAR | _FUNCTION_WORDS or w.isdigit() for w in words)
            or words == ["I"]
        ):
            continue
        out.append(" ".join(words))
    return out


# ------------------------------------------------------------------ Chinese names and terms

_PROPER = frozenset({"nr", "ns", "nt", "nz", "nrt", "nrfg", "j"})
_COMMON = frozenset({"n", "vn"})
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba():  # noqa: ANN202 - the jieba modules
    """jieba, initialised once: cache file under cache_root("jieba"), log silenced."""
    global _jieba_ready
    import jieba
    import jieba.posseg

    with _jieba_lock:
        if not _jieba_ready:
            jieba.setLogLevel(logging.WARNING)
            folder = cache_root("jieba")
            folder.mkdir(parents=True, exist_ok=True)
            jieba.dt.tmp_dir = str(folder)
            jieba.dt.initialize()
            _jieba_ready = True
    return jieba, jieba.posseg


@lru_cache(maxsize=65536)
def segment(text: str) -> tuple[tuple[str, str], ...]:
    """The words of a Chinese text and their part-of-speech tags (`n`, `v`, `p` …) as `jieba.posseg` cuts
    them."""
    _, pseg = _jieba()
    return tuple((w.word, w.flag) for w in pseg.lcut(text) if w.word.strip())


_PLACE_SUFFIX = tuple("省市县区州镇乡村")


def _place_names(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A one-character proper noun before a word that ends in an administrative suffix is one place
    name: jieba cuts a place it does not know as 南/ns 州市/n, 澜/ns 州市/n (专名 + 通名)."""
    out: list[tuple[str, str]] = []
    for word, flag in pairs:
        if out and len(out[-1][0]) == 1 and out[-1][1] in _PROPER and word.endswith(_PLACE_SUFFIX):
            out[-1] = (out[-1][0] + word, "ns")
        else:
            out.append((word, flag))
    return out


@lru_cache(maxsize=65536)
def _chinese(text: str) -> tuple[tuple[str, str], ...]:
    """(text, kind) of the Chinese names and terms of `text`, in order."""
    _, pseg = _jieba()
    out: list[tuple[str, str]] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= 2:
            out.append(("".join(run), "term"))
        run.clear()

    pairs = _place_names([(p.word, p.flag) for p in pseg.lcut(text)])
    for i, (word, flag) in enumerate(pairs):
        if flag == "m" and word.endswith("号") and run and i and pairs[i - 1][1] in _COMMON:
            out.append((run.pop() + word, "name"))  # a designation: 嫦娥 + 五号, 天问 + 一号
            flush()
        elif not _CJK.search(word):
            flush()
        elif flag in _PROPER and len(word) >= 2:
            flush()
            out.append((word, "name"))
        elif flag in _COMMON and len(word) >= 2:
            run.append(word)
        else:
            flush()
    flush()
    return tuple(out)


@lru_cache(maxsize=65536)
def _pieces(term: str) -> tuple[str, ...]:
    jieba, _ = _jieba()
    return tuple(dict.fromkeys(norm(p) for p in jieba.cut_for_search(term) if len(p) >= 2))


# ------------------------------------------------------------------ the extractor


_NOT_ENTITY_FACTS = frozenset({"number", "time"})


def extract(text: str | None) -> list[Entity]:
    """The entities of `text`, de-duplicated by key, in order: facts, English names, Chinese names and
    terms."""
    return list(_extract(text or ""))


@lru_cache(maxsize=65536)
def _extract(text: str) -> tuple[Entity, ...]:
    found: dict[str, Entity] = {}

    def add(
        e: Entity,
    ) -> None:  # one entity per normalised form, brackets aside (《劳动合同法》 = 劳动合同法)
        found.setdefault(norm(e.key).strip('《》"'), e)

    for f in facts(text):
        if f.kind not in _NOT_ENTITY_FACTS:
            add(Entity(text=f.token, key=f.token, kind="fact", fact=f))
    nfkc = unicodedata.normalize("NFKC", text)
    for name in _english_names(nfkc):
        add(Entity(text=name, key=norm(name), kind="name"))
    if _CJK.search(nfkc):
        for word, kind in _chinese(nfkc):
            key = norm(word)
            add(
                Entity(text=word, key=key, kind="term", pieces=_pieces(word))
                if kind == "term"
                else Entity(text=word, key=key, kind="name")
            )
    return tuple(found.values())


def focus(question: str) -> str:
    """The question without the names and terms it is asked about: what it asks of them.

    Every chunk about a topic repeats the topic's names (the law, the office, the product); what
    tells the chunk that answers from one on another facet of that topic is the rest of the
    question. Names, terms and titles (《…》) are removed, longest first; numbers and dates stay
    (they are part of the ask); a question that is nothing but entities stays whole.
    """
    out = question
    for e in sorted(extract(question), key=lambda e: (-len(e.text), e.text)):
        if e.kind != "fact" or (
            e.fact is not None and e.fact.kind == "title"
        ):  # a number or date is what is asked
            out = out.replace(e.text, " ")
    return out if content_tokens(out) else question


_POSSESSIVE = re.compile(r"(?<=[A-Za-z0-9])['’]s(?![A-Za-z0-9])")
_CAP_WORDS = re.compile(rf"(?<![{_LATIN}0-9]){_CAP_WORD}")


class _Text:
    """A text prepared once for many `occurs` checks."""

    def __init__(self, text: str) -> None:
        self.norm = norm(text)
        self.bare = norm(_POSSESSIVE.sub("", text))  # names are read without a possessive 's
        self.keys = provided_keys(text)
        nfkc = unicodedata.normalize("NFKC", text)  # the words of its names, and every capitalised word
        self.name_words = frozenset(
            w.casefold()
            for w in _CAP_WORDS.findall(nfkc) + [w for n in _english_names(nfkc) for w in n.split()]
        )


def _name_words(name: str) -> list[str]:
    """The words of an English name but its inner connectors (`Lake Marrow`, `Pleasure Craft Licence`)."""
    return [w.casefold() for w in name.split() if not re.fullmatch(_CONNECTOR, w)]


@lru_cache(maxsize=4096)
def _prepared(text: str) -> _Text:
    return _Text(text)


def occurs(entity: Entity, text: str) -> bool:
    """Does `entity` occur in `text` (see the module doc for the rule of each kind)?"""
    t = _prepared(text)
    if entity.kind == "fact":
        assert entity.fact is not None
        return missing_fact([entity.fact], t.norm, t.keys) is None
    if entity.key in t.norm or entity.key in t.bare:
        return True
    words = _name_words(entity.text) if entity.kind == "name" and _NAME.fullmatch(entity.text) else []
    if len(words) >= 2 and all(w in t.name_words for w in words):
        return True  # the name's words, each in a name of the text: `Solvane` … `HomeCell 10`
    if entity.parts:
        return all(occurs(p, text) for p in entity.parts)
    if entity.kind == "term" and entity.pieces:
        return 2 * sum(p in t.norm for p in entity.pieces) >= len(entity.pieces)
    return False
