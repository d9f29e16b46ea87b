"""`rag` and `earag` with the real all-MiniLM-L6-v2: ranking in both languages, provenance, determinism, CLI
and MLflow."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.cli import main
from ragtrack.app.hydra_app import execute
from ragtrack.clients import embeddings
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference, ScoreValue
from ragtrack.scorers import Batch, build_scorer, support_model
from tests.conftest import make_config, write_jsonl

SUPPORT = {
    "en": (
        "What is the minimum down payment for an FHA loan?",
        "Borrowers with a credit score of at least 580 can make a down payment as low as 3.5% of the "
        "purchase price.",
        {
            "supported": "A credit score of 580 or more allows a down payment of just 3.5%.",
            "changed": "A credit score of 580 or more allows a down payment of just 5%.",
            "unsupported": "FHA loans are only available to first-time home buyers.",
        },
    ),
    "zh": (
        "退款多久到账？",
        "退款将在审核通过后7个工作日内原路退回至付款账户，节假日顺延。",
        {
            "supported": "审核通过后，退款会在7个工作日内退回原付款账户。",
            "changed": "审核通过后，退款会在3个工作日内退回原付款账户。",
            "unsupported": "退款也可以选择到门店领取现金。",
        },
    ),
}


def _faithfulness(lang: str) -> dict[str, float]:
    question, context, answers = SUPPORT[lang]
    cases = [EvalCase(id=k, question=question, reference=RagReference()) for k in answers]
    preds = [
        Prediction(case_id=k, answer=a, contexts=[ContextChunk(text=context)]) for k, a in answers.items()
    ]
    out = build_scorer("rag").score(Batch(cases=cases, predictions=preds))
    return {cs.case_id: _number(cs.values["rag/faithfulness"]) for cs in out.cases}


def _number(value: ScoreValue) -> float:
    """A metric's value, which is a number."""
    assert isinstance(value, (int, float))
    return value


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_supported_statement_outranks_an_unsupported_or_changed_one(lang: str) -> None:
    f = _faithfulness(lang)
    # graded: a supported statement scores above 1 − the support model's threshold, the others at most that
    assert f["supported"] > 1 - support_model.load().threshold >= max(f["changed"], f["unsupported"])


def _rag_files(tmp_path: Path) -> tuple[Path, Path]:
    q_en, ctx_en, a_en = SUPPORT["en"]
    q_zh, ctx_zh, a_zh = SUPPORT["zh"]
    eval_set = write_jsonl(
        tmp_path / "rag.jsonl",
        [
            {
                "id": "en",
                "question": q_en,
                "ground_truth_answer": a_en["supported"],
                "ground_truth_contexts": [ctx_en],
            },
            {"id": "zh", "question": q_zh},
        ],
    )
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {
                "id": "en",
                "answer": a_en["changed"],
                "contexts": [{"text": ctx_en, "source_path": "fha.md", "id": "fha#1"}],
            },
            {"id": "zh", "answer": a_zh["supported"], "contexts": [ctx_zh]},
        ],
    )
    return eval_set, preds


def test_score_json_names_rag_and_earag_metrics_counts_and_nulls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_set, preds = _rag_files(tmp_path)
    assert (
        main(
            [
                "score",
                "--eval-set",
                str(eval_set),
                "--predictions",
                str(preds),
                "--scorer",
                "rag",
                "--scorer",
                "earag",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    m = doc["metrics"]
    assert (m["rag/faithfulness_n"], m["rag/answer_correctness_n"]) == (2.0, 1.0)
    en, zh = (next(c for c in doc["cases"] if c["id"] == k) for k in ("en", "zh"))
    # the changed English answer is contradicted, the supported Chinese one is not
    assert en["rag/faithfulness"] < 0.5 < zh["rag/faithfulness"]
    assert m["rag/faithfulness"] == pytest.approx((en["rag/faithfulness"] + zh["rag/faithfulness"]) / 2)
    assert zh["rag/context_recall"] is None and zh["rag/not_computed"].startswith(
        "context_recall: no ground_truth_answer"
    )
    assert zh["earag/level"] in ("优秀", "良好", "一般", "较差")


def test_same_inputs_score_bit_identically_in_a_fresh_scorer(tmp_path: Path) -> None:
    def once() -> list[dict[str, ScoreValue]]:
        q, ctx, answers = SUPPORT["zh"]
        cases = [
            EvalCase(id=k, question=q, reference=RagReference(ground_truth_answer=answers["supported"]))
            for k in answers
        ]
        preds = [
            Prediction(case_id=k, answer=a, contexts=[ContextChunk(text=ctx)]) for k, a in answers.items()
        ]
        return [cs.values for cs in build_scorer("rag").score(Batch(cases=cases, predictions=preds)).cases]

    first, again = once(), once()
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_a_run_logs_the_embedding_models_identity_and_the_rag_metrics(
    demo_files: dict[str, Path], tmp_path: Path
) -> None:
    eval_set, preds = _rag_files(tmp_path)
    cfg = make_config(
        demo_files,
        eval_set={"name": "rag", "files": [str(eval_set)]},
        generator={"name": "replay", "params": {"path": str(preds)}},
        scorers={"rag": {}, "earag": {}},
        gates={},
    )
    execute(cfg, base_dir=tmp_path)
    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    sha = embeddings.shared().identity.sha256
    assert (
        run.data.params["scorer/rag/embedding_model_sha256"]
        == run.data.params["scorer/earag/embedding_model_sha256"]
        == sha
    )
    assert run.data.params["scorer/rag/support_model_sha256"] == support_model.sha256()
    assert run.data.metrics["rag/faithfulness_n"] == 2.0 and "rag/context_precision" in run.data.metrics
    assert not math.isnan(run.data.metrics["earag/overall"])
