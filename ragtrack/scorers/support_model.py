"""The offline backend's support model (SPEC §3, version 13 on): how likely a statement is *not* supported by
its sources, from the measures the offline judge takes of it.

    model = support_model.load()
    model.unsupported(features)   # -> 0.12: P(unsupported), a logistic function of the features

A logistic regression over `SupportFeatures`, fitted by `bench/fit_support.py` on the tuning split of
the pair benchmark (`bench/rag_pairs/`): the altered statement of each worse faithfulness side is
unsupported, every statement of the better side supported. Its weights ship in `support/offline.json`,
whose sha256 the scorers log (`support_model_sha256`), so a run names the exact model that graded it.
The decision threshold is fitted with it: the one that flags the most altered statements while leaving
as many better answers clean (the larger of the two shares' minimum, on the tuning split).
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from ragtrack.core.hashing import sha256_bytes

__all__ = ["FEATURES", "PATH", "SupportFeatures", "SupportModel", "load", "sha256"]

PATH = Path(__file__).resolve().parent / "support" / "offline.json"


class SupportFeatures(BaseModel):
    """What the offline judge measures of a statement against its sources (SPEC §3), each 0..1 but the
    count `added_words`."""

    model_config = ConfigDict(frozen=True)

    cosine: float  # the best embedding cosine with a source sentence
    lexical: float  # the largest share of its support tokens one source sentence holds
    sources_lexical: float  # the share of its support tokens all the sources together hold
    fuzz: float  # rapidfuzz partial_ratio / 100 with its best evidence
    quantity_conflict: float  # 1: a fact of it no source provides, where the evidence has a rival
    conflict: float  # 1: it contradicts its evidence in polarity, a relation, a scope or a wording
    missing_fact: float  # 1: a fact of it no source provides
    added_words: float  # how many words it adds to the evidence it copies that no source has
    grounding: float  # the share of words its least grounded clause finds in the sources
    reversed_polarity: float  # 1: a clause of it negated where the source clause it restates is not
    word_coverage: float  # the share of its words the sources have (as such, inside one, or a synonym)
    chinese: float  # 1: it holds a CJK ideograph, so it is Chinese (its tokens are character bigrams)


FEATURES = tuple(SupportFeatures.model_fields)


class SupportModel(BaseModel):
    """A fitted logistic model: P(unsupported) = 1 / (1 + exp(−(intercept + Σ weight · feature)))."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str  # the scorers' version whose measures it was fitted on
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float  # P(unsupported) at or above which a statement is not supported
    fitted_on: str  # the pairs it was fitted on, and how many statements

    @model_validator(mode="after")
    def _one_weight_per_feature(self) -> SupportModel:
        if self.features != FEATURES or len(self.weights) != len(FEATURES):
            raise ValueError(f"the support model must weigh exactly {', '.join(FEATURES)}")
        return self

    def unsupported(self, f: SupportFeatures) -> float:
        """P(the statement is not supported by its sources)."""
        z = self.intercept + math.fsum(
            w * getattr(f, name) for w, name in zip(self.weights, FEATURES, strict=True)
        )
        return 1 / (1 + math.exp(min(-z, 700.0)))  # exp overflows past 709


@cache
def load() -> SupportModel:
    """The support model shipped with the scorers."""
    return SupportModel.model_validate_json(PATH.read_text(encoding="utf-8"))


@cache
def sha256() -> str:
    """sha256 of the support model's file: logged with every scorer that judges with it."""
    return sha256_bytes(PATH.read_bytes())
