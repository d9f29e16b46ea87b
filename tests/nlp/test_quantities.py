"""`ragtrack.nlp.quantities`: one amount written two ways has one value key; a word that is not a unit has
none."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ragtrack.nlp.quantities import value_key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((3, "天"), (72, "hours")),
        (("8.7", "cm"), (87, "millimetres")),
        ((3, "‰"), ("0.3", "%")),
        ((2, "周"), (14, "days")),
        ((1, "year"), (12, "months")),
        (("1.2", "米"), (120, "厘米")),
        ((2, "tonnes"), (2000, "kg")),
        ((100, "美元"), (100, "dollars")),
    ],
)
def test_one_amount_in_two_units_has_one_value_key(a, b):
    assert value_key(Decimal(str(a[0])), a[1]) == value_key(Decimal(str(b[0])), b[1]) is not None


@pytest.mark.parametrize(
    ("a", "b"),
    [((3, "business days"), (3, "days")), ((100, "美元"), (100, "元")), ((3, "days"), (3, "weeks"))],
)
def test_different_amounts_or_families_differ(a, b):
    assert value_key(Decimal(str(a[0])), a[1]) != value_key(Decimal(str(b[0])), b[1])


@pytest.mark.parametrize("word", ["points", "are", "hands", "月", None])
def test_a_word_that_is_not_a_unit_we_count_gives_no_key(word):
    assert value_key(Decimal(5), word) is None


def test_conversion_noise_does_not_reach_the_key():
    assert value_key(Decimal("8.7"), "cm") == "length:0.087"
