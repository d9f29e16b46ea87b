"""`ragtrack.nlp.questions`: the asks of a question."""

from __future__ import annotations

import pytest

from ragtrack.nlp.questions import asks


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "How much does a Veltrand pet passport cost, and who is allowed to issue one?",
            ("How much does a Veltrand pet passport cost", "who is allowed to issue one?"),
        ),
        ("在云州市养狗需要登记吗？登记证有效期多久？", ("在云州市养狗需要登记吗？", "登记证有效期多久？")),
        (
            "在岚江市办理家庭宽带，下单后多久能上门安装？初装费怎么收？",
            ("在岚江市办理家庭宽带，下单后多久能上门安装？", "初装费怎么收？"),
        ),
    ],
)
def test_a_question_that_asks_two_things_has_two_asks(question: str, expected: tuple[str, ...]) -> None:
    assert asks(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What is the minimum down payment for an FHA loan?",
        "If the playhouse cancels a performance, how do I get my money back?",
        "Bread and butter: which costs more?",
    ],
)
def test_a_question_that_asks_one_thing_is_one_ask(question: str) -> None:
    assert asks(question) == (question,)


def test_a_chinese_clause_without_an_interrogative_stays_with_the_ask_after_it() -> None:
    assert asks("在江城市中心血站献全血后，要间隔多久才能再次献血？") == (
        "在江城市中心血站献全血后，要间隔多久才能再次献血？",
    )
