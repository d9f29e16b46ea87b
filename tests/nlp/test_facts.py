"""Fact tokens: extraction and normalisation tables (SPEC §3), and the agreement rule."""

from __future__ import annotations

import pytest

from ragtrack.nlp.facts import cn_number, fact_tokens, facts, missing_fact, provided_keys, words_number
from ragtrack.nlp.text import norm

# Texts that state the same fact normalise to the same tokens.
SAME = [
    ("七日", "7日", ["7d"]),
    ("7天", "7 days", ["7d"]),
    ("seven days", "7 days", ["7d"]),
    ("7个工作日", "7 business days", ["7wd"]),
    ("两年", "2 years", ["2y"]),
    ("十二个月", "12 months", ["12mo"]),
    ("3.5%", "3.5 percent", ["3.5%"]),
    ("百分之三点五", "3.5%", ["3.5%"]),
    ("第十二条", "第12条", ["第12条"]),
    ("第三款", "第3款", ["第3款"]),
    ("Article 12", "Art. 12", ["article 12"]),
    ("Section 3.2", "§ 3.2", ["section 3.2"]),
    ("1,000", "1000", ["1000"]),
    ("twenty", "20", ["20"]),
    ("twenty-five students", "25 students", ["25"]),
    ("one hundred and five", "105", ["105"]),
    ("$1,000", "1,000 dollars", ["1000usd"]),
    ("1000美元", "1000 dollars", ["1000usd"]),
    ("100万元", "1000000元", ["1000000cny"]),
    ("1.5 million dollars", "1500000 dollars", ["1500000usd"]),
    ("2023年5月1日", "May 1, 2023", ["2023-05-01"]),
    ("1 May 2023", "2023-05-01", ["2023-05-01"]),
    ("2023/5/1", "2023-05-01", ["2023-05-01"]),
    ("5到10天", "5-10 days", ["5-10d"]),
    ("between 5 and 10 days", "5 to 10 days", ["5-10d"]),
    ("500毫克", "500 mg", ["500mg"]),
    ("100 millilitres", "100 ml", ["100ml"]),  # every metric unit spelled out too, in both spellings
    ("100毫升", "100 milliliters", ["100ml"]),
    ("500 milligrams", "500毫克", ["500mg"]),
    ("30 centimetres", "30厘米", ["30cm"]),
    ("16 gigabytes", "16 GB", ["16gb"]),
    ("《中华人民共和国公司法》", "《中华人民共和国 公司法》", ["《中华人民共和国公司法》"]),
    ("a 1.2-metre telescope", "a 1.2 metre telescope", ["1.2m"]),
    ("a 30-day period", "a 30 day period", ["30d"]),
    ("25 cm²", "25 square centimetres", ["25cm2"]),
    ("108元/亩", "每亩108元", ["108cny/mu"]),
    ("降低十个百分点", "降低10个百分点", ["10pp"]),  # a difference of percentages, not a share
    ("按九五折收取", "按95折收取", ["95%"]),  # a price in hundredths of the full one
]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("for a decade", "for 10 years"),
        ("a fortnight", "14 days"),
        ("半个世纪", "50 years"),
        ("九五折", "95%"),
        ("打八折", "80%"),
        ("8.5折", "85%"),
        ("within two working weeks", "10个工作日内"),
        ("two dozen hours", "24 hours"),
        ("two and a half years", "30 months"),
        ("seven and a half thousand euros", "€7,500"),
        ("按标准的九成发放", "按标准的90%发放"),  # 成: tenths of a whole
        ("七成五", "75%"),
        ("最多免一半", "最多免50%"),
        ("7 kW", "7,000 watts"),
        ("12 kWh", "12 kilowatt-hours"),  # energy, not power
        ("每千瓦时0.1元", "0.1元/千瓦时"),
        ("1分30秒", "九十秒"),  # a larger unit, then a smaller
        ("one hour and 30 minutes", "90 minutes"),
        ("一年零三个月", "15个月"),
        ("a hundred or more hours", "100 hours"),
        ("七座及以下", "7座以下"),  # a classifier counts things
    ],
)
def test_the_same_amount_in_another_unit_has_the_same_value(a: str, b: str) -> None:
    assert [f.value for f in facts(a)] == [f.value for f in facts(b)]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("三个月", "90天"),
        ("半个月内", "15天内"),
        ("a year", "365 days"),
        ("一个季度", "90 days"),
        ("a month", "30日"),
    ],
)
def test_months_and_years_agree_with_their_days_by_the_civil_calendar(a: str, b: str) -> None:
    assert _missing(a, b) is None and _missing(b, a) is None


def test_and_a_half_before_a_scale_is_a_number() -> None:
    assert fact_tokens("seven and a half thousand crowns") == ["7500"]


@pytest.mark.parametrize(
    ("hedged", "exact"),
    [
        ("about a week and a half", "10 days"),  # 10.5 days
        ("三个月左右", "92天"),
        ("nearly 2 kilograms", "1.9 kg"),
    ],
)
def test_a_hedged_amount_agrees_with_amounts_near_it_either_way(hedged: str, exact: str) -> None:
    assert _missing(hedged, exact) is None and _missing(exact, hedged) is None


def test_a_hedged_amount_does_not_agree_with_one_more_than_a_tenth_away() -> None:
    assert _missing("about 10 days", "two weeks") == "10d"


def test_unhedged_amounts_agree_only_when_equal() -> None:
    assert _missing("a week and a half", "10 days") == "1.5w"


def test_three_months_are_not_91_days() -> None:
    assert _missing("3 months", "91 days") == "3mo"


def test_a_percentage_point_is_no_percent() -> None:
    assert [f.value for f in facts("10个百分点")] != [f.value for f in facts("10%")]


def test_a_word_that_begins_with_zhe_is_no_discount() -> None:
    assert facts("设备折旧费") == [] and facts("三折叠伞") == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("more than 22.5 g of sugars per 100 g", "more than 22.5% sugars"),
        ("112.5 g per litre", "11.25 g of sugars per 100 ml"),
        ("每100毫升含糖11.25克", "112.5 g per litre"),
        ("$5 a month", "60 dollars per year"),
    ],
)
def test_a_rate_agrees_with_the_same_rate_written_another_way(a: str, b: str) -> None:
    assert missing_fact(facts(a), norm(b), provided_keys(b)) is None


def test_a_rate_provides_its_two_amounts() -> None:
    assert {"22.5g", "100g"} <= provided_keys("22.5 g of sugars per 100 g")


@pytest.mark.parametrize("text", ["500 mg twice a day", "500 mg three times a day"])
def test_a_count_between_an_amount_and_per_makes_no_rate(text: str) -> None:
    assert "500mg" in fact_tokens(text)


def test_a_count_before_a_makes_it_per() -> None:
    assert fact_tokens("at most five finds a day") == ["5"]


def test_one_year_after_yishang_is_an_amount() -> None:
    assert fact_tokens("三个月以上一年以下") == ["3mo", "1y"]


def test_the_nearest_mei_names_the_unit_of_a_rate() -> None:
    assert fact_tokens("获奖学生每人每年可得5000元") == ["5000cny/y"]


def test_a_count_per_the_thing_counted_is_no_rate() -> None:
    assert fact_tokens("科目二每次预约含两次补考机会") == ["2item"]


@pytest.mark.parametrize(("a", "b", "tokens"), SAME)
def test_equal_facts_normalise_to_equal_tokens(a: str, b: str, tokens: list[str]) -> None:
    assert fact_tokens(a) == fact_tokens(b) == tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("9:30 every morning", ["9:30"]),
        ("from 8 pm to 11:30 p.m.", ["20:00", "23:30"]),
        ("12 am", ["0:00"]),
        ("下午5时30分至晚上八点半", ["17:30", "20:30"]),
        ("每日9时开放", ["9:00"]),
        ("第3点意见", ["3"]),  # a bare N点 is no clock time
        ("三点五公斤", ["3.5kg"]),
        ("the first and third Friday", []),  # ordinals, not the fraction 1/3
        ("a third of the fee", ["1/3"]),
        ("it adds a full year", ["1y"]),
        ("one working day or an extra month", ["1wd", "1mo"]),
        ("take it twice a day for a week", ["1w"]),  # `a` after a frequency means per
        ("a few days", []),  # `a` goes with a singular noun
        ("90 days in a contract year", ["90d"]),  # `in a year`: per, no amount
        ("a second person may drive", []),  # the ordinal
        ("under a quarter of a kilogram", ["0.25kg"]),
        ("more than half a kilometre away", ["0.5km"]),
        ("at least 21 years old", ["21age"]),
        ("twenty-one or older", ["21age"]),
        ("报名在8月上半月进行", ["--08"]),  # the first half of August: no amount
        ("11月初开始", ["--11"]),
        ("犬只满3月龄后30日内", ["3mo", "30d"]),  # 月龄: an age in months, not the month March
        ("Python 3.10", ["3.10"]),  # decimals as written: a version is not 3.1
        ("version 3.11.2", ["3.11.2"]),
        ("他说“你好世界”", ['"你好世界"']),
        ("in 2023", ["2023"]),
        ("2023年", ["2023"]),
        ("FHA 贷款允许最低 3.5% 的首付", ["3.5%"]),
    ],
)
def test_other_kinds(text: str, tokens: list[str]) -> None:
    assert fact_tokens(text) == tokens


@pytest.mark.parametrize(
    "text",
    [
        "one of the best",
        "一个重要原因",
        "统一管理",
        "千万不要",
        "十分重要",
        "哪一年",
        "以单位上一年职工月平均工资为基数",  # the year before
        "第二天下午送达",  # the next day: an ordinal
        "一季度末",  # the first quarter (Q1), not one quarter
        "on the twenty-fifth of every month",  # the 25th, not twenty fifths
        "dozens of people",
        "MiniLM-L6",
        "3D printing",
        "the tenant",
        "someone",
    ],
)
def test_words_that_are_usually_not_numbers_give_no_fact(text: str) -> None:
    assert fact_tokens(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("七", 7),
        ("十二", 12),
        ("两", 2),
        ("三千零五", 3005),
        ("一百二十", 120),
        ("三万", 30000),
        ("二〇二三", 2023),
    ],
)
def test_chinese_numerals(text: str, value: int) -> None:
    assert cn_number(text) == value


@pytest.mark.parametrize(
    ("words", "value"),
    [("twenty", 20), ("twenty five", 25), ("one hundred and five", 105), ("three thousand", 3000)],
)
def test_english_number_words(words: str, value: int) -> None:
    assert words_number(words.split()) == value


def test_five_and_six_is_not_one_number() -> None:
    assert words_number(["five", "and", "six"]) is None


def _missing(statement: str, support: str) -> str | None:
    return missing_fact(facts(statement), norm(support), provided_keys(support))


def test_a_changed_number_is_the_missing_fact() -> None:
    assert _missing("The course lasts 14 days.", "The full course lasts 10 days.") == "14d"


def test_a_bare_number_agrees_with_the_same_number_with_a_unit() -> None:
    assert _missing("Scores of 580 qualify.", "A score of 580 points or 3.5% down.") is None


def test_a_range_agrees_with_its_two_ends() -> None:
    assert (
        _missing("Scores from 500 to 579 need 10%.", "Scores between 500 and 579 need at least 10%.") is None
    )


def test_a_date_provides_its_year() -> None:
    assert _missing("It happened in 2012.", "It crossed on August 25, 2012.") is None


def test_a_title_agrees_by_containment_of_its_name() -> None:
    assert _missing("依照《公司法》办理", "《中华人民共和国公司法》第十二条") is None
    assert _missing("依照《劳动法》办理", "《劳动合同法》第十九条") == "《劳动法》"


def test_a_clock_time_agrees_with_the_same_time_on_the_24_hour_clock_and_provides_its_hour() -> None:
    assert (
        missing_fact(
            facts("between 20:00 and 23:00"), norm("from 8 pm to 11 pm"), provided_keys("from 8 pm to 11 pm")
        )
        is None
    )
    assert "8" in provided_keys("from 8 pm")


def test_a_date_provides_its_month_alone() -> None:
    assert missing_fact(facts("11月初开始"), norm("自11月1日起"), provided_keys("自11月1日起")) is None


@pytest.mark.parametrize(
    ("statement", "support"),
    [
        ("见习期限一般为3至12个月", "见习时间通常在三个月到一年之间"),  # a range's ends by value
        ("from 7:00 to 22:00", "白天（早7点至晚10点）"),
        ("after 16:00", "after four in the afternoon"),
        ("12时至14时", "正午至下午两点"),
        ("from age 41", "aged 41"),
        ("3月31日前休完", "3月底之前休完"),  # a month's end is its last day
        ("截至2057年12月31日", "到2057年年底截止"),
        (
            "from 1 February to 31 January",
            "from the first of February until the end of the following January",
        ),
        ("每分钟0.3元", "每分钟收费三角"),  # 角: a tenth of a yuan
        ("票价5.3元", "票价五元三角"),
        ("€4.50 per guest", "four euros fifty for each guest"),  # the minor unit's hundredths
        ("valid for twelve months", "valid for 365 days"),  # whole years of months are years
        ("费用三十元一位", "体验费每人30元"),  # 位 counts people
    ],
)
def test_a_fact_written_another_way_is_provided(statement: str, support: str) -> None:
    assert _missing(statement, support) is None


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("面向二年级及以上学生", []),  # 年级 is a grade, not years
        ("每年春季学期第3周", []),  # an ordinal is no amount, nor a rate
        ("成绩一成不变", []),  # 成 inside another word counts no tenths
        ("9.9% a year", ["9.9%"]),  # `a` after an amount means per
        ("最晚10点前", ["10"]),  # 晚 of 最晚 (at the latest) is no evening
        ("画一个三角形", []),  # 角 of 三角形 is no money
        ("ten dollars 20 minutes", ["10usd", "20min"]),  # a number before a unit is no hundredths
    ],
)
def test_what_only_looks_like_an_amount_gives_none(text: str, tokens: list[str]) -> None:
    assert fact_tokens(text) == tokens


@pytest.mark.parametrize(
    ("statement", "support"),
    [
        ("风力达到6级及以上", "风力到六级以上"),  # a numeral no fact reads still provides its number
        ("达到60分即为合格", "考到六十分就算过关"),
        ("每人收费88元", "人均八十八元"),  # a rate's amount, where the text does not say what it is per
        ("每人每天最多三只", "每日猎取不得超过3只"),
        ("签收后15天内可退货", "签收后半个月内都可以退货"),  # 后半个月内: within half a month after
        ("a renewal needs 24 hours of training", "at least 24 CPD hours"),  # a number before an unread word
    ],
)
def test_a_form_the_sources_write_unread_is_unknown_not_a_mismatch(statement: str, support: str) -> None:
    assert _missing(statement, support) is None


def test_a_rate_per_another_unit_than_the_sources_rate_is_missing() -> None:
    assert _missing("每次收费88元", "每人收费88元") == "88cny/item"


def test_an_unread_numeral_after_di_or_a_lone_yi_provides_nothing() -> None:
    assert {"3", "1"}.isdisjoint(provided_keys("第三次统一办理"))


@pytest.mark.parametrize(
    ("statement", "support"),
    [
        ("同一款香每个账号一个月最多买三支", "每款香水每个账号每月限购三支"),
        ("会费是一年六十元", "青少年会员年费为每人60元"),
        ("The organ is tuned two times a year", "The builders tune the organ twice a year"),
        ("The fee covers one year", "The annual fee is 640 pounds"),
        ("认养人每年可分到两千五百克绿茶", "每年交付绿茶5斤"),
        ("over 2,000 litres a day", "more than 2 cubic metres in a single day"),
    ],
)
def test_a_period_named_without_a_number_and_the_jin_and_cubic_metre_are_read(
    statement: str, support: str
) -> None:
    assert missing_fact(facts(statement), norm(support), provided_keys(support)) is None


def test_a_period_named_without_a_number_provides_no_bare_one() -> None:
    assert "1" not in provided_keys("每月限购三支")


def test_a_period_the_sources_name_does_not_provide_another() -> None:
    assert missing_fact(facts("一年最多买三支"), norm("每月限购三支"), provided_keys("每月限购三支")) == "1y"
