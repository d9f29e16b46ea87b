"""`ragtrack.contradiction`: polarity, conditions and quantities of a statement against its evidence."""

from __future__ import annotations

import pytest

from ragtrack.contradiction import conflict, polarity, quantity_conflict, relation_spans, relations
from ragtrack.facts import facts, provided_keys


@pytest.mark.parametrize(("text", "n"), [
    ("The deposit is not refundable.", 1), ("The deposit is refundable.", 0), ("You can't cancel.", 1),
    ("押金不予退还", 1), ("押金可以退还", 0), ("无需提前申请", 1), ("非常重要", 0), ("不得超过12米", 0), ("no more than 12 m", 0),
])
def test_polarity_counts_negations_not_bounds_or_lexical_items(text, n):
    assert polarity(text) == n


@pytest.mark.parametrize(("text", "found"), [
    ("apply at least 60 days before expiry", {"min", "before"}), ("不得超过12米", {"max"}), ("30日内提出", {"within"}),
    ("三天后", {"after"}), ("最后一天", set()),
])
def test_relations_are_read_as_canonical_operators(text, found):
    assert relations(text) == found


def test_a_negated_copy_conflicts():
    assert conflict("The deposit is not refundable", "The deposit is refundable") == "polarity: more negations in the statement"


def test_a_changed_bound_conflicts():
    assert conflict("claims are made within 30 days after delivery", "claims are made at least 30 days before delivery") \
        == "condition: after where the source says before"


def test_a_paraphrase_is_not_compared_word_by_word():
    assert conflict("No one had left the heliosphere before Voyager 1", "Voyager 1 was the first to leave the heliosphere") is None


def test_an_amount_of_the_family_the_evidence_states_otherwise_conflicts():
    src = "The fee is 20 dollars."
    assert quantity_conflict(facts("The fee is 30 dollars."), facts(src), provided_keys(src)) == "30usd vs 20usd"


def test_the_same_amount_in_another_unit_does_not_conflict():
    src = "Refunds take 72 hours."
    assert quantity_conflict(facts("Refunds take three days."), facts(src), provided_keys(src)) is None


def test_an_operator_in_its_opposites_place_contradicts_where_both_occur_elsewhere() -> None:
    # 后 (after) where the source has 内 (within); 受理后 and 工作日内 occur in both, so the sets alone cannot tell
    said = "用户须自交寄之日起30日后提出索赔，快递公司在受理后7个工作日内答复"
    source = "用户须自交寄之日起30日内提出索赔，快递公司在受理后7个工作日内答复"
    assert conflict(said, source) == "condition: after where the source says within"


def test_the_same_operators_in_the_same_places_do_not_contradict() -> None:
    text = "Book at least 48 hours before the visit and pay within a week."
    assert conflict(text, text) is None


def test_relation_spans_are_in_written_order() -> None:
    assert [name for _, _, name in relation_spans("pay within 30 days, at least 2 days before")] == ["within", "min", "before"]
