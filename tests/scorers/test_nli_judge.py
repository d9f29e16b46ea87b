"""The `nli` backend with tiny cross-encoders the tests build: verdicts from the model's probabilities, each
pair once."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import CrossEncoder

from ragtrack.core.errors import InputError
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference
from ragtrack.scorers import Batch, build_scorer, nli_judge
from ragtrack.scorers.judge import OfflineJudge
from ragtrack.scorers.nli_judge import NliJudge, NliModel
from tests.fake_encoder import FakeEncoder
from tests.nli_models import build

SOURCES = ["The fee is 20 dollars. Refunds take 5 days.", "Support answers within one hour."]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli")
    return {
        "entailing": build(root / "entailing", leaning="entailment"),
        "contradicting": build(root / "contradicting", leaning="contradiction"),
        "random": build(root / "random", seed=1),
        "sentiment": build(root / "sentiment", labels={0: "negative", 1: "positive"}),
    }


def _offline() -> OfflineJudge:
    return OfflineJudge(FakeEncoder(), relevance_cosine_weight=0.5)


def _judge(folder: Path, **kw) -> NliJudge:
    return NliJudge(NliModel(str(folder)), _offline(), **kw)


def test_an_entailing_model_supports_the_statement(models):
    (v,) = _judge(models["entailing"]).support(["The fee is twenty dollars."], SOURCES)
    assert (v.supported, v.contradicted, v.score > 0.99) == (True, False, True)


def test_a_contradicting_model_contradicts_it_and_scores_0(models):
    (v,) = _judge(models["contradicting"]).support(["The fee is twenty dollars."], SOURCES)
    assert (v.supported, v.contradicted, v.score, v.reason.startswith("contradicts: nli")) == (
        False,
        True,
        0.0,
        True,
    )


def test_a_statement_copied_from_the_sources_needs_no_model(models):
    judge = _judge(models["contradicting"])
    (v,) = judge.support(["Refunds take 5 days."], SOURCES)
    assert (v.score, judge.model.predicted) == (1.0, 0)


def test_the_score_is_entailment_minus_contradiction_over_the_closest_sentences(models):
    statement = "Refunds are paid within a week."
    (v,) = _judge(models["random"], candidates=2).support([statement], SOURCES)
    sents = ["The fee is 20 dollars.", "Refunds take 5 days.", "Support answers within one hour."]
    cos = _offline().similarities([statement], sents)[0]
    near = sorted(sorted(range(3), key=lambda j: (-cos[j], j))[:2])
    premises = [sents[j] for j in near] + [" ".join(sents[j] for j in near)]
    probs = CrossEncoder(str(models["random"]), device="cpu").predict(
        [(p, statement) for p in premises], apply_softmax=True
    )
    e, c = float(np.max(probs[:, 1])), float(np.max(probs[:, 0]))
    assert v.score == pytest.approx(max(0.0, e - c), abs=1e-6)


def test_each_pair_is_judged_once_per_process(models):
    first, second = NliModel(str(models["random"])), NliModel(str(models["random"]))
    NliJudge(first, _offline()).support(["Refunds are quick."], SOURCES)
    NliJudge(second, _offline()).support(["Refunds are quick."], SOURCES)
    assert (first.predicted > 0, second.predicted) == (True, 0)


def test_prefetch_sends_a_batch_s_pairs_in_one_call(models, monkeypatch):
    judge = _judge(models["random"], candidates=1)
    judge.model.probs([("warm", "up")])  # load it
    model = nli_judge._models[judge.model.folder]
    calls = []
    real = model.predict
    monkeypatch.setattr(model, "predict", lambda pairs, **kw: calls.append(len(pairs)) or real(pairs, **kw))
    statements = [f"Statement number {i} about refunds." for i in range(5)]
    judge.prefetch(lambda: [judge.support([s], SOURCES) for s in statements])
    verdicts = [judge.support([s], SOURCES)[0] for s in statements]
    assert (calls, all(not math.isnan(v.score) for v in verdicts)) == ([5], True)


def test_a_model_without_nli_labels_is_an_error_naming_the_key(models):
    with pytest.raises(InputError, match="not an NLI model") as e:
        NliModel(str(models["sentiment"]), field="scorers.rag.nli_model").probs([("a", "b")])
    assert e.value.field == "scorers.rag.nli_model"


def _rag_case() -> tuple[EvalCase, Prediction]:
    ref = RagReference(ground_truth_answer="The fee is 20 dollars.", ground_truth_contexts=[SOURCES[0]])
    return (
        EvalCase(id="a", question="What is the fee?", reference=ref),
        Prediction(
            case_id="a", answer="The fee is twenty dollars.", contexts=[ContextChunk(text=s) for s in SOURCES]
        ),
    )


def test_the_rag_scorer_judges_with_the_nli_model(models):
    c, p = _rag_case()
    out = (
        build_scorer("rag", {"backend": "nli", "nli_model": str(models["contradicting"])})
        .use_encoder(FakeEncoder())
        .score(Batch(cases=[c], predictions=[p]))
    )
    assert out.cases[0].values["rag/faithfulness"] == 0.0


def test_the_rag_scorer_logs_the_nli_model_s_weights_hash(models):
    c, p = _rag_case()
    scorer = build_scorer("rag", {"backend": "nli", "nli_model": str(models["entailing"])}).use_encoder(
        FakeEncoder()
    )
    out = scorer.score(Batch(cases=[c], predictions=[p]))
    assert out.info.provenance["nli_model_sha256"] == NliModel(str(models["entailing"])).identity.sha256


def test_nli_settings_are_logged_only_with_the_nli_backend():
    assert "nli_model" not in build_scorer("rag", {}).info.params


def test_the_nli_backend_needs_a_model():
    with pytest.raises(InputError, match="backend nli needs nli_model"):
        build_scorer("rag", {"backend": "nli"})


def test_a_missing_nli_model_is_an_error_when_the_scorer_is_built(tmp_path):
    with pytest.raises(InputError, match="model path does not exist"):
        build_scorer("rag", {"backend": "nli", "nli_model": str(tmp_path / "nope")})


def test_earag_s_faithfulness_comes_from_the_nli_model_too(models):
    c, p = _rag_case()
    scorer = build_scorer("earag", {"backend": "nli", "nli_model": str(models["contradicting"])}).use_encoder(
        FakeEncoder()
    )
    out = scorer.score(Batch(cases=[c], predictions=[p]))
    assert out.cases[0].values["earag/faithfulness"] == 0.0
