"""Fact tokens: the checkable facts of a text, normalised so that equal facts compare equal (SPEC §3).

    facts("退款在七日内到账，依据第十二条")   # -> [Fact(第12条), Fact(7d)]
    facts("Refunds arrive within 7 days.")  # -> [Fact(7d)]

A statement's facts must all occur in the text that supports it (`missing_fact`), so an
answer that copies its source with one number changed is not supported. Kinds, in the
order they are taken from the text (a span taken by one kind is not read again):

- `article`: legal-article references: `第十二条` / `第12条` → `第12条` (also 款 项 章 节
  编); `Article 12`, `Art. 12` → `article 12`; `Section 3.2`, `§ 3.2` → `section 3.2`.
- `title`: a name in `《…》` → `《…》`; `quote`: a name of at most 30 characters in
  double quotes (`"…"`, `“…”`, `「…」`, `『…』`) → `"…"`. Both are matched by containment
  of their inner text in the normalised supporting text, brackets or not.
- `date`: `2023-05-01`, `2023/5/1`, `2023年5月1日`, `May 1, 2023`, `1 May 2023` →
  `2023-05-01`; `2023年5月`, `May 2023` → `2023-05`; `5月1日`, `May 1` → `05-01`.
  A date also provides its year and month (`2023`, `2023-05`) to statements.
- `time`: `9:30` → `9:30`; a clock time with its period (`8 pm`, `8:30 a.m.`, `下午5时30分`,
  `晚上八点半`, `9时`, `3点钟`) → `20:00`, `8:30`, `17:30`, `20:30` …, providing the hour as
  written (`8`); a bare `N点` (`第3点`, `三点五`) is no time.
- `rate`: an amount per a unit or per an amount of one (`112.5 g per litre`, `22.5 g of sugars per
  100 g`, `$5 a month`, `每亩108元`, `108元/亩`) → `112.5g/l`; by value when both units have one
  (`22.5 g per 100 g` = `22.5%`); provides both amounts.
- `range`: `5-10`, `5–10`, `5~10`, `5至10`, `5到10`, `三至五天`, `5 to 10`, `between 5 and 10`, with an
  optional unit after the second number → `5-10d`; provides both ends with and without the unit, and
  by value (`3至12个月` agrees with `三个月到一年`).
- `percent`: `3.5%`, `3.5 percent`, `百分之三点五`, `三成五` (成: tenths of a whole) → `3.5%`, `35%`;
  `一半`, `半数` → `1/2`; provides the bare number.
- `quantity`: a number with a unit → `<number><unit>`, units normalised across languages
  (`七日`, `7天`, `7 days`, `7-day` → `7d`; `7个工作日`, `7 business days` → `7wd`; `$1,000`,
  `1000美元`, `1,000 dollars` → `1000usd`); provides the bare number, its value key and, for
  months and years, its calendar key (`quantities.calendar_key`: `三个月` = `90天`). (Version 12) A
  text that names a period without a number provides one of it (`provided_keys`): 每月, 每个工作日,
  年费, 年度, `monthly`, `annual`, `each year` provide what `一个月`, `一个工作日`, `一年`, `one month`,
  `one year` do; `twice` and `thrice`, two and three times. 斤 (500 g) and cubic metres are units.
- `number`: any other number → its digits.

Numbers: digits with `,` thousands separators (`1,000` = `1000`) and decimals as written
(`3.10` stays `3.10`: version numbers), scaled by `dozen`, `thousand`, `million`, `billion`,
`万`, `亿` (`100万` = `1000000`); Chinese numerals (`十二` = `12`, `两` = `2`, `三点五` =
`3.5`, with 百 千 万 亿); English number words (`twenty` = `20`, `twenty-five`,
`one hundred and five`). A number glued to Latin letters (`L6`, `3D`) is an identifier,
not a fact. **Decisions** (a word that is usually not a number must not become a fact
that every other text then lacks): the Chinese numeral `一` and the word `one` count only
as part of a larger number or directly before a unit (`一年`, `one day`); a Chinese
numeral run counts only before a unit or classifier, after `第` or `百分之` (version 11: any other
run still provides its number to a statement, `provided_keys`); a number after `第`
before a unit is an ordinal, no amount (`第二天`), and so is `上一年` (the year before) and a
compound ordinal (`twenty-fifth`, not twenty fifths). The article
`a`/`an` is the numeral one before a singular unit, or before `full`, `whole`, `entire`,
`single`, `extra`, `further`, `additional` or `complete` and one (`a year`, `a full year`, `an
extra month` → `1y`, `1mo`); not after a frequency or a distributive word (`twice a day`,
`three times a week`, `90 days in a year`, `per`, `each`, `every`, a number and one word:
`five finds a day`: there it means per), not
`a second` (the ordinal), not before a number word or ordinal (`a half hour`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from ragtrack.nlp.quantities import calendar_key, value_key
from ragtrack.nlp.text import norm

__all__ = [
    "UNIT_CODES",
    "Fact",
    "cn_number",
    "fact_tokens",
    "facts",
    "missing_fact",
    "provided_keys",
    "words_number",
]


class Fact(BaseModel):
    """One fact of a text: its kind, its normalised token and what it provides to statements."""

    model_config = ConfigDict(frozen=True)

    kind: str  # article | title | quote | date | time | rate | range | percent | quantity | number
    token: str  # normalised: equal facts have equal tokens
    keys: frozenset[
        str
    ]  # tokens this fact supports in a statement (itself, its value key, e.g. the bare number)
    parts: tuple[str, ...] = ()  # a range in a statement also agrees when the support has both ends
    # an amount with a unit by value (`ragtrack.nlp.quantities.value_key`): `3天` = `72 hours`
    value: str | None = None
    # months or years by the civil calendar (`quantities.calendar_key`): `3个月` = `90天`
    calendar: str | None = None

    approx: bool = False  # hedged (`about 10 days`, `三个月左右`): it agrees with amounts near it
    # a rate's amount by value (`88元` of `每人88元`): a text that writes it with no per-unit agrees
    amount: str | None = None

    def provided_by(self, keys: frozenset[str]) -> bool:
        """Do `keys` (`provided_keys` of a text) hold this fact: its token, value or calendar key, or both
        ends of a range; (version 11) a rate's amount where the text has no rate of that amount (what it
        is per is unknown there, not another unit), an amount's number before a word no unit table reads
        (`24 CPD hours` provides `24 hours`); or, when this fact or the key is hedged, an amount within
        `APPROXIMATE` of it?"""
        if {self.token, self.value, self.calendar} & keys or (
            self.parts and all(p in keys for p in self.parts)
        ):
            return True
        if self.amount and self.amount in keys and f"{RATE_OF}{self.amount}" not in keys:
            return True  # (version 11) the text writes the amount, but not what it is per: unknown
        if self.kind in ("quantity", "percent") and any(f"{UNREAD_UNIT}{k}" in keys for k in self.keys):
            return True  # (version 11) the text writes the number before a unit we do not read: unknown
        mine = [k for k in (self.value, self.calendar) if k]
        if not mine:  # no amount by value (a bare number, a date): nothing to be near
            return False
        near = [k.removeprefix("~") for k in keys if ":" in k and (self.approx or k.startswith("~"))]
        return any(_near(a, b) for a in mine for b in near)


APPROXIMATE = Decimal("0.1")  # a hedged amount agrees with one that differs by at most this share
# Hedges of an amount: before it (about, 约, 将近) or after it (or so, 左右, 上下)
_HEDGE_BEFORE = re.compile(
    r"(?:\b(?:about|around|roughly|approximately|approx\.|nearly|almost|circa|close to|some)\s+"
    r"|约|大约|大概|大致|将近|接近|差不多)$"
)
_HEDGE_AFTER = re.compile(r"^(?:\s+or so\b|\s*(?:左右|上下))")


def _near(a: str, b: str) -> bool:
    """Are two value keys (`<family>:<amount>`) of one family within `APPROXIMATE` of each other?"""
    fa, _, va = a.partition(":")
    fb, _, vb = b.partition(":")
    if fa != fb:
        return False
    try:
        x, y = Decimal(va), Decimal(vb)
    except ArithmeticError:
        return False
    return abs(x - y) <= APPROXIMATE * max(abs(x), abs(y))


# ------------------------------------------------------------------ numbers

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_NUM = "零〇一二两三四五六七八九十百千万亿"
_CN_SCALES = {"十": 10, "百": 100, "千": 1000, "万": 10_000}
_NOT_ONE_AFTER = frozenset("哪这那每同某任单唯统逐第")

_EN_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_EN_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_EN_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_SCALE_WORDS = {
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "万": 10_000,
    "亿": 100_000_000,
}


def cn_number(s: str) -> int | None:
    """The integer a run of Chinese numerals writes (`十二` = 12, `三千零五` = 3005), read by `cn2an`; or
    None.

    A run of bare digits without 十百千 (`二〇二三`) is read digit by digit (2023).
    """
    if not s or any(c not in _CN_NUM for c in s):
        return None
    import warnings

    import cn2an

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cn2an warns before it raises on a malformed run
        try:
            value = cn2an.cn2an(s, "normal")
        except (ValueError, KeyError, IndexError):
            return None
    return int(value)


def words_number(words: list[str]) -> int | None:
    """The integer a sequence of English number words writes (`twenty five` = 25), or None."""
    total, current, seen, prev = 0, 0, False, ""
    for w in words:
        if w == "and":
            if prev not in _EN_SCALES:
                return None
            prev = w
            continue
        prev = w
        if w in _EN_UNITS:
            current += _EN_UNITS[w]
        elif w in _EN_TENS:
            current += _EN_TENS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in _EN_SCALES:
            total += (current or 1) * _EN_SCALES[w]
            current = 0
        else:
            return None
        seen = True
    return total + current if seen else None


def _fmt(value: Decimal) -> str:
    """A number's canonical text: no exponent, no trailing zeros after a scaling."""
    text = format(value.normalize(), "f")
    return text


def _digits(s: str) -> str:
    """Digits as written, thousands separators removed (decimals kept as written: `3.10`)."""
    return s.replace(",", "")


# ------------------------------------------------------------------ units

_CLASSIFIERS = "座辆台间套只头本户"  # classifiers of things counted (量词): 七座 = 7座; no unit a rate is per
# unit spelling (after NFKC + casefold) -> canonical unit code
_UNITS: dict[str, str] = {}  # unit word as written -> the code quantity tokens end with
UNIT_CODES = _UNITS
for _code, _spellings in {
    "wd": ["个工作日", "工作日", "business days", "business day", "working days", "working day"],
    "ww": ["个工作周", "工作周", "business weeks", "business week", "working weeks", "working week"],
    "d": ["个自然日", "自然日", "日龄", "日", "天", "days", "day"],
    "w": ["个星期", "星期", "周龄", "周", "weeks", "week"],
    "fortnight": ["fortnights", "fortnight"],
    "decade": ["decades", "decade"],
    "century": ["个世纪", "世纪", "centuries", "century"],
    "mo": ["个月", "月龄", "months", "month"],
    "q": ["个季度"],  # 一季度 is the first quarter (Q1), 一个季度 one quarter
    "y": ["年", "years", "year"],
    "h": ["个小时", "小时", "hours", "hour", "hrs", "hr"],
    "min": ["分钟", "minutes", "minute", "mins", "min"],
    "s": ["秒钟", "秒", "seconds", "second", "secs", "sec"],
    "usd": ["美元", "dollars", "dollar", "usd"],
    "cny": ["元人民币", "元", "块钱", "块", "人民币", "yuan", "rmb", "cny"],
    "eur": ["欧元", "euros", "euro", "eur"],
    "mg": ["毫克", "milligrams", "milligram", "mg"],
    "g": ["克", "grams", "gram", "g"],
    "kg": ["千克", "公斤", "kilograms", "kilogram", "kg"],
    "ml": ["毫升", "milliliters", "millilitres", "milliliter", "millilitre", "ml"],
    "l": ["升", "liters", "litres", "liter", "litre"],
    "km": ["公里", "千米", "kilometers", "kilometres", "kilometer", "kilometre", "km"],
    "m": ["米", "meters", "metres", "meter", "metre"],
    "cm": ["厘米", "centimeters", "centimetres", "centimeter", "centimetre", "cm"],
    "mm": ["毫米", "millimeters", "millimetres", "millimeter", "millimetre", "mm"],
    "t": ["吨", "tonnes", "tonne"],
    "cm2": [
        "平方厘米",
        "square centimeters",
        "square centimetres",
        "square centimeter",
        "square centimetre",
        "cm²",
        "cm2",
    ],
    "m2": ["平方米", "square meters", "square metres", "square meter", "square metre", "m²", "m2"],
    "km2": [
        "平方公里",
        "平方千米",
        "square kilometers",
        "square kilometres",
        "square kilometer",
        "square kilometre",
        "km²",
        "km2",
    ],
    "ha": ["公顷", "hectares", "hectare"],
    "mu": ["亩"],
    "jin": ["斤"],
    "m3": ["立方米", "cubic meters", "cubic metres", "cubic meter", "cubic metre", "m³", "m3"],
    "tb": ["terabytes", "terabyte", "tb"],
    "gb": ["gigabytes", "gigabyte", "gb"],
    "mb": ["megabytes", "megabyte", "mb"],
    "kb": ["kilobytes", "kilobyte", "kb"],
    "x": ["倍", "times"],
    "pp": ["个百分点", "百分点", "percentage points", "percentage point"],
    "people": ["个人", "名", "位", "人", "people", "persons", "employees"],
    "age": ["周岁", "岁"],
    "item": ["次", "项", "件", "份", "家", "所", "种", "条", "页", "张", *_CLASSIFIERS],
    "kwh": ["千瓦时", "kilowatt-hours", "kilowatt hours", "kilowatt-hour", "kilowatt hour", "kwh"],
    "kw": ["千瓦", "kilowatts", "kilowatt", "kw"],
    "watt": ["瓦", "watts", "watt"],
    "mw": ["megawatts", "megawatt"],
}.items():
    for _sp in _spellings:
        _UNITS[_sp] = _code
_UNITS_LONGEST_FIRST = sorted(_UNITS, key=len, reverse=True)
_UNITS_CN = [u for u in _UNITS_LONGEST_FIRST if not u.isascii()]
_UNIT_ALT = "|".join(re.escape(u) for u in _UNITS_LONGEST_FIRST)
_UNIT_ALT_CN = "|".join(re.escape(u) for u in _UNITS_CN)
_CURRENCY_PREFIX = {"$": "usd", "¥": "cny", "€": "eur", "us$": "usd"}
_PERMILLE = ("‰", "per mille", "permille")
_ORDINALS = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "quarter": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "twelfth": 12,
    "twentieth": 20,
    "hundredth": 100,
    "thousandth": 1000,
}

# ------------------------------------------------------------------ patterns (on NFKC + casefold text)

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # 1,000 | 3.5 | 12
_CNN = f"[{_CN_NUM}]+(?:点[{_CN_NUM[:-5]}]+)?"  # 十二 | 三点五
_NUM_WORD = r"(?:" + "|".join(sorted([*_EN_UNITS, *_EN_TENS, *_EN_SCALES], key=len, reverse=True)) + r")\b"
_WORD_NUM = rf"{_NUM_WORD}(?:[\s-]+(?:and[\s-]+)?{_NUM_WORD})*"  # twenty-five | one hundred and five
_NOT_AFTER_LETTER = r"(?<![a-z0-9_.])"

_ARTICLE_CN = re.compile(f"第([0-9]+|[{_CN_NUM}]+)(条|款|项|章|节|编)")
_ARTICLE_EN = re.compile(r"(?<![a-z])(article|art\.|section|sec\.|§)\s*(\d+(?:\.\d+)*)", re.IGNORECASE)
_TITLE = re.compile(r"《([^《》]{1,60})》")
_QUOTE = re.compile(r"\"([^\"\n]{1,30})\"|“([^”\n]{1,30})”|「([^」\n]{1,30})」|『([^』\n]{1,30})』")
_DATE_ISO = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_DATE_CN = re.compile(
    r"(?:(\d{4}|[零〇一二三四五六七八九]{4})年)?(\d{1,2}|[一二三四五六七八九十]{1,3})月(?!龄)"
    r"(?:(\d{1,2}|[一二三四五六七八九十]{1,3})[日号]|(底|末))?"
)  # 3月底, 3月末: the month's last day
_YEAR_END_CN = re.compile(r"(?<!\d)(\d{4})年(?:年底|年末|底)")  # 2057年年底 = 2057-12-31
_DATE_EN_OF = re.compile(
    rf"\b(?:the\s+)?(first|last\s+day|end|\d{{1,2}}(?:st|nd|rd|th))\s+of\s+(?:the\s+following\s+|next\s+)?"
    rf"({_MON})\b(?:,?\s+(\d{{4}}))?"
)  # the first of February, the 3rd of May, the end of January (its last day)
_DATE_EN_MDY = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b")
_DATE_EN_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MON})\.?(?:,?\s+(\d{{4}}))?\b")
_DATE_EN_MY = re.compile(rf"\b({_MON})\.?,?\s+(\d{{4}})\b")
_YEAR_CN = re.compile(r"(?<!\d)(\d{4})年(?!\d)")
_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")
_CLOCK_EN = re.compile(r"(?<![\d:.])(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?")  # 8 pm, 8:30 a.m.
_CN_HOUR = f"\\d{{1,2}}|[{_CN_NUM[:11]}十]{{1,3}}"
_CLOCK_CN = re.compile(
    f"(?<!第)(凌晨|早上|早晨|上午|中午|午后|下午|傍晚|晚上|夜间|夜里|(?<![最较更提太])早|(?<![最较更太傍])晚)?"
    f"({_CN_HOUR})(?:(时)|点)"
    f"(?:({_CN_HOUR}|[{_CN_NUM[:11]}十]+)分|(半)|钟|整)?(?![\\d{_CN_NUM}])"
)  # 下午5时30分, 晚上八点半, 9时, 3点钟; a bare N点 (the third point, 三点五 = 3.5) is no time
_PM_CN = frozenset({"午后", "下午", "傍晚", "晚上", "夜间", "夜里", "晚"})
_CLOCK_PERIOD_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(\d{{1,2}}|{_WORD_NUM})(?::(\d{{2}}))?\s+in\s+the\s+(morning|afternoon|evening)\b"
)  # four in the afternoon = 16:00
_NOON = re.compile(r"正午|午夜|子夜|\b(?:noon|midday|midnight)\b")  # 12:00, or 0:00 for midnight
_FRACTION_CN = re.compile(
    f"({_CNN}|{_NUM})分之({_CNN}|{_NUM})"
)  # 百分之三 = 3%, 千分之三 = 3‰, 三分之一 = 1/3
_DISCOUNT_CN = re.compile(
    r"(?<![0-9.零〇一二两三四五六七八九十百千])([一二三四五六七八九]{1,2}|[1-9](?:\.[0-9])?|[1-9][0-9])折(?![旧合扣算叠])"
)  # 八折 = 80%, 九五折 = 95%, 8.5折 = 85%: a price in tenths (two digits: hundredths) of the full one
_TENTHS_OF_WHOLE_CN = re.compile(
    f"([一二三四五六七八九十])成([一二三四五六七八九](?![{_CN_NUM}]))?"
)  # 九成 = 90%, 七成五 = 75%: 成 counts tenths of a whole when jieba reads 九成 as one numeral
_ORDINAL = "|".join(
    sorted((*_ORDINALS, *(f"{o}s" for o in _ORDINALS if o != "halves")), key=len, reverse=True)
)
_FRACTION_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(a|an|{_WORD_NUM}|\d+)[\s-]+({_ORDINAL})\b(?!-)"
)  # a third, two-thirds; a bare ordinal (`the third Friday`) is no fraction
_FRACTION_OF_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(a|an|{_WORD_NUM}|\d+)[\s-]+({_ORDINAL})\s+of\s+(?:a|an|one)\s+((?:{_UNIT_ALT})(?![a-z]))"
)  # a quarter of a kilogram = 0.25 kg, two thirds of an hour
# An age: `21 years old`, `21 years of age`, `aged 21`, `from age 21`, `21 or older` (older speaks of age)
_AGE_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(?:aged?\s+({_NUM}|{_WORD_NUM})"
    rf"|({_NUM}|{_WORD_NUM})(?:[\s-]+(?:years?|yrs?)[\s-]+(?:old|of\s+age)|\s+(?:years?\s+)?or\s+older))"
)
_HALF_ALONE_EN = re.compile(r"(?<![a-z-])half(?![a-z-])")  # half the sky: `half` is no ordinal
_HALF_CN = re.compile(
    f"([{_CN_NUM}]+|\\d+)(?:个半({_UNIT_ALT_CN}|月)|({_UNIT_ALT_CN})半)"
)  # 一年半, 两个半小时
_HALF_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(?:(a|an|one|{_WORD_NUM}|\d+)\s+({_UNIT_ALT})\s+and\s+a\s+half|half\s+(?:a|an)\s+({_UNIT_ALT}))\b"
)  # a year and a half, half a year
_AND_A_HALF_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(\d+|{_WORD_NUM})\s+and\s+a\s+half(?:\s+(thousand|million|billion))?"
    rf"(?:[\s-]+((?:{_UNIT_ALT})(?![a-z])))?"
)  # two and a half years, seven and a half thousand euros
_HALF_ALONE_CN = re.compile(
    f"(?<![{_CN_NUM}0-9个上下前后])半个?({_UNIT_ALT_CN}|月)"
)  # 半年, 半个月, 半小时; 上半月, 下半年 name a half of the period, not an amount
_HALF_WITHIN_CN = re.compile(
    f"(?<=[前后])半个?({_UNIT_ALT_CN}|月)(?=以内|之内|内)"
)  # 签收后半个月内: within half a month after it (后半个月 alone is the latter half of a month)
_MAJOR_CURRENCY_EN = "|".join(
    u
    for u in _UNITS_LONGEST_FIRST
    if _UNITS[u] in ("usd", "eur", "gbp", "jpy", "hkd") and u.isalpha() and u.isascii()
)
_MAJOR_MINOR_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}(\d+|{_WORD_NUM})\s+({_MAJOR_CURRENCY_EN})\s+(\d{{1,2}}|{_WORD_NUM})"
    rf"(?![\w.,%‰-]|\s*(?:{_UNIT_ALT})(?![a-z]))"
)  # four euros fifty = 4.50 euros: a number after the major unit, before no unit, counts its hundredths
_JIAO_CN = re.compile(
    f"(?:([{_CN_NUM}]+|\\d+)(?:元|块))?([一二两三四五六七八九]|\\d)角"
)  # 三角, 五元三角: 角 is a tenth of a yuan (when jieba reads 三角 as a numeral word, not in 三角形)
_UNREAD_CN_NUMERAL = re.compile(f"(?<!第)[{_CN_NUM}]+")  # in what the facts left of a text (`_read`)
RATE_OF = "rate-of:"  # a provided key: a rate of this amount (its value key) is in the text
UNREAD_UNIT = "unread-unit:"  # a provided key: this number stands before a word no unit table reads
_HALF_OF_WHOLE_CN = re.compile(f"(?<![{_CN_NUM}0-9])一半|半数")  # half of a whole: 1/2, as `half` is
_TENTHS_CN = re.compile(
    f"([{_CN_NUM}]+|\\d+)(米|块|元)([一二三四五六七八九])(?![{_CN_NUM}点个]|{_UNIT_ALT_CN})"
)  # 一米二
_AMOUNT = (
    rf"(?:(us\$|\$|¥|€)\s?)?(?:({_NUM})|{_NOT_AFTER_LETTER}({_WORD_NUM})|({_CNN}))"
    rf"(?:\s?(thousand|million|billion|万|亿))?"
)
_TIME_UNIT = "|".join(
    re.escape(u)
    for u in sorted(_UNITS, key=len, reverse=True)
    if _UNITS[u] in ("y", "mo", "w", "d", "h", "min", "s")
)
_COMPOUND_TIME = re.compile(
    rf"{_NOT_AFTER_LETTER}({_NUM}|{_WORD_NUM}|{_CNN})\s*({_TIME_UNIT}|分(?=[0-9{_CN_NUM}]+秒))(?![a-z])\s*(?:,?\s*and\s+|零)?"
    rf"({_NUM}|{_WORD_NUM}|{_CNN})\s*({_TIME_UNIT})(?![a-z])"
)  # 1分30秒 = 90 s, one hour and 30 minutes = 90 min, 一年零三个月 = 15 months: a larger unit, then a smaller
_RANGE_UNIT = rf"(%|percent\b|(?:{_UNIT_ALT})(?![a-z]))?"
_BETWEEN = re.compile(
    rf"\bbetween\s+({_NUM}|{_WORD_NUM})\s+and\s+({_NUM}|{_WORD_NUM})(?![\d])\s*{_RANGE_UNIT}"
)
_RANGE = re.compile(
    rf"{_NOT_AFTER_LETTER}({_NUM}|{_CNN})\s*(?:-|–|—|~|～|至|到|\bto\b)\s*({_NUM}|{_CNN})(?![\d])\s*"
    rf"(%|percent\b|(?:{_UNIT_ALT})(?![a-z]|级))?"
)  # 5-10 days, 三至五天; a range's ends are compared by value (3至12个月 = 三个月到一年)
_QUANTITY = re.compile(
    rf"{_NOT_AFTER_LETTER}{_AMOUNT}(?:\s+or\s+(?:more|fewer|less|longer|shorter)(?=\s))?"
    rf"(?:[\s-]?(%|‰|percent\b|per cent\b|per mille\b|permille\b|(?:{_UNIT_ALT})(?![a-z]|级)))?"
)  # `a hundred or more hours` is 100 hours (and at least: `relations`); 二年级 is a grade, not two years
# `a year`, `an extra month`: the indefinite article is the numeral one before a singular unit (one
# adjective may stand between); taken after rates, so `$5 a month` stays a rate.
# After a frequency (`twice a day`, `three times a week`) `a` means per: no quantity.
_FREQUENCY = re.compile(
    rf"(?:\b(?:once|twice|thrice|times|in|per|each|every|(?:{_NUM}|{_WORD_NUM})\s+[a-z][a-z'-]*)|[0-9%‰])\s+$"
)  # `90 days in a year`; `five finds a day`, `9.9% a year`: an amount or a count before `a` makes it per
_ONE_UNIT_EN = re.compile(
    rf"\b(?:a|an)\s+"
    rf"(?:(full|whole|entire|single|extra|further|additional|complete)\s+)?((?:{_UNIT_ALT})(?![a-z-]))"
)
# A rate: an amount per a unit or per an amount (`112.5 g per litre`, `22.5 g of sugars per 100 g`,
# `$5 a month`, `每100毫升含糖11.25克`, `108元/亩`); up to three words may stand between the amount and
# `per`.
_RATE_EN = re.compile(
    rf"{_NOT_AFTER_LETTER}((?:us\$|\$|€)\s?)?({_NUM})[\s-]?((?:{_UNIT_ALT})(?![a-z]))?"
    rf"((?:\s+[a-z][a-z'-]*){{0,3}}?)"
    rf"\s*(?:\bper\b|/|\b(?:for |of )?every\b|\beach\b|\ba\b|\ban\b)\s*"
    rf"(?:({_NUM})\s*)?((?:{_UNIT_ALT})(?![a-z]))"
)
_PER_UNIT_CN = "|".join(re.escape(u) for u in _UNITS_CN if u not in _CLASSIFIERS)
_RATE_CN_PER_FIRST = re.compile(
    f"每({_NUM}|{_CNN})??({_PER_UNIT_CN})(?:(?!每)[\u4e00-\u9fff]){{0,6}}?(?<!第)({_NUM}|{_CNN})({_UNIT_ALT_CN})"
)  # the nearest 每 names the unit: 每人每年5000元 is 5000 yuan a year
_RATE_CN_SLASH = re.compile(f"({_NUM}|{_CNN})({_UNIT_ALT_CN})/({_NUM}|{_CNN})?({_UNIT_ALT_CN})")
_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+){2,})(?![\w]|\.\d)")


def _year(s: str) -> str:
    return s if s.isdigit() else str(cn_number(s))


def _last_day(year: str | None, month: int | None) -> int | None:
    """The last day of a month (February's 28th when the year is not given)."""
    if month is None or not 1 <= month <= 12:
        return None
    import calendar

    return calendar.monthrange(int(year) if year else 2001, month)[1]


def _day_of(day: str, year: str | None, month: int) -> int | None:
    """The day `the first of`, `the 3rd of`, `the end of`, `the last day of` a month names."""
    if day == "first":
        return 1
    if day[0].isdigit():
        return int(day[:-2])
    return _last_day(year, month)


def _small(s: str | None) -> int | None:
    if s is None:
        return None
    return int(s) if s.isdigit() else cn_number(s)


def _mask(text: str, span: tuple[int, int]) -> str:
    a, b = span
    return text[:a] + " " * (b - a) + text[b:]


def _amount(m: re.Match[str]) -> tuple[Decimal, bool] | None:
    """The value of `_AMOUNT`'s groups 1–5 and whether it was written in words/numerals."""
    digits, words, cn, scale = m.group(2), m.group(3), m.group(4), m.group(5)
    spelled = digits is None
    if digits is not None:
        value = Decimal(_digits(digits))
    elif words is not None:
        n = words_number(re.split(r"[\s-]+", words.strip(" -")))
        if n is None:
            return None
        value = Decimal(n)
    else:
        if "点" in cn:
            whole, frac = cn.split("点", 1)
            w = cn_number(whole)
            if w is None or not all(c in _CN_DIGITS for c in frac):
                return None
            value = Decimal(f"{w}.{''.join(str(_CN_DIGITS[c]) for c in frac)}")
        else:
            n = cn_number(cn)
            if n is None:
                return None
            value = Decimal(n)
    if scale:
        value *= _SCALE_WORDS[scale]
    return value, spelled


def _unit(u: str | None) -> str | None:
    if u is None:
        return None
    u = u.strip()
    if u in ("%", "percent", "per cent"):
        return "%"
    if u in _PERMILLE:
        return "‰"
    return _UNITS.get(u)


def facts(text: str | None) -> list[Fact]:
    """The fact tokens of `text`, in order of kind then position (see the module doc)."""
    return list(_read(text or "")[0])


@lru_cache(maxsize=65536)
def _read(text: str) -> tuple[tuple[Fact, ...], tuple[str, ...]]:
    """The facts of `text`, and the numbers of the Chinese numeral runs no fact read (version 11): each span
    a fact took is blanked, and a run left, but `一` alone and a run after 第, is read by `cn_number`."""
    s = unicodedata.normalize("NFKC", text).casefold()
    folded = s  # as written: `s` loses each span a kind takes
    out: list[Fact] = []
    span = (0, 0)  # of the match being read

    def add(
        kind: str,
        token: str,
        *extra: str,
        parts: tuple[str, ...] = (),
        value: str | None = None,
        calendar: str | None = None,
        amount: str | None = None,
    ) -> None:
        amounts = [k for k in (value, calendar) if k]
        approx = bool(
            amounts and (_HEDGE_BEFORE.search(folded, 0, span[0]) or _HEDGE_AFTER.match(folded[span[1] :]))
        )
        keys = frozenset((token, *extra, *amounts, *(f"~{k}" for k in amounts if approx)))
        out.append(
            Fact(
                kind=kind,
                token=token,
                keys=keys,
                parts=parts,
                value=value,
                calendar=calendar,
                approx=approx,
                amount=amount,
            )
        )

    def take(pattern: re.Pattern[str], fn) -> None:  # noqa: ANN001 - local helper
        nonlocal s, span
        for m in list(pattern.finditer(s)):
            span = m.span()
            if fn(m) is not False:
                s = _mask(s, m.span())

    def article_cn(m: re.Match[str]) -> None:
        n = m.group(1) if m.group(1).isdigit() else cn_number(m.group(1))
        add("article", f"第{n}{m.group(2)}")

    def article_en(m: re.Match[str]) -> None:
        word = "article" if m.group(1).startswith("art") else "section"
        add("article", f"{word} {m.group(2)}")

    def title(m: re.Match[str]) -> None:
        add("title", f"《{norm(m.group(1))}》")

    def quote(m: re.Match[str]) -> bool | None:
        inner = norm(next(g for g in m.groups() if g is not None))
        if not inner:
            return False
        add("quote", f'"{inner}"')
        return None

    def date(y: str | None, mo: int | None, d: int | None) -> bool | None:
        if mo is None or not 1 <= mo <= 12 or (d is not None and not 1 <= d <= 31):
            return False
        month = f"--{mo:02d}"  # every date provides its month, which a month alone (11月初) is
        if y and d:
            add("date", f"{y}-{mo:02d}-{d:02d}", f"{y}-{mo:02d}", y, f"{mo:02d}-{d:02d}", month)
        elif y:
            add("date", f"{y}-{mo:02d}", y, month)
        elif d:
            add("date", f"{mo:02d}-{d:02d}", month)
        else:
            add("date", month)
        return None

    def range_(m: re.Match[str]) -> bool | None:
        written = m.group(1, 2)
        read = [Decimal(_digits(g)) if g[0].isdigit() else _cn_amount(g.strip()) for g in written]
        ends = [e for e in read if e is not None]
        if len(ends) < 2 or (not m.group(3) and not written[0][0].isdigit()):
            return False  # a range of Chinese numerals or number words only before a unit, as an amount
        lo, hi = (_digits(g) if g[0].isdigit() else _fmt(e) for g, e in zip(written, ends, strict=True))
        unit, word = _unit(m.group(3)) or "", (m.group(3) or "").strip()
        values = [value_key(e, word) if word else None for e in ends]
        calendars = [calendar_key(e, word) if word else None for e in ends]
        ends_by = [v or f"{n}{unit}" for v, n in zip(values, (lo, hi), strict=True)]
        add(
            "range",
            f"{lo}-{hi}{unit}",
            f"{lo}-{hi}",
            lo,
            hi,
            f"{lo}{unit}",
            f"{hi}{unit}",
            *(k for k in (*values, *calendars) if k),
            parts=tuple(ends_by),
        )
        return None

    def clock(hour: int, minute: int, written: str) -> bool | None:
        if not (0 <= hour < 24 and 0 <= minute < 60):
            return False
        hour_as_written = [written] if written else []  # a number others may hold (noon has none)
        add("time", f"{hour}:{minute:02d}", *hour_as_written)
        return None

    def clock_en(m: re.Match[str]) -> bool | None:
        hour = int(m.group(1))
        if not 1 <= hour <= 12:
            return False
        return clock(hour % 12 + (12 if m.group(3) == "p" else 0), int(m.group(2) or 0), m.group(1))

    def clock_period_en(m: re.Match[str]) -> bool | None:
        hour = _en_amount(m.group(1))
        if hour is None or not 1 <= hour <= 12:
            return False
        pm = m.group(3) != "morning" and hour < 12
        return clock(int(hour) + (12 if pm else 0), int(m.group(2) or 0), str(hour))

    def clock_cn(m: re.Match[str]) -> bool | None:
        period, written = m.group(1), m.group(2)
        if not (period or m.group(3) or m.group(0).endswith(("分", "半", "钟", "整"))):
            return False
        hour = int(written) if written.isdigit() else cn_number(written)
        minute = 30 if m.group(5) else 0
        if m.group(4):
            minute = int(m.group(4)) if m.group(4).isdigit() else (cn_number(m.group(4)) or -1)
        if hour is None:
            return False
        if (period in _PM_CN and hour < 12) or (period == "中午" and hour < 11):
            hour += 12
        return clock(hour, minute, str(cn_number(written) if not written.isdigit() else written))

    def one_unit(m: re.Match[str]) -> bool | None:
        adjective, word = m.group(1), m.group(2)
        if word.endswith("s") or (adjective and (adjective in _ORDINALS or words_number([adjective]))):
            return False  # `a` goes with a singular noun; `a half hour`, `a third day` are not one unit
        if word == "second" or _FREQUENCY.search(folded, 0, m.start()):
            return False  # `a second person`: the ordinal
        return _unit_amount(Decimal(1), word, Decimal(0), add)

    def quantity(m: re.Match[str]) -> bool | None:
        got = _amount(m)
        if got is None:
            return False
        value, spelled = got
        prefix, unit = m.group(1), _unit(m.group(6))
        unit = _CURRENCY_PREFIX.get(prefix or "", unit)
        raw = m.group(2) if m.group(2) is not None and not m.group(5) else None
        number = _digits(raw) if raw is not None else _fmt(value)
        cn, words = m.group(4), m.group(3)
        # Decisions: 一 / one alone are numbers only before a unit; a Chinese numeral only before a unit.
        if cn is not None and unit is None and not m.group(5):
            return False
        if (cn == "一" or (words or "").strip(" -") == "one") and unit in (None, "item", "people"):
            return False
        if cn == "一" and m.start() and s[m.start() - 1] in _NOT_ONE_AFTER:
            return False  # 哪一年, 这一天, 同一周: "which/this/the same", not a count
        if (
            cn == "一"
            and s[m.start() - 1 : m.start()] in ("上", "下")
            and s[m.start() - 2 : m.start() - 1] != "以"
        ):
            return False  # 上一年, 下一年: the year before or after, not one year (三个月以上一年以下 counts)
        if unit is not None and m.start() and s[m.start() - 1] == "第":
            return None  # 第二天: the next day (次日), an ordinal, not two days
        if unit is None and m.end() < len(s) and s[m.end()].isascii() and s[m.end()].isalpha():
            return False  # glued to letters: an identifier (3d, 5x)
        if spelled and words is not None and unit is None and value == 0:
            return False
        written = (
            m.group(6) if m.group(6) is not None else unit
        )  # the unit as written, else the currency sign's
        if unit in ("%", "‰"):
            add("percent", f"{number}{unit}", number, value=value_key(value, unit))
        elif unit is not None:
            _add_quantity(add, number, unit, value, written)
        else:
            add("number", number, f"{UNREAD_UNIT}{number}")
        return None

    take(_ARTICLE_CN, article_cn)
    take(_ARTICLE_EN, article_en)
    take(_TITLE, title)
    take(_QUOTE, quote)
    take(_DATE_ISO, lambda m: date(m.group(1), int(m.group(2)), int(m.group(3))))
    take(_YEAR_END_CN, lambda m: date(m.group(1), 12, 31))
    take(
        _DATE_CN,
        lambda m: date(
            y := _year(m.group(1)) if m.group(1) else None,
            mo := _small(m.group(2)),
            _last_day(y, mo) if m.group(4) else _small(m.group(3)),
        ),
    )
    take(
        _DATE_EN_OF,
        lambda m: date(m.group(3), mo := _MONTHS[m.group(2)], _day_of(m.group(1), m.group(3), mo)),
    )
    take(_DATE_EN_MDY, lambda m: date(m.group(3), _MONTHS[m.group(1)], int(m.group(2))))
    take(_DATE_EN_DMY, lambda m: date(m.group(3), _MONTHS[m.group(2)], int(m.group(1))))
    take(_DATE_EN_MY, lambda m: date(m.group(2), _MONTHS[m.group(1)], None))
    take(_YEAR_CN, lambda m: add("number", m.group(1)))
    take(_CLOCK_EN, clock_en)
    take(_CLOCK_CN, clock_cn)
    take(_CLOCK_PERIOD_EN, clock_period_en)
    take(_NOON, lambda m: clock(0 if m.group(0) in ("午夜", "子夜", "midnight") else 12, 0, ""))
    take(
        _TIME,
        lambda m: (
            add("time", f"{int(m.group(1))}:{m.group(2)}")
            if int(m.group(1)) < 24 and int(m.group(2)) < 60
            else False
        ),
    )
    take(_FRACTION_CN, lambda m: _fraction(_cn_amount(m.group(2)), _cn_amount(m.group(1)), add))
    take(_DISCOUNT_CN, lambda m: _fraction(*_discount(m.group(1)), add))
    take(_TENTHS_OF_WHOLE_CN, lambda m: _tenths(m, folded, add))
    take(_AGE_EN, lambda m: _unit_amount(_en_amount(m.group(1) or m.group(2)), "岁", Decimal(0), add))
    take(_HALF_EN, lambda m: _half_en(m, add))
    take(_AND_A_HALF_EN, lambda m: _and_a_half_en(m, add))
    take(
        _FRACTION_OF_EN,
        lambda m: _unit_amount(
            Decimal(0),
            m.group(3),
            (_en_amount(m.group(1)) or Decimal(0))
            / Decimal(_ORDINALS[m.group(2).removesuffix("s") if m.group(2) != "halves" else "half"]),
            add,
        ),
    )
    take(
        _FRACTION_EN,
        lambda m: (
            None  # twenty-fifth: a compound ordinal (the 25th), no amount, not twenty fifths
            if m.group(1).split()[-1].split("-")[-1] in _EN_TENS and "-" in m.group(0)[len(m.group(1)) :]
            else _fraction(
                _en_amount(m.group(1)),
                Decimal(_ORDINALS[m.group(2).removesuffix("s") if m.group(2) != "halves" else "half"]),
                add,
            )
        ),
    )
    take(_HALF_ALONE_EN, lambda m: _fraction(Decimal(1), Decimal(2), add))
    take(
        _HALF_CN,
        lambda m: _unit_amount(_cn_amount(m.group(1)), m.group(2) or m.group(3), Decimal("0.5"), add),
    )
    take(_HALF_ALONE_CN, lambda m: _unit_amount(Decimal(0), m.group(1), Decimal("0.5"), add))
    take(_HALF_WITHIN_CN, lambda m: _unit_amount(Decimal(0), m.group(1), Decimal("0.5"), add))
    take(_HALF_OF_WHOLE_CN, lambda m: _fraction(Decimal(1), Decimal(2), add))
    take(_MAJOR_MINOR_EN, lambda m: _major_minor(m, add))
    take(_JIAO_CN, lambda m: _jiao(m, s, add))
    take(
        _TENTHS_CN,
        lambda m: _unit_amount(
            _cn_amount(m.group(1)), m.group(2), Decimal(cn_number(m.group(3)) or 0) / 10, add
        ),
    )
    take(_VERSION, lambda m: add("number", m.group(1)))
    take(
        _RATE_EN,
        lambda m: (
            _rate(
                m.group(2),
                m.group(3) or _CURRENCY_WORD.get((m.group(1) or "").strip()),
                m.group(5),
                m.group(6),
                add,
            )
            if _plain(m.group(4))
            else False
        ),
    )
    take(_RATE_CN_PER_FIRST, lambda m: _rate(m.group(3), m.group(4), m.group(1), m.group(2), add))
    take(_RATE_CN_SLASH, lambda m: _rate(m.group(1), m.group(2), m.group(3), m.group(4), add))
    take(_COMPOUND_TIME, lambda m: _compound_time(m, add))
    take(_BETWEEN, range_)
    take(_RANGE, range_)
    take(_QUANTITY, quantity)
    take(_ONE_UNIT_EN, one_unit)
    unread = (
        str(n)
        for m in _UNREAD_CN_NUMERAL.finditer(s)
        if m.group(0) != "一" and (n := cn_number(m.group(0))) is not None
    )
    return tuple(out), tuple(unread)


def _tenths(m: re.Match[str], text: str, add: Callable[..., None]) -> bool | None:
    """`九成` = 90%, `七成五` = 75%, when jieba cuts `九成` as one numeral word (`m`): in 成绩, 成员 or
    一成不变 the 成 belongs to another word."""
    if _word_at(text, m.start(), m.end() + 4) != (m.group(0)[:2], "m"):
        return False
    tenths = Decimal(cn_number(m.group(1)) or 0) + Decimal(_CN_DIGITS.get(m.group(2) or "", 0)) / 10
    return _fraction(tenths * 10, Decimal(100), add)


def _major_minor(m: re.Match[str], add: Callable[..., None]) -> bool | None:
    """`four euros fifty` = 4.50 euros: the number after the major unit counts its hundredths."""
    whole, minor = _en_amount(m.group(1)), _en_amount(m.group(3))
    if whole is None or minor is None or minor >= 100:
        return False
    return _unit_amount(whole, m.group(2), minor / 100, add)


def _jiao(m: re.Match[str], text: str, add: Callable[..., None]) -> bool | None:
    """`三角` = 0.3 yuan, `五元三角` = 5.3 yuan: 角 is a tenth of a yuan. Alone, only when jieba reads the
    numeral and 角 (or 角钱) as one word: 三角形 is a triangle."""
    tenths = Decimal(m.group(2)) if m.group(2).isdigit() else Decimal(cn_number(m.group(2)) or 0)
    if m.group(1) is None:
        word = _word_at(text, m.start(2), m.end() + 4)
        if word is None or word[0] not in (m.group(0), f"{m.group(0)}钱"):
            return False
    yuan = _cn_amount(m.group(1)) if m.group(1) is not None else Decimal(0)
    return _unit_amount(yuan, "元", tenths / 10, add)


def _word_at(text: str, at: int, end: int) -> tuple[str, str] | None:
    """The word jieba cuts at `at`, and its tag, cutting from the start of the run of Chinese characters
    and digits `at` is in up to `end`; None when no word starts at `at`."""
    from ragtrack.nlp.entities import segment

    start = at
    while start and ("\u4e00" <= text[start - 1] <= "\u9fff" or text[start - 1].isdigit()):
        start -= 1
    pos = start
    for word, tag in segment(text[start:end]):
        if pos == at:
            return word, tag
        pos += len(word)
        if pos > at:
            return None
    return None


def _discount(digits: str) -> tuple[Decimal, Decimal]:
    """The share of the full price a Chinese discount writes (the digits before 折): one digit counts tenths
    (八 = 8/10, 8.5 = 8.5/10), two digits hundredths, each digit read alone (九五 = 95/100)."""
    if not digits[0].isdigit():
        digits = "".join(str(_CN_DIGITS[c]) for c in digits)
    share = Decimal(digits)
    return (share * 10, Decimal(100)) if "." in digits or len(digits) == 1 else (share, Decimal(100))


def _cn_amount(text: str) -> Decimal | None:
    """A number written in digits or Chinese numerals (`三点五` = 3.5; a lone 十 百 千 万 is its value), or
    None."""
    if text in _CN_SCALES:
        return Decimal(_CN_SCALES[text])
    inner = re.fullmatch(_AMOUNT, text)
    got = _amount(inner) if inner else None
    return got[0] if got else None


def _en_amount(text: str | None) -> Decimal | None:
    """The numerator of an English fraction: `a`/`an` = 1, digits or number words."""
    if text is None or text in ("a", "an"):
        return Decimal(1)
    if text[0].isdigit():
        return Decimal(text)
    n = words_number(re.split(r"[\s-]+", text.strip(" -")))
    return None if n is None else Decimal(n)


def _fraction(
    numerator: Decimal | None, denominator: Decimal | None, add: Callable[..., None]
) -> bool | None:
    """`numerator / denominator` as a percent (per 100), per-mille (per 1000) or fraction fact, with its
    ratio value."""
    if numerator is None or not denominator:
        return False
    number = _fmt(numerator)
    sign = {100: "%", 1000: "‰"}.get(int(denominator)) if denominator == int(denominator) else None
    ratio = numerator / denominator
    token = f"{number}{sign}" if sign else f"{number}/{_fmt(denominator)}"
    add("percent", token, number, value=value_key(ratio, "ratio"))
    return None


def _half_en(m: re.Match[str], add: Callable[..., None]) -> bool | None:
    """`a year and a half` = 1.5 years, `half a year` = 0.5 years."""
    if m.group(3) is not None:
        return _unit_amount(Decimal(0), m.group(3), Decimal("0.5"), add)
    return _unit_amount(_en_amount(m.group(1)), m.group(2), Decimal("0.5"), add)


def _and_a_half_en(m: re.Match[str], add: Callable[..., None]) -> bool | None:
    """`two and a half years` = 2.5 years, `seven and a half thousand` = 7500 (a number, or a quantity of the
    unit that follows)."""
    whole = _en_amount(m.group(1))
    if whole is None:
        return False
    value = (whole + Decimal("0.5")) * _SCALE_WORDS.get(m.group(2) or "", 1)
    if m.group(3) is None:
        add("number", _fmt(value))
        return None
    return _unit_amount(value, m.group(3), Decimal(0), add)


def _compound_time(m: re.Match[str], add: Callable[..., None]) -> bool | None:
    """Two amounts of time, the larger unit first (`1分30秒`, `2 hours 15 minutes`), as one quantity in the
    smaller unit."""
    first, second = _cn_amount(m.group(1).strip()), _cn_amount(m.group(3).strip())
    big, small = ("分钟" if m.group(2) == "分" else m.group(2)), m.group(4)
    big_key, small_key = value_key(Decimal(1), big), value_key(Decimal(1), small)
    if first is None or second is None or big_key is None or small_key is None:
        return False
    per = Decimal(big_key.split(":")[1]) / Decimal(small_key.split(":")[1])
    if per <= 1 or per != per.to_integral_value():
        return False  # not a larger unit, then a smaller one of whole parts of it
    return _unit_amount(first * per + second, small, Decimal(0), add)


def _unit_amount(
    whole: Decimal | None, unit_word: str, extra: Decimal, add: Callable[..., None]
) -> bool | None:
    """`<whole><unit>` plus `extra` of the unit (一年半: 1.5 years; 一米二: 1.2 metres), as a quantity
    fact."""
    word = unit_word if unit_word in _UNITS else f"个{unit_word}"  # 一个半月: the unit is 个月
    code = _UNITS.get(word)
    if whole is None or code is None:
        return False
    value = whole + extra
    _add_quantity(add, _fmt(value), code, value, word)
    return None


def _add_quantity(add: Callable[..., None], number: str, code: str, value: Decimal, word: str | None) -> None:
    """A quantity fact `<number><code>`, by value and, for months and years, by the civil calendar; `word` is
    its unit as written."""
    add(
        "quantity",
        f"{number}{code}",
        number,
        value=value_key(value, word),
        calendar=calendar_key(value, word),
    )


_CURRENCY_WORD = {"$": "dollars", "us$": "dollars", "€": "euros"}


def _plain(words: str) -> bool:
    """Words between a rate's amount and its `per` that hold no number or unit (`500 mg three times a day`
    is no rate of 500 mg a day)."""
    return not any(
        w in _UNITS or w in ("once", "twice", "thrice") or words_number([w]) is not None
        for w in words.split()
    )


def _rate(
    amount: str, unit_word: str | None, per_amount: str | None, per_word: str, add: Callable[..., None]
) -> bool | None:
    """An amount per a unit (or per an amount of it) as a `rate` fact: `22.5g/100g`, by value when both
    units have one (`ratio:0.225` when they are of one family, `mass/volume:112.5` in base units
    otherwise). It also provides its two amounts, so a statement that names either still agrees."""
    num, den = _cn_amount(amount), _cn_amount(per_amount) if per_amount else Decimal(1)
    code, per_code = _UNITS.get(unit_word or ""), _UNITS.get(per_word)
    if num is None or den is None or not den or code is None or per_code is None:
        return False
    if code == per_code and not per_amount:  # 每次…一次: a count of what it is counted per is no rate
        return False
    top, bottom = value_key(num, unit_word), value_key(den, per_word)
    value = None
    if top and bottom:
        (fam, mag), (per_fam, per_mag) = top.split(":", 1), bottom.split(":", 1)
        ratio = format(float(f"{float(mag) / float(per_mag):.9g}"), ".9g")
        value = f"ratio:{ratio}" if fam == per_fam else f"{fam}/{per_fam}:{ratio}"
    parts = [
        f"{_fmt(num)}{code}",
        *([f"{_fmt(den)}{per_code}"] if per_amount else []),
        *(k for k in (top, bottom) if k),
    ]
    token = f"{_fmt(num)}{code}/{_fmt(den) if per_amount else ''}{per_code}"
    add("rate", token, *parts, value=value, amount=top or f"{_fmt(num)}{code}")
    return None


def fact_tokens(text: str | None) -> list[str]:
    """The normalised tokens of `facts(text)`."""
    return [f.token for f in facts(text)]


def provided_keys(text: str | None) -> frozenset[str]:
    """Every token the facts of `text` provide to a statement it supports; and (version 11) the number of
    each Chinese numeral run no fact read (`六十分`, `六级` provide `60`, `6`: what the sources write in a
    form we do not read is unknown, not a mismatch), but `一` alone, and not after 第; and `rate-of:<value
    key>` for the amount of each rate (`Fact.provided_by`); and (version 12) the keys of one of each
    period the text names without a number (`_periods`)."""
    found, unread = _read(text or "")
    amounts = (f"{RATE_OF}{f.amount}" for f in found if f.kind == "rate" and f.amount)
    return frozenset((*(k for f in found for k in f.keys), *unread, *amounts, *_periods(text or "")))


# A period named without a number is one of it: 每月, 每个工作日, 年费, 年度, `monthly`, `each year`; `twice`
# and `thrice` are two and three times.
_PERIODIC_CN = re.compile(f"每(?:个)?({_UNIT_ALT_CN}|月)|([年月周日])(?=费|度|薪|租)")
_PERIODIC_EN = re.compile(
    r"\b(?:(annual|annually|yearly|monthly|weekly|daily|hourly|twice|thrice)|(?:each|every|per)\s+"
    r"(year|month|week|day|hour))\b"
)
_PERIOD_EN = {
    **dict.fromkeys(["annual", "annually", "yearly"], "one year"),
    "monthly": "one month",
    "weekly": "one week",
    "daily": "one day",
    "hourly": "one hour",
    "twice": "two times",
    "thrice": "three times",
}


def _periods(text: str) -> set[str]:
    """The keys of one of each period `text` names without a number (version 12): 每月 and `monthly` provide
    what `一个月` and `one month` do, without the bare number 1; `twice` what `two times` does."""
    s = text.casefold()
    phrases = [
        "一" + ("个月" if unit == "月" else unit)
        for m in _PERIODIC_CN.finditer(s)
        if (unit := m.group(1) or m.group(2))
    ]
    phrases += (_PERIOD_EN[m[1]] if m[1] else f"one {m[2]}" for m in _PERIODIC_EN.finditer(s))
    return {k for p in phrases for k in _phrase_keys(p)}


@lru_cache(maxsize=256)
def _phrase_keys(phrase: str) -> frozenset[str]:
    """The keys of the facts of a short phrase (`一个月`, `two times`), but bare numbers."""
    return frozenset(k for f in facts(phrase) for k in f.keys if not k.isdigit())  # not the bare number 1


def missing_fact(statement_facts: list[Fact], support_norm: str, support_keys: frozenset[str]) -> str | None:
    """The first fact of a statement that its supporting text lacks, or None when all agree.

    Titles and quotes agree when their inner text occurs in the normalised supporting
    text (`support_norm`, SPEC §0 `norm`); every other kind when its token is among the
    supporting text's `provided_keys` (a range also when both its ends are).
    """
    for f in statement_facts:
        if f.kind in ("title", "quote"):
            if f.token[1:-1] not in support_norm:
                return f.token
        elif not f.provided_by(support_keys):
            return f.token
    return None
