"""`ragtrack.nlp.contradiction`: polarity, conditions and quantities of a statement against its evidence."""

from __future__ import annotations

import pytest

from ragtrack.nlp.contradiction import (
    NEGATION,
    added_words,
    conflict,
    grounding,
    negated_words,
    passive_voice,
    polarity,
    quantity_conflict,
    relation_spans,
    relations,
    reversed_polarity,
    senses,
    source_clauses,
    support_tokens,
    word_coverage,
    word_sequence,
    words,
)
from ragtrack.nlp.facts import facts, provided_keys


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("The deposit is not refundable.", 1),
        ("The deposit is refundable.", 0),
        ("You can't cancel.", 1),
        ("押金不予退还", 1),
        ("押金可以退还", 0),
        ("无需提前申请", 1),
        ("非常重要", 0),
        ("不得超过12米", 0),
        ("no more than 12 m", 0),
        ("作出准予或不予注册的决定", 0),  # a predicate and its own negation: no negation
        ("whether or not the fee is paid", 0),
        ("The driver must not move the train without permission.", 0),  # two negations in a clause affirm
        ("不得不停车", 0),
        ("Training is spread across no fewer than two days.", 0),  # a bound: at least
        ("The fee is not refunded, and no interest is paid.", 2),  # two negated clauses
    ],
)
def test_polarity_counts_negations_not_bounds_or_lexical_items(text, n):
    assert polarity(text) == n


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("apply at least 60 days before expiry", {"min", "before"}),
        ("不得超过12米", {"max"}),
        ("30日内提出", {"within"}),
        ("三天后", {"after"}),
        ("最后一天", set()),
    ],
)
def test_relations_are_read_as_canonical_operators(text, found):
    assert relations(text) == found


def test_a_negated_copy_conflicts():
    assert (
        conflict("The deposit is not refundable", "The deposit is refundable")
        == "polarity: more negations in the statement"
    )


def test_a_changed_bound_conflicts():
    assert (
        conflict(
            "claims are made within 30 days after delivery",
            "claims are made at least 30 days before delivery",
        )
        == "condition: after where the source says before"
    )


def test_a_paraphrase_is_not_compared_word_by_word():
    assert (
        conflict(
            "No one had left the heliosphere before Voyager 1",
            "Voyager 1 was the first to leave the heliosphere",
        )
        is None
    )


def test_an_amount_of_the_family_the_evidence_states_otherwise_conflicts():
    src = "The fee is 20 dollars."
    assert (
        quantity_conflict(facts("The fee is 30 dollars."), facts(src), provided_keys(src)) == "30usd vs 20usd"
    )


def test_the_same_amount_in_another_unit_does_not_conflict():
    src = "Refunds take 72 hours."
    assert quantity_conflict(facts("Refunds take three days."), facts(src), provided_keys(src)) is None


def test_an_operator_in_its_opposites_place_contradicts_where_both_occur_elsewhere() -> None:
    # 后 (after) where the source has 内 (within); 受理后 and 工作日内 occur in both, so the sets alone
    # cannot tell
    said = "用户须自交寄之日起30日后提出索赔，快递公司在受理后7个工作日内答复"
    source = "用户须自交寄之日起30日内提出索赔，快递公司在受理后7个工作日内答复"
    assert conflict(said, source) == "condition: after where the source says within"


def test_the_same_operators_in_the_same_places_do_not_contradict() -> None:
    text = "Book at least 48 hours before the visit and pay within a week."
    assert conflict(text, text) is None


def test_relation_spans_are_in_written_order() -> None:
    assert [name for _, _, name in relation_spans("pay within 30 days, at least 2 days before")] == [
        "within",
        "min",
        "before",
    ]


def test_a_near_copy_that_changes_a_party_conflicts():
    assert conflict("the tenant must repair the boiler", "the landlord must repair the boiler") == (
        "wording: tenant where the source says landlord"
    )


def test_a_chinese_near_copy_that_changes_an_office_conflicts():
    source = (
        "办理结婚登记，双方须共同到场，各自携带身份证和户口簿，"
        "没有户口簿的可用户籍所在地派出所出具的户籍证明代替"
    )
    said = source.replace("户籍所在地派出所", "婚姻登记处")
    assert conflict(said, source) == "wording: 婚姻登记 where the source says 所在地, 派出所"


def test_a_near_copy_that_only_drops_a_word_does_not_conflict():
    assert conflict("each worker must bring a harness", "each worker's employer must bring a harness") is None


def test_a_paraphrase_keeps_its_changed_words():
    assert (
        conflict("a week is what the landlord has to fix the boiler", "the landlord must repair the boiler")
        is None
    )


def test_a_word_inside_another_is_no_change():
    assert (
        conflict("同一用人单位与同一劳动者只能约定一次试用期", "同一单位和同一劳动者之间只能约定一次试用期")
        is None
    )


def test_a_near_copy_that_adds_a_word_no_source_has_names_it():
    source = "each worker must bring a harness"
    assert added_words("each worker's employer must bring a harness", source, words(source)) == {"employ"}


def test_words_leave_numerals_units_negations_and_operators_to_their_own_rules():
    assert words("Refunds are not paid within 3 days or three hours") == {"refund", "paid"}
    assert words("不得在三天内退款") == {"退款"}


def test_a_near_copy_that_puts_every_where_the_source_says_first_and_third_changes_the_scope():
    source = "The public can use the telescope on the first and third Friday of each month."
    said = "The public can use the telescope on every Friday of each month."
    assert conflict(said, source) == "scope: every where the source says first, third"


def test_a_chinese_copy_that_restricts_a_whole_city_to_a_district_changes_the_scope():
    source = "暴雨红色预警信号发布后，全市中小学、幼儿园停课。"
    said = "暴雨红色预警信号发布后，仅主城区中小学、幼儿园停课。"
    assert conflict(said, source) == "scope: 仅 where the source says 全市"


def test_a_quantifier_only_dropped_does_not_change_the_scope():
    source = "The public can use the telescope on the first and third Friday of each month."
    assert conflict("The public can use the telescope on the first and third Friday.", source) is None


def test_support_tokens_are_stems_and_values_not_spellings():
    said = support_tokens("Bookings have to be made online two days ahead.")
    source = support_tokens("Visitors must book online at least 48 hours beforehand.")
    assert {"book", "onlin", "time:172800"} <= said & source
    assert not {"two", "48", "day", "hour"} & (said | source)


def test_or_where_the_source_says_and_between_requirements_changes_a_condition():
    source = "Each driver must be at least 21 years old and have held a licence for 2 years."
    said = "Each driver must be at least 21 years old or have held a licence for 2 years."
    assert conflict(said, source) == "condition: or where the source says and"


def test_and_or_or_between_nouns_only_lists():
    source = "Section 3.1 requires apps that sell digital content or subscriptions to use in-app purchase."
    said = "Section 3.1 requires apps that sell digital content and subscriptions to use in-app purchase."
    assert conflict(said, source) is None


def test_a_bounded_span_after_an_event_is_within_it():
    assert relations("Claims are paid no more than thirty days after the inspection.") == {"within"}
    assert (
        conflict(
            "Approved claims are paid no more than thirty days after the inspection.",
            "Approved claims are paid within 30 days of the inspection.",
        )
        is None
    )


def test_a_near_copy_that_changes_a_word_for_its_synonym_does_not_conflict():
    assert conflict("The student must finish the module", "The student must complete the module") is None


def test_a_chinese_near_copy_that_changes_a_word_for_its_synonym_does_not_conflict():
    assert conflict("登记人可随时撤销捐献意愿", "登记人可随时取消捐献意愿") is None


def test_two_parties_that_trade_places_conflict():
    assert conflict(
        "The tenant must repair the boiler and the landlord pays",
        "The landlord must repair the boiler and the tenant pays",
    ) == ("swapped: tenant and landlord")


def test_two_chinese_offices_that_trade_places_conflict():
    source = "中签选手须在领物前上传县级以上医院出具的体检证明，由组委会医疗组审核"
    said = "中签选手须在领物前上传组委会医疗组出具的体检证明，由县级以上医院审核"
    assert conflict(said, source) == "swapped: 组委会 and 医院"


def test_a_passive_paraphrase_is_no_swap():
    assert (
        conflict(
            "A farmer must report hail damage within three days of the storm, via the claims line",
            "Hail damage must be reported by the farmer within three days of the storm, via the claims line",
        )
        is None
    )


def test_a_near_copy_that_appends_a_clause_names_its_new_words():
    source = "Rivora charges a 5-euro fee when a ride ends outside a docking station"
    said = source + ", and the fee doubles at weekends"
    assert "doubl" in added_words(said, source, words(source))


REFUNDS = "Refunds are paid within 14 days of the return. Exchanges are free at any branch."


def grounded(statement: str, source: str = REFUNDS) -> float:
    return grounding(statement, words(source))


def test_a_statement_whose_words_the_sources_have_is_wholly_grounded():
    assert grounded("Exchanges are free at any branch, and refunds are paid within 14 days.") == 1.0


def test_grounding_is_the_share_of_the_least_grounded_clause():
    # clause 2 holds credit, expir, store (none in the source) and refund: 1 of 4
    assert grounded("Refunds are paid within 14 days, and refunds for store credit expire.") == 0.25


def test_the_senses_of_a_text_are_those_of_its_words():
    assert senses(words("The shop will repair it.")) >= senses(frozenset({"repair"})) != frozenset()


def test_a_synonym_of_a_source_word_is_grounded():
    source = "The shop will repair the laptop free of charge."
    assert grounded("The shop will fix the laptop free of charge.", source) == 1.0


def test_a_clause_of_fewer_than_three_words_is_not_judged_alone():
    assert grounded("Refunds are paid within 14 days, at weekends.") == 1.0


def test_word_coverage_is_the_share_of_words_found_as_such_or_as_synonyms():
    # repair is fixed; fee, refund: none of the text's; 1 of 3
    assert word_coverage("repair fee refund?", "The shop will fix the laptop.") == pytest.approx(1 / 3)


def test_word_coverage_of_a_text_without_words_is_zero():
    assert word_coverage("How?", "The shop will fix the laptop.") == 0.0


def test_the_comma_of_a_number_does_not_split_a_clause():
    source = "The deposit of 1,200 euros is refunded when the lease ends."
    assert grounded("The deposit of 1,200 euros is refunded when the lease ends.", source) == 1.0


def test_a_chinese_word_inside_a_source_word_is_grounded():
    source = "用人单位应当在三十日内为劳动者办理社会保险登记。"
    assert grounded("单位应当在三十日内为劳动者办理社会保险。", source) == 1.0


def test_minutes_after_where_the_source_says_within_changes_a_condition():
    assert conflict(
        "乘客在司机接单3分钟内取消订单的，需支付5元取消费",
        "乘客在司机接单3分钟后再取消订单的，需支付5元取消费",
    ) == ("condition: within where the source says after")


@pytest.mark.parametrize(
    ("text", "passive"),
    [
        ("the fee is paid by the tenant", True),
        ("the fee is not paid", True),
        ("the fee is not refundable", False),
        ("罚款被撤销", True),
        ("费用由租客支付", False),
    ],
)
def test_a_passive_clause_is_a_form_of_be_before_a_participle_or_bei(text: str, passive: bool) -> None:
    assert passive_voice(text) is passive


def test_the_word_sequence_holds_the_words_and_negations_in_written_order_without_operators_or_numerals() -> (
    None
):
    assert word_sequence("The tenant must apply before the deadline, not after 3 days") == (
        "tenant",
        "appli",
        "deadlin",
        NEGATION,
    )


def test_two_parties_that_trade_places_around_a_negation_conflict() -> None:
    assert conflict(
        "Warranty claims must be submitted by the certified installer who fitted the system,"
        " not by the homeowner",
        "Warranty claims must be submitted by the homeowner,"
        " not by the certified installer who fitted the system",
    ) == ("swapped: certifi and homeown")


def test_rather_than_negates_what_follows() -> None:
    assert polarity("made by the installer rather than by the homeowner") == polarity(
        "made by the installer, not by the homeowner"
    )


def test_a_near_copy_that_moves_its_negation_to_another_clause_conflicts() -> None:
    assert conflict(
        "The plan does cover braces for adults, not only for members under 18",
        "The plan does not cover braces for adults, only for members under 18",
    ) == ("polarity: the negation moved to another clause")


def test_after_an_event_where_the_source_says_before_it_changes_a_condition() -> None:
    assert conflict(
        "持证人须在证书有效期届满后3个月内参加继续培训",
        "持证人须在证书有效期届满前3个月内参加继续培训",
    ) == ("condition: after where the source says before")


def test_qian_and_hou_inside_a_word_are_no_operators() -> None:
    assert relations("前往医院了解后果") == frozenset()


def test_a_clause_negated_where_the_clause_it_restates_is_not_is_reversed():
    sources = ("Dogs must also have received a kennel cough vaccine at least 14 days before the stay.",)
    assert reversed_polarity("A kennel cough vaccine is not required for the stay.", source_clauses(sources))


def test_a_paraphrase_that_keeps_the_polarity_is_not_reversed():
    sources = ("Dogs must also have received a kennel cough vaccine at least 14 days before the stay.",)
    assert (
        reversed_polarity(
            "A kennel cough vaccine is required two weeks before the stay.", source_clauses(sources)
        )
        is None
    )


def test_a_clause_is_compared_with_the_source_clause_that_holds_most_of_its_words():
    # the first source clause is negated, the one about the fee (which the statement restates) is not
    sources = ("Hives must not leave the apiary, and the inspection fee is paid by the owner.",)
    assert reversed_polarity("The owner pays the inspection fee.", source_clauses(sources)) is None


def test_a_clause_the_sources_hardly_restate_is_not_compared():
    sources = ("The inspection fee is paid by the owner.",)
    assert (
        reversed_polarity("Hives may not leave the apiary before the visit.", source_clauses(sources)) is None
    )


def test_a_negation_of_a_word_the_source_says_another_way_is_no_contradiction():
    assert (
        conflict(
            "购房人不认可实测面积的，可在交房后六十天内向青川市不动产登记中心申请复测",
            "购房人对实测面积有异议的，可在交房之日起60日内向青川市不动产登记中心申请复测",
        )
        is None
    )


def test_a_negation_of_a_word_the_source_has_is_a_contradiction():
    assert (
        conflict("会员卡不得转借他人使用", "会员卡可以转借他人使用")
        == "polarity: more negations in the statement"
    )


def test_negated_words_are_read_past_modals():
    assert [w for w, _ in negated_words("不得转借。The fee is not refundable.")] == ["转借", "refund"]


def test_a_near_copy_that_replaces_one_long_span_says_something_else():
    assert conflict(
        "保修期内市区以外的用户须将机器寄回维修站，往返运费由用户自行承担",
        "保修期内市区以外的用户须将机器寄回维修站，往返运费由衡州织美机械公司承担",
    ) == ("wording: 用户, 自行 where the source says 公司, 机械, 衡州")


def test_a_near_copy_that_only_drops_words_of_a_span_is_no_change():
    assert (
        conflict(
            "违反规定的，由执法部门责令改正并处罚款", "违反规定的，由城市管理综合执法部门责令改正并处罚款"
        )
        is None
    )


def test_a_paraphrase_that_changes_more_than_one_span_is_not_compared_word_by_word():
    assert (
        conflict(
            "The landlord must return the deposit within 30 days of the tenancy ending.",
            "Within thirty days after the lease ends, the owner has to give the deposit back.",
        )
        is None
    )
