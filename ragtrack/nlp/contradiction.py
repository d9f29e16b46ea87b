"""Does a statement say the opposite of its evidence? Polarity, conditions and quantities (SPEC §3,
offline backend).

    polarity("The deposit is not refundable.")          # -> 1   (one negation)
    polarity("押金可以退还")                               # -> 0
    relations("apply at least 60 days before expiry")   # -> {"min", "before"}
    conflict("The deposit is not refundable", "The deposit is refundable")
    # -> "polarity: more negations in the statement"
    conflict("each worker must bring a harness", "each worker's employer must bring a harness")
    # -> None (a word dropped)
    conflict("the tenant must repair the boiler", "the landlord must repair the boiler")
    # -> "wording: tenant where the source says landlord"

Three closed classes of words decide, in English and Chinese alike, as stop words do:

- **negation**: grammatical negators (`not`, `no`, `never`, `without`, `cannot`, `n't`,
  `neither`, `nor`, `none`, `non-`, …, and the contrastive `rather than`, `instead of`; 不 未 没
  无 非 勿 别 莫 and words they begin, such as 不得 无需 未经, plus prohibitions 禁止 严禁
  `prohibited` `forbidden`). A word in which
  the negator is part of a lexical item (非常 "very", 无论 "regardless", 不断
  "continually", 不仅 "not only", 不同 "different") is not a negation. Two texts of
  different counts of negations differ in polarity (a bound such as 不少于 or `no more
  than` is a relation operator, not a negation; a predicate joined to its own negation,
  准予或不予 "grant or refuse" or `whether or not`, offers both and negates nothing). A clause
  with two negations affirms (`must not move without permission`, 不得不 "must"), so texts are
  compared by how many of their clauses hold an odd number of negations.
- **relation operators**: the words that set a bound or an order (`before`/`after`,
  `at least`/`at most`, `more than`/`less than`, `within`/`beyond`, `if`/`unless`,
  之前/之后, 以上/以下, 至少/最多, 超过/不超过; 前 后 内 after a number or a unit of
  time; a span bounded from above and counted from an event is `within` it: `no more than
  thirty days after the inspection` = `within 30 days of the inspection`), each with the
  operators that bound the other way. A statement whose operator
  is not in its evidence, while one bounding the other way is, changes a condition; so
  does one whose operator stands, in the character alignment of the two texts, where the
  evidence has its opposite (30日后 for 30日内), whatever operators both texts share.
- **scope** (version 5): quantifiers that make a claim hold for all (`every`, `each`, `all`,
  `whole`, `entire`, `always`; 每 所有 一切 任何 凡, 全 at a word's start: 全市 全额) or only for
  some (`only`, `just`, `solely`, `merely`, `some`, `certain`, ordinals; 仅 只 部分 某些 个别
  少数, 第 at a word's start). A statement that keeps its evidence's wording and puts a
  quantifier of one kind where the evidence has one of the other (`every Friday` for `the
  first and third Friday`, 仅主城区 for 全市) changes the claim's scope; a quantifier only
  dropped or only added is not compared.
- **connectives** (version 5): `and` demands both requirements, `or` either. A statement that
  keeps its evidence's wording and joins two requirements with the other one (`or have held`
  for `and have held`; 或 for 并且 before a verb) changes a condition. Only a connective before
  an auxiliary or modal verb (or, in Chinese, a verb) joins requirements; between nouns (`digital
  content or subscriptions`) it lists, and is not compared.
- **quantities** (`ragtrack.nlp.facts`): an amount of a family (time, money, length …) that
  the sources do not hold, where the evidence holds an amount of the same family,
  contradicts it.

- **parties** (version 6): two words that trade places around a third, in a statement that keeps
  its evidence's wording (`the tenant pays the landlord` for `the landlord pays the tenant`,
  上传医疗组出具的证明，由医院审核 for 上传医院出具的证明，由医疗组审核); a passive clause against an
  active one is not compared.

Open-class words decide only in a **near-copy** (`NEAR_COPY`): a statement that keeps its
evidence's wording but changes a word of it (`words`: English content words stemmed by
Snowball, Chinese nouns, verbs, adjectives and names as jieba tags them) says something
else: `each worker must provide` for `each worker's employer must provide`. A bi-encoder
cannot tell a synonym from a swapped party (MiniLM: `landlord`/`tenant` 0.84), so a changed
word counts unless a thesaurus calls the two synonyms (version 6, `ragtrack.nlp.thesaurus`:
WordNet, Cilin): `finish` for `complete` is the same claim, `supervisor` for `student` is not.
A near-copy that adds a word no source has, in the clauses it copies or in one it appends,
claims something the sources do not say. (Version 11) So does a statement that keeps its
evidence's words but for one span it replaces (`SPAN_FRAME`), when the spans differ in a word.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from functools import lru_cache
from typing import NamedTuple

from rapidfuzz import fuzz

from ragtrack.nlp.entities import segment
from ragtrack.nlp.facts import UNIT_CODES, Fact, facts, words_number
from ragtrack.nlp.lexical import content_tokens
from ragtrack.nlp.quantities import CN_UNITS, unit_of
from ragtrack.nlp.text import CJK_RUNS, cjk_runs
from ragtrack.nlp.thesaurus import stem, synonymous, synsets

__all__ = [
    "NEGATION",
    "SourceClause",
    "added_words",
    "clause_polarity",
    "conflict",
    "found_words",
    "grounding",
    "passive_voice",
    "polarity",
    "quantifiers",
    "quantity_conflict",
    "relation_spans",
    "relations",
    "reversed_polarity",
    "senses",
    "source_clauses",
    "support_tokens",
    "word_coverage",
    "word_sequence",
    "words",
]

_EN_WORD = re.compile(r"[a-z]+(?:'t)?")  # can't, don't: a word ending in n't
_EN_NEGATORS = frozenset(
    "not no never without cannot neither nor none nobody nothing nowhere non prohibited forbidden".split()
)
_EN_CONTRAST = re.compile(r"\b(?:rather than|instead of)\b")  # contrastive negation: what follows is denied
_CN_NEGATOR = re.compile("[不未没無无非勿别莫]|禁止|严禁")
# Lexical items that begin with a negator but do not negate the sentence.
_CN_NOT_NEGATION = re.compile(
    "非常|无论|不论|不管|不断|不仅|不但|不只|不止|不同|不少|不久|不妨|无非|莫过于|别人|别的|特别|区别|分别|类别|级别|识别|未免|"
    "无人机|不动产|非法|无线|非营利|未来|未成年|无偿|无限|毫无疑问|并非只"
)

# relation operator -> its canonical name; _OPPOSITE says which names bound the other way.
_EN_RELATIONS = {
    "before": "before",
    "prior to": "before",
    "earlier than": "before",
    "ahead of": "before",
    "after": "after",
    "following": "after",
    "later than": "after",
    "at least": "min",
    "no less than": "min",
    "not less than": "min",
    "or more": "min",
    "minimum": "min",
    "a minimum of": "min",
    "or longer": "min",
    "or older": "min",
    "at most": "max",
    "no more than": "max",
    "not more than": "max",
    "no fewer than": "min",
    "not fewer than": "min",
    "or less": "max",
    "maximum": "max",
    "a maximum of": "max",
    "up to": "max",
    "or fewer": "max",
    "or younger": "max",
    "or shorter": "max",
    "more than": "over",
    "over": "over",
    "above": "over",
    "exceeding": "over",
    "exceeds": "over",
    "longer than": "over",
    "less than": "under",
    "under": "under",
    "below": "under",
    "fewer than": "under",
    "shorter than": "under",
    "within": "within",
    "beyond": "beyond",
    "outside": "beyond",
    "unless": "unless",
    "if": "if",
    "only if": "if",
    "provided": "if",
}
_CN_RELATIONS = {
    "之前": "before",
    "以前": "before",
    "提前": "before",
    "之后": "after",
    "以后": "after",
    "至少": "min",
    "不少于": "min",
    "不低于": "min",
    "以上": "min",
    "起": "min",
    "最少": "min",
    "最多": "max",
    "至多": "max",
    "不超过": "max",
    "不高于": "max",
    "以下": "max",
    "以内": "within",
    "超过": "over",
    "高于": "over",
    "多于": "over",
    "低于": "under",
    "少于": "under",
    "不足": "under",
    "未满": "under",
    "之外": "beyond",
    "以外": "beyond",
    "除非": "unless",
    "如果": "if",
    "若": "if",
}
# A relation and those that bound the other way: "within 30 days" against "30 days after".
_OPPOSITE = {
    "before": {"after"},
    "after": {"before", "within"},
    "within": {"after", "beyond", "over"},
    "beyond": {"within"},
    "min": {"max", "under"},
    "max": {"min", "over"},
    "over": {"under", "max", "within"},
    "under": {"over", "min"},
    "unless": {"if"},
    "if": {"unless"},
}
_EN_REL = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _EN_RELATIONS), key=len, reverse=True)) + r")\b")
# The one-character postpositions 前 后 内 are relations only after a number or a unit of time
# (三天后, 30日内).
_CN_POSTPOSITION = re.compile("(?<=[0-9一二三四五六七八九十两天日月年周时分秒钟期])([前后内])")
_CN_REL = re.compile("|".join(sorted(map(re.escape, _CN_RELATIONS), key=len, reverse=True)))
_CN_POST = {"前": "before", "后": "after", "内": "within"}
# Quantifiers: the claim holds for all, or only for some (see the module doc).
_EN_ALL = frozenset("every each all whole entire always everyone everybody everything".split())
_EN_SOME = frozenset(
    "only just solely merely some certain first second third fourth fifth sixth seventh eighth ninth tenth"
    " last".split()
)
_CN_ALL = re.compile("^(?:每|所有|一切|任何|凡|全)")
_CN_SOME = re.compile("^(?:仅|只|部分|某些|某|个别|少数|第)")
# A predicate joined to its own negation offers both (准予或不予 "grant or refuse", `whether or not`): no
# negation.
_ALTERNATIVE = re.compile(r"(?:或者|或|还是)[不未没]|\bor\s+not\b")
# A span bounded from above and counted from an event is `within` it: `no more than thirty days after
# the inspection` = `within 30 days of the inspection`.
_EN_TIME_WORDS = "|".join(
    sorted(
        (re.escape(w) for w, _ in UNIT_CODES.items() if w.isascii() and (u := unit_of(w)) and "time" in u[0]),
        key=len,
        reverse=True,
    )
)
_BOUNDED_SPAN = re.compile(
    r"\b(?:no more than|not more than|at most|up to|no later than|not later than)\s+"
    rf"(?:[\w.,-]+\s+){{1,3}}?(?:{_EN_TIME_WORDS})\s+(?:after|following|from|of)\b"
)
# Connectives: `A and B` demands both, `A or B` either; a near-copy that swaps them changes a condition.
_EN_CONNECTIVES = {"and": "and", "or": "or"}
_CN_CONNECTIVES = {"并且": "and", "而且": "and", "且": "and", "和": "and", "或者": "or", "或": "or"}
_EN_AUX = frozenset(
    "be is are was were been have has had must may might can could shall should will would do does did need"
    " ".split()
)  # auxiliaries and modals: a connective before one joins verb phrases (requirements)
# A negated bound is the opposite bound, not a negation: 不得超过 = at most, must not exceed = at most.
_NEGATED_BOUND = {
    "max": re.compile(
        r"(?:不得|不能|不可|不应|不准|不会|不)(?:超过|高于|多于|大于|超出)"
        r"|\b(?:not|never|n't)\s+(?:exceed|be more than|be longer than|go beyond)\b"
    ),
    "min": re.compile(
        r"(?:不得|不能|不可|不应|不)(?:少于|低于|小于|短于)"
        r"|\b(?:not|never|n't)\s+(?:be less than|be fewer than|be shorter than|fall below)\b"
    ),
}
# rapidfuzz ratio of a statement and its aligned clauses from which polarity and conditions count
SAME_WORDING = 70
NEAR_COPY = 85  # the ratio from which a statement copies its evidence: a word it changes is another claim
SPAN_FRAME = 0.6  # the share of words a statement keeps around the one span it replaces (`_one_span_changed`)
_OPEN_CLASS = frozenset(
    "nvarj"
)  # jieba tags of nouns, verbs, adjectives, names and abbreviations (not p, d, c, u …)
_CN_NUMERALS = frozenset("零〇一二两三四五六七八九十百千万亿半")
_WORD_OR_RUN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\u3400-\u4dbf\u4e00-\u9fff]+")
_PASSIVE = re.compile(
    r"\b(?:is|are|was|were|be|been|being)\s+(?:(?:[a-z]+ly|not)\s+)?(?!not\b)[a-z]+(?:ed|en|wn|t|d)\b|[被受遭]",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[,;:，；：、。.!?！？]\s*")
_CLAUSE_SEP = re.compile(r"(?<![0-9]),|,(?![0-9])|[;:，；：、]")  # not the comma of 1,200
GROUNDED_CLAUSE_WORDS = 3  # a shorter clause (`at weekends`) is too short to judge on its own
REVERSED_CLAUSE_SHARE = 0.5  # a source clause holding this share of a clause's words is the one it restates


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")


def polarity(text: str) -> int:
    """How many clauses of `text` are negated: hold an odd number of negations (see the module doc)."""
    return sum(clause_polarity(text))


def _no_negation_words(text: str) -> str:
    """`text` folded, with what holds a negation word but is no negation blanked: a bound (不得超过, no more
    than), a relation operator, an alternative (或不予, or not)."""
    s = _fold(text)
    for pattern in (*_NEGATED_BOUND.values(), _CN_REL, _EN_REL, _ALTERNATIVE):
        s = pattern.sub(_blank, s)
    return s


@lru_cache(maxsize=65536)
def clause_polarity(text: str) -> tuple[int, ...]:
    """For each clause of `text`, in order: 1 when it is negated (it holds an odd number of negations), else
    0."""
    # `by the installer rather than the owner` = `…, not the owner`
    s = _EN_CONTRAST.sub(" not ", _no_negation_words(text))
    negated = []
    for clause in _CLAUSE_END.split(s):
        if not clause.strip():
            continue
        n = sum(1 for w in _EN_WORD.findall(clause) if w in _EN_NEGATORS or w.endswith("n't"))
        n += len(_CN_NEGATOR.findall(_CN_NOT_NEGATION.sub("", clause)))
        negated.append(n % 2)  # two negations in one clause affirm (`not … without`, 不得不)
    return tuple(negated)


_EN_SCOPE_SKIP = frozenset(
    "be is are was were been being a an the any to have has had do does did get ever yet also always longer "
    "only just more".split()
)
_CN_MODAL = "得能会可应要必须予以准许用再有"  # 不得, 不能, 不予, 没有…: the word they negate comes next


@lru_cache(maxsize=65536)
def negated_words(text: str) -> tuple[tuple[str, str], ...]:
    """(word, clause) for each negation of `text` (version 11): the word it negates, in English the next
    word that is no function word (Snowball stem: `not refundable` → `refund`), in Chinese the next word
    jieba cuts, past a modal and joined to the next when it is one character (`不得转借` → `转借`, `不认可`
    → `认可`, `不到场` → `到场`); and the clause it is in."""
    s = _CN_NOT_NEGATION.sub(_blank, _no_negation_words(text))
    out: list[tuple[str, str]] = []
    for clause in _CLAUSE_END.split(s):
        tokens = _EN_WORD.findall(clause)
        for i, w in enumerate(tokens):
            if w in _EN_NEGATORS or w.endswith("n't"):
                after = (
                    t for t in tokens[i + 1 : i + 5] if t not in _EN_SCOPE_SKIP and t not in _EN_NEGATORS
                )
                nxt = next(after, None)
                if nxt is not None:
                    out.append((stem(nxt), clause))
        for run in cjk_runs(clause):
            cut = [w for w, _ in segment(run)]
            for i, w in enumerate(cut):
                m = _CN_NEGATOR.match(w)
                if not m:
                    continue
                word = _first_word((w[m.end() :] + "".join(cut[i + 1 : i + 3])).lstrip(_CN_MODAL))
                if word:
                    out.append((word, clause))
    return tuple(out)


def _first_word(text: str) -> str:
    """The first word of `text` as jieba cuts it, joined to the next when it is one character; or ""."""
    cut = [w for w, _ in segment(text)] if text else []
    return "".join(cut[:2]) if cut and len(cut[0]) == 1 else "".join(cut[:1])


def _negation_in_other_words(said: str, source: str) -> bool:
    """Does the negation one text has and the other lacks negate a word that the other's matching clause
    (the one sharing most of its `words`) does not have (version 11)? Then the other says it in another
    word (`不认可` for `有异议`, `无正当理由不到场` for `没有正当理由缺席`): no contradiction. Without a
    word to compare, it is one."""
    mine, theirs = negated_words(said), negated_words(source)
    mine_words, their_words = Counter(w for w, _ in mine), Counter(w for w, _ in theirs)
    extra = [(w, c, source) for w, c in mine if mine_words[w] > their_words[w]]
    extra += [(w, c, said) for w, c in theirs if their_words[w] > mine_words[w]]
    if not extra:
        return False
    return not any(_has_word(_matching_clause(clause, other), w) for w, clause, other in extra)


def _matching_clause(clause: str, text: str) -> str:
    """The clause of `text` that shares most `words` with `clause` (the first on a tie)."""
    own = words(clause)
    clauses = [c for c in _CLAUSE_END.split(_fold(text)) if c.strip()] or [_fold(text)]
    return max(enumerate(clauses), key=lambda ic: (len(own & words(ic[1])), -ic[0]))[1]


def _has_word(text: str, word: str) -> bool:
    """`word` (a Snowball stem, or Chinese) in `text`: a Chinese word as written, an English one by stem."""
    if not word.isascii():
        return word in _fold(text)
    return any(stem(t) == word for t in _EN_WORD.findall(_fold(text)))


@lru_cache(maxsize=65536)
def relations(text: str) -> frozenset[str]:
    """The relation operators of `text`, by canonical name (`min`, `before`, …)."""
    return frozenset(name for _, _, name in relation_spans(_fold(text)))


def _blank(m: re.Match[str]) -> str:
    return " " * len(m.group(0))  # keeps every later offset


@lru_cache(maxsize=65536)
def relation_spans(folded: str) -> tuple[tuple[int, int, str], ...]:
    """The relation operators of a folded text: (start, end, canonical name), in the order they are
    written."""
    s = folded
    found = [
        (m.start(), m.end(), name) for name, pattern in _NEGATED_BOUND.items() for m in pattern.finditer(s)
    ]
    found += [(m.start(), m.end(), "within") for m in _BOUNDED_SPAN.finditer(s)]
    for pattern in (*_NEGATED_BOUND.values(), _BOUNDED_SPAN):
        s = pattern.sub(_blank, s)
    found += [(m.start(1), m.end(1), _EN_RELATIONS[m.group(1)]) for m in _EN_REL.finditer(s)]
    found += [
        (m.start(), m.end(), _CN_RELATIONS[m.group(0)])
        for m in _CN_REL.finditer(_CN_NOT_NEGATION.sub(_blank, s))
    ]
    found += [(m.start(1), m.end(1), _CN_POST[m.group(1)]) for m in _CN_POSTPOSITION.finditer(s)]
    found += _locality_words(s)
    return tuple(sorted(set(found)))


def _locality_words(folded: str) -> list[tuple[int, int, str]]:
    """前 and 后 that jieba cuts as words of their own: `before` and `after` an event (到期前, 届满后,
    出院后); inside a word (前往, 后果) they are no operator."""
    out: list[tuple[int, int, str]] = []
    at = 0
    for run in CJK_RUNS.finditer(folded):
        at = run.start()
        for word, _ in segment(run.group(0)):
            at = folded.index(word, at)
            if word in ("前", "后"):
                out.append((at, at + 1, _CN_POST[word]))
            at += len(word)
    return out


def _swapped_operator(said: str, source: str) -> str | None:
    """An operator of `said` written where `source`, in the same wording, has its opposite
    (30日内 -> 30日后)."""
    mine, theirs = relation_spans(said), relation_spans(source)
    if not mine or not theirs:
        return None
    for op, i1, i2, j1, j2 in SequenceMatcher(a=source, b=said, autojunk=False).get_opcodes():
        if op != "replace":
            continue
        for s0, e0, mine_r in mine:
            if s0 < j2 and e0 > j1:
                rival = next(
                    (t for t0, t1, t in theirs if t0 < i2 and t1 > i1 and t in _OPPOSITE[mine_r]), None
                )
                if rival:
                    return f"condition: {mine_r} where the source says {rival}"
    return None


def quantity_conflict(
    statement_facts: list[Fact], evidence_facts: list[Fact], support_keys: frozenset[str]
) -> str | None:
    """A fact of the statement that the sources lack, where the evidence has another fact of its family (an
    amount of the same kind, a date, a range, an article): `<it> vs <the evidence's>`."""
    for f in statement_facts:
        if f.kind in ("title", "quote") or f.provided_by(support_keys):
            continue
        family = _family(f)
        rivals = [e.token for e in evidence_facts if _family(e) == family and e.token != f.token]
        if rivals:
            return f"{f.token} vs {rivals[0]}"
    return None


def _family(f: Fact) -> str:
    """Facts that can stand for each other: amounts of one unit family, bare numbers, dates, ranges,
    articles, times."""
    if f.value:
        return f.value.split(":", 1)[0]
    return "number" if f.kind in ("quantity", "percent", "number") else f.kind


@lru_cache(maxsize=65536)  # `conflict` and `added_words` align the same pair
def _aligned(statement: str, evidence: str) -> tuple[str, str, float] | None:
    """The statement and its evidence as compared (folded), cut to what they share, and their rapidfuzz
    `ratio`.

    The shorter text is aligned to its best-matching part of the longer one
    (`partial_ratio_alignment`); of the longer, the clauses that alignment touches are kept
    (not a clause beside them, nor half of one). Returns (statement side, evidence side, ratio).
    """
    mine, theirs = _fold(statement), _fold(evidence)
    short, long = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
    aligned = fuzz.partial_ratio_alignment(short, long)
    if aligned is None:
        return None
    start = max((m.end() for m in _CLAUSE_END.finditer(long, 0, aligned.dest_start)), default=0)
    end = next((m.start() for m in _CLAUSE_END.finditer(long, aligned.dest_end)), len(long))
    window = long[start:end]
    said, source = (short, window) if short is mine else (window, short)
    return said, source, fuzz.ratio(short, window)


def conflict(statement: str, evidence: str) -> str | None:
    """Why `statement` says something else than `evidence`: in polarity, in a condition or, when it copies
    the evidence, in a word; or None.

    Only a statement that keeps its evidence's wording is compared: rapidfuzz `ratio` ≥
    `SAME_WORDING` between the shorter text and the clauses of the longer one that its
    best alignment touches. A paraphrase may say "at most" for "must not exceed" or "the
    first" for "no one before", so its words do not decide. From `NEAR_COPY` on, a word the
    statement has where its evidence has another (`words`) is a changed claim.
    """
    aligned = _aligned(statement, evidence)
    if aligned is None or aligned[2] < SAME_WORDING:
        return None
    said, source, _ = aligned
    if polarity(said) != polarity(source) and not _negation_in_other_words(said, source):
        more = "the statement" if polarity(said) > polarity(source) else "the source"
        return f"polarity: more negations in {more}"
    mine_neg, its_neg = clause_polarity(said), clause_polarity(source)
    if aligned[2] >= NEAR_COPY and len(mine_neg) == len(its_neg) and mine_neg != its_neg:
        # `does cover …, not only for …` where the source says `does not cover …, only for …`
        return "polarity: the negation moved to another clause"
    ours, its = relations(said), relations(source)
    for r in sorted(ours - its):
        rival = sorted((_OPPOSITE[r] & its) - ours)
        if rival:
            return f"condition: {r} where the source says {rival[0]}"
    scope = _swapped_scope(said, source) or _swapped_connective(said, source) or _swapped_words(said, source)
    if scope:
        return scope
    swapped = _swapped_operator(said, source)  # an operator in its opposite's place, wherever else both occur
    if swapped or aligned[2] < NEAR_COPY:
        return swapped or _one_span_changed(said, source)
    gained, lost = _changed(words(said), words(source))
    if gained and lost:
        return f"wording: {', '.join(sorted(gained))} where the source says {', '.join(sorted(lost))}"
    return None


@lru_cache(maxsize=65536)
def quantifiers(text: str) -> Counter[tuple[str, str]]:
    """(kind, word) of each quantifier of `text`: kind `all` or `some` (see the module doc)."""
    s = _fold(text)
    out: Counter[tuple[str, str]] = Counter()
    for w in _EN_WORD.findall(s):
        if w in _EN_ALL or w in _EN_SOME:
            out["all" if w in _EN_ALL else "some", w] += 1
    for run in cjk_runs(s):
        for w, _ in segment(run):
            kind = "all" if _CN_ALL.match(w) else "some" if _CN_SOME.match(w) else None
            if kind:
                out[kind, w] += 1
    return out


def _swapped_scope(said: str, source: str) -> str | None:
    """A quantifier of one kind the statement has where the source has one of the other that the statement
    lacks: `scope: every where the source says first, third`."""
    mine, theirs = quantifiers(said), quantifiers(source)
    gained, lost = mine - theirs, theirs - mine
    for kind, other in (("all", "some"), ("some", "all")):
        ours = sorted(w for k, w in gained if k == kind)
        its = sorted(w for k, w in lost if k == other)
        if ours and its:
            return f"scope: {', '.join(ours)} where the source says {', '.join(its)}"
    return None


def connectives(text: str) -> Counter[str]:
    """How often `text` joins two requirements with `and` and with `or`: a connective before an auxiliary or
    modal verb (`or have held`, `and must`), or in Chinese before a verb as jieba tags it (或持有, 并且持有).
    Between nouns (`digital content or subscriptions`) they list, and are not compared."""
    s = _fold(text)
    found = _EN_WORD.findall(s)
    out: Counter[str] = Counter(
        _EN_CONNECTIVES[w]
        for w, after in zip(found, found[1:], strict=False)
        if w in _EN_CONNECTIVES and after in _EN_AUX
    )
    for run in cjk_runs(s):
        cut = segment(run)
        out.update(
            _CN_CONNECTIVES[w]
            for (w, _), (_, tag) in zip(cut, cut[1:], strict=False)
            if w in _CN_CONNECTIVES and tag[0] == "v"
        )
    return out


def _swapped_connective(said: str, source: str) -> str | None:
    """`or` where the source says `and`, or the reverse: `condition: or where the source says and`."""
    mine, theirs = connectives(said), connectives(source)
    gained, lost = mine - theirs, theirs - mine
    if len(gained) == 1 and len(lost) == 1 and gained.keys() != lost.keys():
        return f"condition: {next(iter(gained))} where the source says {next(iter(lost))}"
    return None


NEGATION = "¬"  # a negation's place in `word_sequence`


@lru_cache(maxsize=65536)
def word_sequence(text: str) -> tuple[str, ...]:
    """`words` of `text` in the order they are written (a word as often as it occurs), and `NEGATION` where a
    negation stands (`by the installer, not by the homeowner`: what is negated is where it stands)."""
    out: list[str] = []
    for m in _WORD_OR_RUN.finditer(_fold(text)):
        run = m.group(0)
        if run.isascii():
            found = [NEGATION] if polarity(run) else sorted(content_tokens(run))
        else:
            found = [
                NEGATION if polarity(w) else w
                for w, tag in segment(run)
                if polarity(w) or (len(w) > 1 and tag[0] in _OPEN_CLASS)
            ]
        out.extend(f for w in found if (f := NEGATION if w == NEGATION else _form(w)) is not None)
    return tuple(out)


def passive_voice(text: str) -> bool:
    """Does `text` hold a passive clause: a form of `be` before a past participle (a word ending in -ed, -en,
    -wn, -t or -d, an adverb or `not` allowed between), or 被 受 遭?"""
    return bool(_PASSIVE.search(text))


def _swapped_words(said: str, source: str) -> str | None:
    """Two words that trade places around a third (`swapped: landlord and tenant`): each of the three once in
    both texts, one text has x … v … y where the other has y … v … x (the tenant pays the landlord, the
    landlord pays the tenant). A clause that only moves carries no word of the rest across; a text in the
    passive voice where the other is active puts its parties the other way round, so they are not compared."""
    if passive_voice(said) != passive_voice(source):
        return None
    mine, theirs = word_sequence(said), word_sequence(source)
    counts_m, counts_t = Counter(mine), Counter(theirs)
    once = [w for w in mine if counts_m[w] == 1 and counts_t[w] == 1]
    at_t = {w: theirs.index(w) for w in once}
    for k, v in enumerate(once):  # v between x and y in both texts, x and y the other way round
        x = next((w for w in once[:k] if at_t[w] > at_t[v]), None)
        y = next((w for w in once[k + 1 :] if at_t[w] < at_t[v]), None)
        if x is not None and y is not None:
            return f"swapped: {x} and {y}"
    return None


def _one_span_changed(said: str, source: str) -> str | None:
    """(Version 11) A statement that keeps its evidence's words but for one span it replaces, the words kept
    at least `SPAN_FRAME` of the longer text, says something else when the two spans differ in a word
    (`_changed`): `往返运费由用户自行承担` for `往返运费由衡州织美机械公司承担`, whose ratio is below
    `NEAR_COPY` because the span is long. Added or dropped words alone are not compared."""
    mine, theirs = _tokens(said), _tokens(source)
    ops = [op for op in SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if len(mine) - (i2 - i1) < SPAN_FRAME * max(len(mine), len(theirs)):
        return None
    gained, lost = _changed(words(" ".join(mine[i1:i2])), words(" ".join(theirs[j1:j2])))
    if gained and lost:
        return f"wording: {', '.join(sorted(gained))} where the source says {', '.join(sorted(lost))}"
    return None


def _tokens(text: str) -> list[str]:
    """Every word of `text` in order: English words as written, Chinese words as jieba cuts them."""
    out: list[str] = []
    for m in _WORD_OR_RUN.finditer(_fold(text)):
        run = m.group(0)
        out.extend([run] if run.isascii() else [w for w, _ in segment(run)])
    return out


def _changed(mine: frozenset[str], theirs: frozenset[str]) -> tuple[set[str], set[str]]:
    """The words only `mine` has and those only `theirs` has; a word inside another's (单位 in 用人单位), or a
    synonym of one the other text has (`thesaurus.synonymous`), is no change."""
    gained, lost = set(mine - theirs), set(theirs - mine)
    alike = [(w, v) for w in gained for v in lost if w in v or v in w or synonymous(w, v)]
    return gained - {w for w, _ in alike}, lost - {v for _, v in alike}


def added_words(statement: str, evidence: str, sources: frozenset[str]) -> frozenset[str]:
    """The words a near-copy of `evidence` adds that no source has (`sources`: their `words`), in the clauses
    it copies or in others it appends (`…, and the fee doubles at weekends`); empty for any other statement.
    A statement that copies its evidence and adds a word claims something the sources do not say."""
    aligned = _aligned(statement, evidence)
    if aligned is None or aligned[2] < NEAR_COPY:
        return frozenset()
    return frozenset(_changed(words(statement) - sources, words(aligned[1]))[0])


@lru_cache(maxsize=256)
def senses(vocabulary: frozenset[str]) -> frozenset[str]:
    """Every synset (`thesaurus.synsets`) some word of `vocabulary` (`words` of a text) belongs to."""
    return frozenset(code for w in vocabulary for code in synsets(w))


def grounding(statement: str, sources: frozenset[str]) -> float:
    """How grounded the least grounded clause of `statement` is: the share of its `words` the sources have
    (`sources`: their `words`), as such, inside or around one of theirs (单位, 用人单位), or as a synonym of
    one (their `senses`, read only for a word not found otherwise); 1 when no clause has
    `GROUNDED_CLAUSE_WORDS` words. A statement that matches its evidence but adds a clause of its own
    claims what the sources do not say."""
    shares = [
        1 - len(_unfound(own, sources)) / len(own)
        for clause in _CLAUSE_SEP.split(statement)
        if len(own := words(clause)) >= GROUNDED_CLAUSE_WORDS
    ]
    return min(shares, default=1.0)


class SourceClause(NamedTuple):
    """A clause of a source sentence, as `reversed_polarity` compares it."""

    text: str
    words: frozenset[str]  # `words(text)`
    negated: bool  # an odd `polarity`


def source_clauses(sentences: Sequence[str]) -> tuple[SourceClause, ...]:
    """The clauses of every sentence of `sentences`, computed once per set of sources."""
    return tuple(
        SourceClause(c.strip(), words(c), polarity(c) % 2 == 1)
        for s in sentences
        for c in _CLAUSE_SEP.split(s)
        if c.strip()
    )


def reversed_polarity(statement: str, clauses: Sequence[SourceClause]) -> str | None:
    """A clause of `statement` negated where the source clause it restates is not, or the reverse (version
    10): `the kennel cough jab is not required` for `dogs must also have received a kennel cough vaccine`.
    The clause it restates is the one of `clauses` (`source_clauses`) that holds the largest share of its
    `words`, as `grounding` finds them, at least `REVERSED_CLAUSE_SHARE`; a clause of fewer than
    `GROUNDED_CLAUSE_WORDS` words is not compared. Paraphrase may carry a negation in a word (`free` for
    `no charge`), so this grades support down (`OfflineJudge`) and never contradicts. Returns `<clause> /
    <source clause>`."""
    for clause in _CLAUSE_SEP.split(statement):
        own = words(clause)
        if len(own) < GROUNDED_CLAUSE_WORDS or not clauses:
            continue
        shares = [1 - len(_unfound(own, c.words)) / len(own) for c in clauses]
        best = max(range(len(clauses)), key=lambda i: (shares[i], -i))
        if shares[best] >= REVERSED_CLAUSE_SHARE and (polarity(clause) % 2 == 1) != clauses[best].negated:
            return f"{clause.strip()} / {clauses[best].text}"
    return None


def word_coverage(text: str, other: str) -> float:
    """The share of `text`'s `words` that `other` has, as such, inside or around one of its words, or as a
    synonym (as `grounding` finds them); 0 when `text` has none."""
    own = words(text)
    return len(found_words(text, other)) / len(own) if own else 0.0


def found_words(text: str, other: str) -> frozenset[str]:
    """The `words` of `text` that `other` has, as `word_coverage` finds them."""
    own = words(text)
    return own.difference(_unfound(own, words(other)))


def _unfound(own: frozenset[str], sources: frozenset[str]) -> list[str]:
    """The words of `own` that `sources` (`words`) has neither as such, nor inside or around one of its
    Chinese words (单位, 用人单位), nor as a synonym; the thesaurus is read only for a word not found
    otherwise."""
    unseen = [
        w for w in own if w not in sources and (w.isascii() or not any(w in v or v in w for v in sources))
    ]
    return [w for w in unseen if synsets(w).isdisjoint(senses(sources))]


@lru_cache(maxsize=65536)
def words(text: str) -> frozenset[str]:
    """The words a near-copy is compared by: English content words (`lexical.content_tokens`) stemmed by
    Snowball, and Chinese nouns, verbs, adjectives, names and abbreviations of two or more characters as
    `jieba.posseg` tags them; without numerals, unit words, negations and relation operators (their own
    rules compare them: `quantity_conflict`, `polarity`, `relations`)."""
    latin = [t for t in content_tokens(text) if t.isascii()]
    chinese = [w for run in cjk_runs(text) for w in _chinese_words(run)]
    return frozenset(f for w in (*latin, *chinese) if (f := _form(w)) is not None)


def _chinese_words(run: str) -> list[str]:
    """The nouns, verbs, adjectives, names and abbreviations of two or more characters of a run of Chinese, as
    `jieba.posseg` tags them, in order."""
    return [w for w, tag in segment(run) if len(w) > 1 and tag[0] in _OPEN_CLASS]


def _form(word: str) -> str | None:
    """The form `words` compares a word by, its Snowball stem if English; None for a negation, a relation
    operator, a numeral or a unit word (their own rules compare them)."""
    if polarity(word) or relations(word) or _numeral_or_unit(word):
        return None
    return stem(word) if word.isascii() else word


@lru_cache(maxsize=65536)
def support_tokens(text: str) -> frozenset[str]:
    """The tokens a statement's lexical match with a source counts (SPEC §3): content tokens stemmed by
    Snowball, without numerals and unit words, plus each fact's value key (its token when it has none), so
    `Bookings … two days ahead` shares `book` and `time:172800` with `book … 48 hours beforehand`."""
    out = {stem(t) if t.isascii() else t for t in content_tokens(text) if not _numeral_or_unit(t)}
    out.update(f.value or f.token for f in facts(text) if f.kind not in ("title", "quote"))
    return frozenset(out)


def _numeral_or_unit(token: str) -> bool:
    """A number written in digits, English or Chinese numerals, or a unit word: compared by value
    elsewhere."""
    if token.isascii():
        return token[0].isdigit() or words_number([token]) is not None or unit_of(token) is not None
    return any(c in _CN_NUMERALS for c in token) or token in CN_UNITS
