"""What a question asks for and what a text adds to it (`ragtrack.nlp.asks`)."""

from __future__ import annotations

import pytest

from ragtrack.nlp.asks import ask, beyond, relevance_text, states


@pytest.mark.parametrize(
    "question, kind",
    [
        ("How long may a registered object stay abroad?", "duration"),
        ("How quickly must a controller report a breach?", "duration"),
        ("How many business days does a transfer take?", "duration"),
        ("In how many weeks is the permit issued?", "duration"),
        ("在江城市中心血站献全血后，要间隔多久才能再次献血？", "duration"),
        ("审评审批各需要多长时间？", "duration"),
        ("试用期最长是几个月？", "duration"),
        ("When was the Peace of Westphalia signed?", "time"),
        ("Which war did it end, and when was it signed?", "time"),
        ("In what year did the fleet sail?", "time"),
        ("郑和第一次下西洋是在哪一年？", "time"),
        ("图书馆什么时候开门？", "time"),
        ("住宅装修施工在哪些时段禁止进行？", "time"),
        ("狩猎期是哪段时间？", "time"),
        ("每千瓦补多少钱？", "money"),
        ("How many dollars does the licence cost?", "money"),
        ("How much does the licence cost?", "amount"),
        ("What percentage of the fee is refunded?", "amount"),
        ("实际税负是多少？", "amount"),
        ("每天最多可以吃几次？", "amount"),
        ("Does the Python requests library set a default timeout?", "polar"),
        ("Can a tenant sublet the flat?", "polar"),
        ("未成年人是否可以单独乘机？", "polar"),
        ("这笔费用可以退吗？", "polar"),
        ("Who has to provide fall protection?", None),
        ("What happens when a beekeeper suspects foulbrood?", None),
        ("如何用Git撤销最近一次提交？", None),
    ],
)
def test_the_interrogative_names_the_kind_of_value_asked_for(question: str, kind: str | None) -> None:
    assert ask(question) == kind


@pytest.mark.parametrize(
    "kind, text",
    [
        ("duration", "The licence is valid for 5 years."),
        ("duration", "试用期最长为六个月。"),
        ("duration", "Reviews take between 10 and 20 business days."),
        ("time", "It was signed in 1648."),
        ("time", "Sessions run on the first and third Friday of each month."),
        ("time", "始于永乐三年，即1405年。"),
        ("time", "每周一上午开放。"),
        ("money", "每户最多能拿3000元。"),
        ("amount", "The fee is twenty dollars."),
        ("amount", "税负为5%。"),
        ("polar", "It does not."),
        (None, "Anything at all."),
    ],
)
def test_a_text_states_the_kind(kind: str | None, text: str) -> None:
    assert states(kind, text)


@pytest.mark.parametrize(
    "kind, text",
    [
        ("duration", "The fee is 20 dollars."),
        ("duration", "每次献血200毫升。"),
        ("time", "The fleet's largest ship carried a thousand men."),
        ("time", "Sessions are booked online."),
        ("money", "申报后一般3个月内发放。"),
        ("amount", "The employer must provide a harness."),
    ],
)
def test_a_text_without_a_value_of_the_kind_does_not_state_it(kind: str, text: str) -> None:
    assert not states(kind, text)


def test_beyond_removes_the_english_words_the_question_has() -> None:
    said = beyond("How long does a refund take?", "Refunds take 5 days, the bank says.")
    assert said.split() == ["5", "days,", "the", "bank", "says."]


def test_beyond_cuts_chinese_into_words_and_removes_those_the_question_has() -> None:
    said = beyond("献全血后要间隔多久才能再次献血？", "两次全血献血至少间隔6个月。")
    assert "间隔" not in said and "6个月" in said


def test_beyond_keeps_a_word_the_question_has_only_part_of() -> None:
    assert beyond("What is the refund fee?", "A refund-policy fee applies.").split() == [
        "A",
        "refund-policy",
        "applies.",
    ]


def test_a_polar_question_reads_the_whole_text() -> None:
    text = "Yes, requests sets no default timeout."
    assert relevance_text("Does requests set a default timeout?", text) == text


def test_any_other_question_reads_what_the_text_adds() -> None:
    q = "How long does a refund take?"
    assert relevance_text(q, "Refunds take 5 days.") == beyond(q, "Refunds take 5 days.")
