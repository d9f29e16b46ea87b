"""Each scorer's metrics as per-case terms: from the per-case table alone, they give the logged numbers bit
for bit."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ragtrack.run.results import cases_frame
from ragtrack.run.runner import run
from ragtrack.scorers.base import get_scorer_class
from tests.demo_runs import demo_config

# base/v1 over-refuses, hallucinates and breaks the schema; lora_b/v2 is nearly perfect
JOBS = [("base", "v1"), ("lora_a", "v1"), ("lora_b", "v2")]


@pytest.fixture(scope="module", params=JOBS, ids=["-".join(j) for j in JOBS])
def scored(request, tmp_path_factory):
    """A demo job scored, and its per-case table read back from Parquet as `compare` reads it."""
    tmp = tmp_path_factory.mktemp("terms")
    result = run(demo_config(tmp, *request.param))
    cases_frame(result).to_parquet(tmp / "cases.parquet", index=False)
    frame = pd.read_parquet(tmp / "cases.parquet")
    return result, {c: frame[c].tolist() for c in frame.columns}


@pytest.mark.parametrize("scorer", ["eval_json_v2", "refusal_citation"])
def test_terms_give_the_logged_metrics_exactly(scored, scorer):
    result, columns = scored
    terms = get_scorer_class(scorer).case_terms(columns)
    derived = {t.metric: math.fsum(t.num) / math.fsum(t.den) if any(t.den) else t.empty for t in terms}
    assert derived == {k: result.metrics[k] for k in derived}


def test_every_rate_of_refusal_citation_has_terms_and_refusal_rates_are_lower_better(scored):
    _, columns = scored
    terms = {t.metric: t for t in get_scorer_class("refusal_citation").case_terms(columns)}
    rates = [
        "precision",
        "over_refusal",
        "under_refusal",
        "citation_hit_rate",
        "claim_containment",
        "claim_containment_cjk",
        "compliance",
    ]
    assert sorted(terms) == sorted(f"refusal_citation/{r}" for r in rates)
    assert [m for m, t in terms.items() if not t.higher_is_better] == [
        "refusal_citation/over_refusal",
        "refusal_citation/under_refusal",
    ]


def test_a_terms_numerator_counts_only_cases_in_its_denominator(scored):
    _, columns = scored
    for scorer in ("eval_json_v2", "refusal_citation"):
        for t in get_scorer_class(scorer).case_terms(columns):
            assert all(n == 0.0 for n, d in zip(t.num, t.den, strict=True) if d == 0.0), t.metric
            if t.binary:
                assert {n for n, d in zip(t.num, t.den, strict=True) if d} <= {0.0, 1.0}, t.metric
