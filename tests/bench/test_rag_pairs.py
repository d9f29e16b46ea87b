"""The dev set of pairs (bench/rag_pairs/) and its benchmark, on a small slice with a floor."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_rag_quality.py"


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("bench_rag_quality", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_dev_set_has_12_pairs_per_metric_half_english_half_chinese_in_several_domains(quality) -> None:
    pairs = quality.load_pairs()
    per_metric = Counter(p.metric for p in pairs)
    assert len(per_metric) == 8 and min(per_metric.values()) >= 12
    assert Counter(p.lang for p in pairs) == {"en": len(pairs) // 2, "zh": len(pairs) // 2}
    assert len({p.domain for p in pairs}) >= 6
    assert {p.split for p in pairs} == {"tune", "holdout", "blind", "heldout"}


def test_better_and_worse_sides_differ_in_length_by_less_than_half(quality) -> None:
    for p in quality.load_pairs():
        b, w = (len(s.answer) + sum(map(len, s.contexts)) for s in (p.better, p.worse))
        assert max(b, w) < 1.5 * min(b, w), p.id


def test_every_metric_prefers_the_better_side_on_a_slice(quality) -> None:
    pairs = [
        p
        for p in quality.load_pairs()
        if p.id.split(":")[0]
        in {"en-finance-fha", "en-law-gdpr", "zh-tax-small-enterprise", "zh-law-probation"}
    ]
    acc, misses = quality.accuracy(pairs)
    assert len(acc) == 8
    assert all(a["all"] >= 0.75 for a in acc.values()), misses


def test_the_shipped_reliability_files_were_derived_from_the_installed_code_models_and_pairs(quality) -> None:
    shipped = quality.shipped_reliabilities()
    assert set(shipped) == {"rag", "earag"}
    for name, rel in shipped.items():
        assert rel.derived_from == quality.derivation(name), (
            f"{name}: re-derive with `python bench/bench_rag_quality.py --write-reliability`"
        )


def test_the_witness_pairs_score_on_this_machine_as_the_shipped_files_say(quality) -> None:
    for name, rel in quality.shipped_reliabilities().items():
        assert quality.witness_differences(rel.witness, quality.witness_scores(name)) == []


def test_the_witness_pairs_cover_every_metric_of_their_scorer(quality) -> None:
    for rel in quality.shipped_reliabilities().values():
        assert {pid.split(":")[1].split("/")[1] for pid in rel.witness} == set(rel.metrics)


def test_a_witness_score_that_moved_more_than_the_tolerance_is_named(quality) -> None:
    shipped = {"a": (0.5, 0.25), "b": (0.5, None), "c": (1.0, 0.0)}
    scored = {
        "a": (0.5 + quality.WITNESS_TOLERANCE / 2, 0.25),
        "b": (0.5, 0.0),
        "c": (1.0, 2 * quality.WITNESS_TOLERANCE),
    }
    assert quality.witness_differences(shipped, scored) == ["b", "c"]


def test_flag_rates_count_the_faithfulness_pairs_with_a_marked_altered_statement(quality) -> None:
    pairs = [p for p in quality.load_pairs("tune") if p.altered][:2]
    rates = quality.flag_rates(pairs)
    assert rates["all"][2] == 2 and all(0 <= r <= 1 for r in rates["all"][:2])
