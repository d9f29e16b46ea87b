"""Statements and content tokens (SPEC §3)."""

from __future__ import annotations

import pytest

from ragtrack.nlp.lexical import content_tokens, coverage, split_statements


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("退款7日内到账。节假日顺延！还有问题吗？", ["退款7日内到账", "节假日顺延", "还有问题吗"]),
        ("First claim; second claim", ["First claim", "second claim"]),
        ("It costs 3.5% a year. Then it rises.", ["It costs 3.5% a year", "Then it rises"]),
        ("Line one\nLine two", ["Line one", "Line two"]),
        ("e.g.it stays", ["e.g.it stays"]),  # `.` splits only before whitespace or the end
        ("Done. - \n…", ["Done"]),  # pieces without a letter, digit or ideograph are dropped
        ("", []),
    ],
)
def test_statements_split_on_sentence_ends_and_newlines(text: str, pieces: list[str]) -> None:
    assert split_statements(text) == pieces


def test_english_content_tokens_drop_stop_words_and_plurals() -> None:
    assert content_tokens("The refunds arrive within 7 days") == {"refund", "arrive", "within", "7", "day"}


def test_chinese_content_tokens_are_bigrams_cut_at_function_characters() -> None:
    assert content_tokens("贷款的最低首付是多少") == {"贷款", "最低", "低首", "首付"}


def test_coverage_is_the_share_of_the_first_sets_tokens() -> None:
    assert coverage(frozenset({"a", "b", "c", "d"}), frozenset({"a", "b", "x"})) == 0.5
    assert coverage(frozenset(), frozenset({"a"})) == 0.0


def test_a_citations_list_is_not_a_statement() -> None:
    assert split_statements("Refunds take 7 days.\ncitations: [policies/refund.md#2, faq#1]") == [
        "Refunds take 7 days"
    ]
