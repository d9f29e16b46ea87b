"""What a question asks for, and what a text says beyond the question's own words (SPEC §3 relevance).

    ask("How long may a licence stay abroad?")          # -> "duration"
    ask("郑和第一次下西洋是在哪一年？")                   # -> "time"
    ask("Does requests set a default timeout?")         # -> "polar"
    states("duration", "最长为六个月")                   # -> True
    beyond("How long may a licence stay abroad?", "A licence may stay abroad for 5 years.")
    # -> "A  may   for 5 years."

Relevance must reward answering, not repeating: a text on another facet of the question's
subject shares the question's words as much as the text that answers it. Two general
mechanisms read what is left:

- **The kind of value asked for** comes from the interrogative, a closed class of words:
  `duration` (how long / how quickly / how soon / how often, how many days …, 多久,
  多长时间, 多少天, 几个月 …), `time` (a fronted `when`, what year / date / time / day,
  何时, 什么时候, 哪一年, 哪些时段, 哪段时间, 几点 …), `money` (how much money, how many
  dollars …, 多少钱, 多少元 …: currency units from the unit table), `amount` (how much / how
  many / how far …, what
  percentage / proportion, 多少, 几 + a classifier, 多大 …) and `polar` (a question opened by
  an auxiliary or modal verb, 是否, 能否, 吗 …). Time units are the unit table's
  (`quantities.unit_of`). English `when` counts only where a question word stands (at the
  start of the question or of a clause): `What happens when …` asks no time.
- **What a text says beyond the question** is the text with every word whose content
  tokens (`lexical.content_tokens`) the question has removed; Chinese runs are cut into words
  by jieba (`entities.segment`). For a polar question the text is kept whole: restating the proposition is how
  one answers it.

`states(kind, text)`: a `duration` is a fact whose value is a time (or a rate over time) or a
range of times,
a `time` a date, a clock time, a year (4 digits, 1000–2999), a weekday or a month name, `money`
an amount of a currency, an
`amount` any number, quantity, percentage or range (`facts.facts`); `polar` and no kind are
always stated.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ragtrack.nlp.entities import segment
from ragtrack.nlp.facts import UNIT_CODES, facts
from ragtrack.nlp.lexical import content_tokens
from ragtrack.nlp.quantities import CN_UNITS, unit_of

__all__ = ["ask", "beyond", "relevance_text", "states"]

_TIME_FAMILIES = ("time", "business_time")
_TIME_CODES = frozenset(
    code
    for word, code in UNIT_CODES.items()
    if (unit := unit_of(word)) is not None and unit[0] in _TIME_FAMILIES
)  # the unit codes a quantity or range token of a duration ends with (`7d`, `10-20wd`)
_CN_TIME_UNITS = "|".join(
    re.escape(u)
    for u in sorted(CN_UNITS, key=len, reverse=True)
    if (unit := unit_of(u)) is not None and unit[0] in _TIME_FAMILIES
)
# where an English question word stands: the start of the question or of a clause, after a preposition
_EN_OPEN = r"(?:^|[,;:]\s*|\b(?:and|or|but)\s+)(?:(?:in|within|after|for|by|at|on|to|from|of|until)\s+)?"
_EN_DURATION = re.compile(rf"{_EN_OPEN}how\s+(?:long|quickly|soon|often|frequently)\b")
_EN_HOW_MANY = re.compile(rf"{_EN_OPEN}how\s+many\s+([a-z]+(?:\s+[a-z]+)?)")
_EN_TIME = re.compile(rf"{_EN_OPEN}(?:when\b|(?:what|which)\s+(?:year|date|day|month|time|hour)s?\b)")
_EN_AMOUNT = re.compile(
    rf"{_EN_OPEN}(?:how\s+(?:much|many|far|old|big|large|high|tall|heavy|deep|wide)\b"
    r"|what\s+(?:percentage|proportion|fraction|share|amount|sum)\b)"
)
_EN_POLAR = re.compile(
    r"^(?:is|are|was|were|am|do|does|did|can|could|may|might|must|shall|should|will|would|has|have|had)\b"
)
_ZH_DURATION = re.compile(f"多久|多长时间|多少时间|(?:多少|几)(?:个)?(?:{_CN_TIME_UNITS})")
_ZH_TIME = re.compile(
    "何时|什么时候|什么时间|什么时段|哪一?(?:年|天|日|月)|哪个月|几[月号点]"
    "|哪(?:些|个|一)?段?(?:时段|时间段|时间|时候|时期)"
)
_CN_MONEY_UNITS = "|".join(
    re.escape(u)
    for u in sorted(CN_UNITS, key=len, reverse=True)
    if (unit := unit_of(u)) is not None and unit[0].startswith("currency")
)
_ZH_MONEY = re.compile(f"多少钱|(?:多少|几)(?:{_CN_MONEY_UNITS})")
_EN_MONEY = re.compile(rf"{_EN_OPEN}how\s+much\s+money\b")
_ZH_AMOUNT = re.compile("多少|几[^\\s，。？?、]|多[大高远重宽深长]")
_ZH_POLAR = re.compile("是否|能否|可否|有没有|是不是|能不能|可不可以|会不会|吗\\s*[？?]?\\s*$")

_YEAR = re.compile(r"(?<!\d)[12]\d{3}(?!\d)")
_CALENDAR = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|june|july"
    r"|august|september|october|november|december|weekday|weekend|[ap]\.?m\.?)s?\b"
    r"|(?:周|星期|礼拜)[一二三四五六日天]|[上下]午|凌晨|傍晚|[零一二三四五六七八九十\d]+(?:月|号|点|时)"
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


@lru_cache(maxsize=4096)
def ask(question: str) -> str | None:
    """The kind of value `question` asks for: `duration`, `time`, `money`, `amount`, `polar` or None (see the
    module doc)."""
    q = _fold(question)
    if _EN_DURATION.search(q) or _ZH_DURATION.search(q):
        return "duration"
    for m in _EN_HOW_MANY.finditer(q):
        for words in (m.group(1), m.group(1).split()[0]):
            unit = unit_of(words)
            if unit is not None and unit[0] in _TIME_FAMILIES:
                return "duration"
    if _EN_TIME.search(q) or _ZH_TIME.search(q):
        return "time"
    if _EN_MONEY.search(q) or _ZH_MONEY.search(q):
        return "money"
    for m in _EN_HOW_MANY.finditer(q):
        unit = unit_of(m.group(1).split()[0])
        if unit is not None and unit[0].startswith("currency"):
            return "money"
    if _EN_AMOUNT.search(q) or _ZH_AMOUNT.search(q):
        return "amount"
    if _EN_POLAR.search(q) or _ZH_POLAR.search(q):
        return "polar"
    return None


def states(kind: str | None, text: str) -> bool:
    """Does `text` state a value of `kind` (see the module doc)?"""
    if kind in (None, "polar"):
        return True
    found = [f for f in facts(text) if f.kind not in ("title", "quote", "article")]
    if kind == "duration":
        return any(
            "time" in (f.value or "").split(":")[0]  # time, business_time, a rate per time
            or (f.kind == "range" and f.token.lstrip("0123456789.-") in _TIME_CODES)
            for f in found
        )
    if kind == "money":
        return any((f.value or "").startswith("currency") for f in found)
    if kind == "time":
        return any(f.kind in ("date", "time") for f in found) or bool(
            _YEAR.search(text) or _CALENDAR.search(_fold(text))
        )
    return bool(found)


def _words(text: str) -> list[str]:
    """`text` cut into words (Latin words whole, Chinese runs by jieba) and the characters between them."""
    out: list[str] = []
    pos = 0
    for m in re.finditer(r"[\u3400-\u4dbf\u4e00-\u9fff]+|[^\W_]+(?:['’.\-][^\W_]+)*", text):
        out.append(text[pos : m.start()])
        run = m.group()
        out.extend([w for w, _ in segment(run)] if _CJK.match(run) else [run])
        pos = m.end()
    out.append(text[pos:])
    return out


@lru_cache(maxsize=8192)
def beyond(question: str, text: str) -> str:
    """`text` without the words `question` has: every word whose content tokens are all among the
    question's."""
    asked = content_tokens(question)
    kept = []
    for w in _words(text):
        tokens = content_tokens(w) if w.strip() else frozenset()
        kept.append(" " if tokens and tokens <= asked else w)
    return "".join(kept)


def relevance_text(question: str, text: str) -> str:
    """The text relevance reads against `question`: `text` itself for a polar question, else `beyond`."""
    return text if ask(question) == "polar" else beyond(question, text)
