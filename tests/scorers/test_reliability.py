"""scorers.reliability: a report quotes a metric's shipped accuracy only for the settings it was measured
with."""

from __future__ import annotations

import pytest

from ragtrack.scorers.reliability import load, measured_params, note
from tests.scorers.test_rag import embedding_scorer as build_scorer


@pytest.mark.parametrize("name", ["rag", "earag"])
def test_the_shipped_file_was_measured_with_the_default_settings(name: str) -> None:
    shipped = load(name)
    assert shipped is not None
    assert shipped[0].params == measured_params(build_scorer(name).info.params)


def test_the_default_scorer_quotes_the_measured_accuracy() -> None:
    assert build_scorer("rag").trust_note("faithfulness").startswith("pairwise accuracy ")


def test_a_setting_a_metric_reads_withholds_its_figure_and_is_named() -> None:
    scorer = build_scorer("rag", {"relevance_cosine_weight": 0.9})
    assert scorer.trust_note("context_relevance") == (
        "reliability measured with other settings only (set otherwise here: relevance_cosine_weight)"
    )


def test_a_setting_a_metric_does_not_read_keeps_its_figure() -> None:
    scorer = build_scorer("rag", {"correctness_f1_weight": 0.5})
    assert scorer.trust_note("faithfulness").startswith("pairwise accuracy ")
    assert "correctness_f1_weight" in scorer.trust_note("answer_correctness")


def test_a_setting_of_how_the_scorer_runs_keeps_the_figure() -> None:
    scorer = build_scorer("rag", {"batch_size": 8, "embedding_cache": False})
    assert scorer.trust_note("faithfulness").startswith("pairwise accuracy ")


def test_other_embedding_weights_withhold_the_figure() -> None:
    scorer = build_scorer("rag")
    found = note(
        "rag", scorer.version, "offline", "faithfulness", measured_params(scorer.info.params), "0" * 64
    )
    assert found == "reliability measured with other settings only (set otherwise here: embedding weights)"


def test_the_measured_embedding_weights_keep_the_figure() -> None:
    scorer = build_scorer("rag")
    shipped = load("rag")
    assert shipped is not None
    weights = shipped[0].derived_from.model_sha256
    found = note(
        "rag", scorer.version, "offline", "faithfulness", measured_params(scorer.info.params), weights
    )
    assert found.startswith("pairwise accuracy ")


def test_earag_s_grading_settings_keep_its_figures() -> None:
    scorer = build_scorer(
        "earag", {"levels": {"优秀": 0.9, "良好": 0.7, "一般": 0.6}, "regenerate_below": 0.5}
    )
    assert scorer.trust_note("entity_coverage").startswith("pairwise accuracy ")
    assert scorer.trust_note("hallucination").startswith("pairwise accuracy ")


def test_earag_s_hallucination_weight_withholds_only_hallucination_s_figure() -> None:
    scorer = build_scorer("earag", {"hallucination_entity_weight": 0.7})
    assert "hallucination_entity_weight" in scorer.trust_note("hallucination")
    assert scorer.trust_note("entity_coverage").startswith("pairwise accuracy ")
