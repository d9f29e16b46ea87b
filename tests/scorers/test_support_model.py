"""The offline backend's support model (SPEC §3, version 13 on): its file, its arithmetic, and how the
judge decides by it."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from ragtrack.core.hashing import sha256_bytes
from ragtrack.scorers import support_model
from ragtrack.scorers.judge import OfflineJudge
from ragtrack.scorers.support_model import FEATURES, SupportFeatures, SupportModel
from tests.fake_encoder import FakeEncoder

NEUTRAL = SupportFeatures(**dict.fromkeys(FEATURES, 0.0))


def model(threshold: float = 0.5, intercept: float = 0.0, **weights: float) -> SupportModel:
    return SupportModel(
        version="test",
        features=FEATURES,
        weights=tuple(weights.get(f, 0.0) for f in FEATURES),
        intercept=intercept,
        threshold=threshold,
        fitted_on="by hand",
    )


def test_the_probability_is_the_logistic_function_of_the_weighted_features() -> None:
    m = model(intercept=0.5, cosine=-2.0, missing_fact=1.5)
    f = NEUTRAL.model_copy(update={"cosine": 0.8, "missing_fact": 1.0})
    assert m.unsupported(f) == pytest.approx(1 / (1 + math.exp(-(0.5 - 1.6 + 1.5))))


@pytest.mark.parametrize("intercept", [-1000.0, 1000.0])
def test_the_probability_of_an_extreme_sum_is_0_or_1_without_overflow(intercept: float) -> None:
    assert model(intercept=intercept).unsupported(NEUTRAL) == pytest.approx(
        0.0 if intercept < 0 else 1.0, abs=1e-300
    )


def test_a_model_must_weigh_exactly_the_judge_s_features() -> None:
    with pytest.raises(ValidationError, match="exactly cosine"):
        SupportModel(
            version="x", features=("cosine",), weights=(1.0,), intercept=0.0, threshold=0.5, fitted_on=""
        )


def test_the_shipped_model_loads_and_its_hash_is_its_file_s() -> None:
    shipped = support_model.load()
    assert shipped.features == FEATURES and 0 < shipped.threshold < 1
    assert support_model.sha256() == sha256_bytes(support_model.PATH.read_bytes())


def test_the_shipped_model_never_rewards_a_failed_check_or_punishes_closeness() -> None:
    w = dict(zip(FEATURES, support_model.load().weights, strict=True))
    assert all(
        w[f] >= 0
        for f in ("quantity_conflict", "conflict", "missing_fact", "added_words", "reversed_polarity")
    )
    assert all(
        w[f] <= 0 for f in ("cosine", "lexical", "sources_lexical", "fuzz", "grounding", "word_coverage")
    )


@pytest.mark.parametrize(("cos", "supported"), [(0.9, True), (0.7, False)])
def test_a_statement_is_supported_when_its_probability_is_below_the_model_s_threshold(
    cos: float, supported: bool
) -> None:
    # P(unsupported) = σ(15 − 20 · cosine): below ½ exactly when the cosine is above 0.75
    judge = OfflineJudge(
        FakeEncoder({"Cats purr": [1, 0], "Felines rumble softly": [cos, math.sqrt(1 - cos**2)]}),
        relevance_cosine_weight=0.5,
        model=model(intercept=15.0, cosine=-20.0),
    )
    (v,) = judge.support(["Cats purr"], ["Felines rumble softly."])
    assert (v.supported, v.reason) == (supported, "" if supported else "no_match")
    assert v.score == pytest.approx(1 - 1 / (1 + math.exp(-(15 - 20 * cos))))


def test_a_failed_check_makes_a_statement_unsupported_whatever_the_model_says() -> None:
    judge = OfflineJudge(FakeEncoder(), relevance_cosine_weight=0.5, model=model(intercept=-50.0))
    (v,) = judge.support(["The fee applies to 30 guests"], ["The fee applies to guests."])
    assert (v.supported, v.reason) == (False, "fact_mismatch: 30") and v.score > 0.99


def test_a_contradicted_statement_keeps_half_the_model_s_support() -> None:
    judge = OfflineJudge(FakeEncoder(), relevance_cosine_weight=0.5, model=model(intercept=-50.0))
    (v,) = judge.support(["The fee is 30 dollars"], ["The fee is 20 dollars."])
    assert v.contradicted and v.score == pytest.approx(0.5)


def test_a_statement_its_sources_contain_is_supported_without_the_model() -> None:
    judge = OfflineJudge(FakeEncoder(), relevance_cosine_weight=0.5, model=model(intercept=50.0))
    (v,) = judge.support(["The fee is 20 dollars"], ["The fee is 20 dollars. Refunds take 5 days."])
    assert (v.supported, v.score) == (True, 1.0)


@pytest.mark.parametrize(
    ("statement", "chinese"),
    [("The fee is £20 — payable at the café", 0.0), ("手续费为20英镑", 1.0), ("The 退款 window", 1.0)],
)
def test_a_statement_is_measured_as_chinese_only_when_it_holds_a_cjk_ideograph(
    statement: str, chinese: float
) -> None:
    judge = OfflineJudge(FakeEncoder(), relevance_cosine_weight=0.5, model=model())
    (measured,) = judge.measure([statement], ["Refunds take five days."]) or [None]
    assert measured is not None and measured[0].chinese == chinese
