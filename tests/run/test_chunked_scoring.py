"""A large eval set, spooled to disk and scored a chunk at a time, gives what one batch in memory gives.

The spool's sizes are made tiny here (chunks of 5 cases, nothing kept in memory), so the
demo's 52 cases take the path a 100,000-case run takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrack.core import spool
from ragtrack.core.spool import Spool
from ragtrack.core.types import EvalSet, Generation, ScorerOutput
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.inputs.predictions import match_prediction_file
from ragtrack.run.runner import score_files, score_outputs
from ragtrack.scorers import Batch, Scorer, build_scorer
from ragtrack.scorers.base import ScorerParams, ScoreTable
from ragtrack.scorers.eval_json_v2 import EvalJsonV2Scorer

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo"
FILES = [DEMO / "questions.json", DEMO / "qaset.json"]


@pytest.fixture
def predictions(tmp_path: Path) -> Path:
    """The demo's predictions, shuffled, with a duplicate, one keyed by its question, one matching no case,
    and two cases left without one."""
    lines = [json.loads(x) for x in (DEMO / "predictions" / "lora_a__v1.jsonl").read_text().splitlines()]
    lines = lines[::-1][2:]
    lines.append({**lines[3], "answer": "a later answer"})
    by_question = {k: v for k, v in lines[5].items() if k != "id"}
    lines[5] = by_question
    lines.append({"id": "no-such-case", "answer": "x"})
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def _load(predictions: Path, keep: set[str] | None = None) -> tuple[EvalSet, Generation]:
    es, _ = load_eval_set(list(FILES))
    return es, match_prediction_file(predictions, es.cases, keep=keep)


def _scored(predictions: Path, scorers: list[Scorer]) -> list[ScorerOutput]:
    es, generation = _load(predictions)
    return score_outputs(es.cases, generation, scorers)


@pytest.fixture
def on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool, "CHUNK", 5)
    monkeypatch.setattr(spool, "IN_MEMORY", 0)


def test_the_demo_fits_in_memory_by_default(predictions: Path) -> None:
    es, generation = _load(predictions)
    assert not any(isinstance(x, Spool) and x.on_disk for x in (es.cases, generation.predictions))


def test_spooled_cases_equal_the_cases_in_memory(predictions: Path, on_disk: None) -> None:
    spooled = load_eval_set(list(FILES))[0].cases
    assert isinstance(spooled, Spool) and spooled.on_disk
    spool.IN_MEMORY = 10**9
    assert list(spooled) == list(load_eval_set(list(FILES))[0].cases)


@pytest.mark.parametrize("keep", [None, {"q03", "q07", "q40", "q41"}], ids=["all", "dev subset"])
def test_spooled_predictions_match_as_in_memory(
    predictions: Path, on_disk: None, keep: set[str] | None
) -> None:
    _, spooled = _load(predictions, keep)
    assert isinstance(spooled.predictions, Spool) and spooled.predictions.on_disk == (keep is None)
    spool.IN_MEMORY = 10**9
    _, in_memory = _load(predictions, keep)
    fields = ("n_missing", "missing_ids", "n_unmatched", "unmatched_keys", "duplicates_dropped")
    assert (list(spooled.predictions), *(getattr(spooled, f) for f in fields)) == (
        list(in_memory.predictions),
        *(getattr(in_memory, f) for f in fields),
    )


def test_chunked_scores_equal_one_batch(
    predictions: Path, on_disk: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    add = EvalJsonV2Scorer.add

    def counted(self: EvalJsonV2Scorer, state: ScoreTable, batch: Batch) -> None:
        calls.append(len(batch.cases))
        add(self, state, batch)

    monkeypatch.setattr(EvalJsonV2Scorer, "add", counted)
    scorers = [build_scorer("eval_json_v2"), build_scorer("refusal_citation")]
    chunked = _scored(predictions, scorers)
    spool.IN_MEMORY = 10**9
    whole = _scored(predictions, scorers)
    assert (calls, chunked) == ([5] * 10 + [2, 52], whole)  # 52 cases in chunks of 5, then one batch


class _Whole(Scorer):
    """A scorer that is not chunked: it records the size of each batch it gets."""

    name = "whole"
    version = "1"
    Params = ScorerParams
    sizes: list[int] = []

    def score(self, batch: Batch) -> ScorerOutput:
        self.sizes.append(len(batch.cases))
        return ScorerOutput(info=self.info, metrics={})


def test_a_scorer_that_is_not_chunked_gets_one_batch(predictions: Path, on_disk: None) -> None:
    _scored(predictions, [build_scorer("eval_json_v2"), _Whole()])
    assert _Whole.sizes == [52]


def test_ragtrack_score_keeps_a_large_set_in_memory(predictions: Path, on_disk: None) -> None:
    scored = score_files(FILES, predictions, [build_scorer("eval_json_v2")], [], spool=False)
    assert not any(
        isinstance(x, Spool) and x.on_disk for x in (scored.eval_set.cases, scored.generation.predictions)
    )
