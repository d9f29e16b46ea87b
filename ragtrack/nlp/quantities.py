"""Quantities by value: an amount and its unit, converted so that one amount written two ways compares equal.

    value_key(Decimal(3), "天")          # -> "time:259200"   (three days)
    value_key(Decimal(72), "hours")      # -> "time:259200"
    value_key(Decimal("8.7"), "cm")      # -> "length:0.087"
    value_key(Decimal(87), "millimetres")  # -> "length:0.087"
    value_key(Decimal(3), "‰")           # -> "ratio:0.003"  (= 0.3%, 千分之三)

Units are read by `pint` (English names, plurals, British spellings and symbols, its
conversions); Chinese unit words are mapped onto pint's units by `CN_UNITS`, a unit
table (not phrasings). Only units of the families below count: a word that pint knows
as some rare unit (`point`, `hand`, `are`) is not a quantity in prose. Amounts of one
family are converted to its base unit and written with 9 significant digits, so float
noise of a conversion (8.700000000000001) cannot make equal amounts differ, and every
key is re-derivable. A unit that cannot be read gives no key: the amount is *unknown*
(compared as written, never by a guessed value).

Families: time (second), business_time (business day: never converted to days), length
(metre), area (m²), volume (litre), mass (gram), data (byte), power (watt), energy (kWh), ratio (1: percent,
per-mille, fractions), currency_<code> (one per currency: never converted), count_<what>
(people, items), age (years of age), multiple (times).
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache, lru_cache
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import pint

__all__ = ["CN_UNITS", "Unit", "calendar_key", "unit_of", "value_key"]

# Chinese unit words -> a pint unit expression (or one of the custom units defined below).
CN_UNITS: dict[str, str] = {
    "秒": "second",
    "秒钟": "second",
    "分钟": "minute",
    "小时": "hour",
    "个小时": "hour",
    "钟头": "hour",
    "天": "day",
    "日": "day",
    "自然日": "day",
    "个自然日": "day",
    "工作日": "business_day",
    "个工作日": "business_day",
    "工作周": "business_week",
    "个工作周": "business_week",
    "周": "week",
    "星期": "week",
    "个星期": "week",
    "礼拜": "week",
    "个礼拜": "week",
    "个月": "month",
    "个季度": "quarter_year",
    "月龄": "month",  # an age counted in months: 3月龄 = three months old
    "周龄": "week",
    "日龄": "day",
    "年": "year",
    "世纪": "century",
    "个世纪": "century",
    "毫米": "millimeter",
    "厘米": "centimeter",
    "分米": "decimeter",
    "米": "meter",
    "公里": "kilometer",
    "千米": "kilometer",
    "平方厘米": "centimeter**2",
    "平方米": "meter**2",
    "平方公里": "kilometer**2",
    "平方千米": "kilometer**2",
    "公顷": "hectare",
    "亩": "mu",
    "毫升": "milliliter",
    "升": "liter",
    "立方米": "meter**3",
    "毫克": "milligram",
    "克": "gram",
    "千克": "kilogram",
    "公斤": "kilogram",
    "斤": "jin",
    "吨": "metric_ton",
    "字节": "byte",
    "千字节": "kilobyte",
    "兆字节": "megabyte",
    "元": "cny",
    "元人民币": "cny",
    "块": "cny",
    "块钱": "cny",
    "人民币": "cny",
    "美元": "usd",
    "欧元": "eur",
    "英镑": "gbp",
    "日元": "jpy",
    "港元": "hkd",
    "港币": "hkd",
    "倍": "times",
    "百分点": "percentage_point",
    "个百分点": "percentage_point",
    "人": "person",
    "名": "person",
    "个人": "person",
    "位": "person",
    "岁": "age_year",
    "周岁": "age_year",
    "次": "item",
    "项": "item",
    "件": "item",
    "份": "item",
    "家": "item",
    "所": "item",
    "种": "item",
    "条": "item",
    "页": "item",
    "张": "item",
    # classifiers of things counted (量词): 7座 = 七座, 3辆 = 三辆
    **dict.fromkeys("座辆台间套只头本户", "item"),
    "千瓦": "kilowatt",
    "千瓦时": "kilowatt_hour",
    "瓦": "watt",
}

# Symbols and abbreviations whose casefolded form pint reads as another unit (kb: kilobarn).
_FOLDED = {
    "kb": "kilobyte",
    "kw": "kilowatt",
    "kwh": "kilowatt_hour",
    **dict.fromkeys(["kilowatt-hours", "kilowatt hours", "kilowatt-hour", "kilowatt hour"], "kilowatt_hour"),
    "mb": "megabyte",
    "gb": "gigabyte",
    "tb": "terabyte",
    "%": "percent",
    "per cent": "percent",
    "per mille": "permille",
    "‰": "permille",
    "usd": "usd",
    "cny": "cny",
    "rmb": "cny",
    "yuan": "cny",
    "eur": "eur",
    "euro": "eur",
    "euros": "eur",
    "dollar": "usd",
    "dollars": "usd",
    "business day": "business_day",
    "business days": "business_day",
    "ratio": "dimensionless",
    "working day": "business_day",
    "working days": "business_day",
    "business week": "business_week",
    "business weeks": "business_week",
    "working week": "business_week",
    "working weeks": "business_week",
    "cm2": "centimeter**2",
    "m2": "meter**2",
    "km2": "kilometer**2",  # cm², m², km² after NFKC
    "people": "person",
    "persons": "person",
    "employees": "person",
    "times": "times",
    "hrs": "hour",
    "percentage point": "percentage_point",
    "percentage points": "percentage_point",
    "decade": "decade_of_years",
    "decades": "decade_of_years",
}

# pint unit name -> family; a unit outside this table is not a quantity in prose.
_FAMILY = {
    **dict.fromkeys(
        [
            "second",
            "minute",
            "hour",
            "day",
            "week",
            "fortnight",
            "month",
            "year",
            "decade_of_years",
            "century",
        ],
        "time",
    ),
    **dict.fromkeys(
        [
            "millimeter",
            "centimeter",
            "decimeter",
            "meter",
            "kilometer",
            "inch",
            "foot",
            "yard",
            "mile",
            "nautical_mile",
        ],
        "length",
    ),
    **dict.fromkeys(["hectare", "acre", "mu"], "area"),
    **dict.fromkeys(["milliliter", "liter", "gallon"], "volume"),
    **dict.fromkeys(["milligram", "gram", "kilogram", "metric_ton", "pound", "ounce", "jin"], "mass"),
    **dict.fromkeys(["byte", "kilobyte", "megabyte", "gigabyte", "terabyte"], "data"),
    **dict.fromkeys(["watt", "kilowatt", "megawatt"], "power"),
    **dict.fromkeys(["kilowatt_hour", "joule"], "energy"),
    **dict.fromkeys(["percent", "permille", "dimensionless"], "ratio"),
    "business_day": "business_time",
    "business_week": "business_time",
    "quarter_year": "time",
    "times": "multiple",
    "percentage_point": "percentage_point",
    "person": "count_people",
    "item": "count_item",
    "age_year": "age",
    **{c: f"currency_{c}" for c in ("usd", "cny", "eur", "gbp", "jpy", "hkd")},
}
_BASE = {
    "time": "second",
    "length": "meter",
    "area": "meter**2",
    "volume": "liter",
    "mass": "gram",
    "data": "byte",
    "power": "watt",
    "energy": "kilowatt_hour",
    "ratio": "dimensionless",
    "business_time": "business_day",
}
_POWERED = {
    "meter": {2: "area", 3: "volume"},
    "kilometer": {2: "area"},
    "centimeter": {2: "area", 3: "volume"},
    "foot": {2: "area"},
}

Unit = tuple[str, str]  # (family, pint expression)


@cache
def _registry() -> pint.UnitRegistry:
    import logging

    import pint

    # pint warns when a word parses more than one way (`mins`: minutes or milli-inches) and takes the first,
    # the unit; that is the reading wanted, so the warning would only be noise in a run's log
    logging.getLogger("pint.util").setLevel(logging.ERROR)
    reg: pint.UnitRegistry = pint.UnitRegistry()
    for line in (
        "business_day = [business_time]",
        "business_week = 5 * business_day",
        "quarter_year = 3 * month",  # 一个季度: pint's `quarter` is a fraction
        "times = [multiple]",
        "percentage_point = [percentage_point]",  # a difference of percentages, not a share
        "person = [count_people]",
        "item = [count_item]",
        "age_year = [age]",
        "mu = 10000 / 15 * meter ** 2",
        "jin = 500 * gram",
        "decade_of_years = 10 * year",  # pint's `decade` is a logarithmic ratio, not ten years
        *(f"{c} = [currency_{c}]" for c in ("usd", "cny", "eur", "gbp", "jpy", "hkd")),
    ):
        reg.define(line)
    return reg


@lru_cache(maxsize=4096)
def unit_of(word: str) -> Unit | None:
    """The family and pint unit of a unit word as written (any case), or None when it is not one we count."""
    w = " ".join(word.split())
    folded = w.casefold()
    expr = CN_UNITS.get(w) or _FOLDED.get(folded)
    reg = _registry()
    if expr is None:
        import pint

        try:
            parsed = reg.parse_units(w if w in ("kB", "MB", "GB", "TB") else folded)
        except (pint.errors.PintError, AttributeError, TypeError, ValueError, AssertionError):
            return None
        items = dict(parsed._units)  # noqa: SLF001 - pint's unit container has no public mapping
        if len(items) != 1:
            return None
        ((name, power),) = items.items()
        # pint types an exponent as any scalar (complex included); a unit's power is a real number
        family = _FAMILY.get(name) if power == 1 else _POWERED.get(name, {}).get(int(cast(float, power)))
        return (family, str(parsed)) if family else None
    family = "area" if expr.endswith("**2") else "volume" if expr.endswith("**3") else _FAMILY.get(expr)
    return (family, expr) if family else None


def value_key(amount: Decimal, word: str | None) -> str | None:
    """`<family>:<amount in the family's base unit, 9 significant digits>`; None for a unit we do not count.

    Without a unit, None: a bare number is compared as written (SPEC §3), never as a value of a guessed unit.
    """
    if word is None:
        return None
    unit = unit_of(word)
    if unit is None:
        return None
    family, expr = unit
    return f"{family}:{_magnitude(str(amount), family, expr)}"


_CALENDAR_DAYS = {"month": 30, "quarter_year": 90, "year": 365}  # the civil convention: 一个月按30日计


def calendar_key(amount: Decimal, word: str | None) -> str | None:
    """An amount of months or years by the civil convention (a month is 30 days, a year 365), as a value key
    in days: `3个月` = `90天`, `半个月` = `15 days`, `a year` = `365 days`, `12个月` = `365天`, which pint's
    mean month (30.44 days) and year (365.25) do not equal. None for any other unit."""
    unit = unit_of(word) if word is not None else None
    if unit is None or unit[1] not in _CALENDAR_DAYS:
        return None
    days = amount * _CALENDAR_DAYS[unit[1]]
    if unit[1] == "month" and amount and amount % 12 == 0:
        days = amount / 12 * _CALENDAR_DAYS["year"]  # (version 11) whole years of months are years
    return f"time:{_magnitude(str(days), 'time', 'day')}"


@lru_cache(maxsize=65536)
def _magnitude(amount: str, family: str, expr: str) -> str:
    reg = _registry()
    q = reg.Quantity(float(amount), expr)
    base = _BASE.get(family)
    value = q.to(base).magnitude if base else q.magnitude
    return format(float(f"{value:.9g}"), ".9g")
