"""The extractive generator: answers quoted from a built index of the tiny bilingual corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.core.errors import InputError
from ragtrack.core.types import AnswerExample, EvalCase, ExpectedV2, Prediction, RagReference
from ragtrack.generators import build_generator
from ragtrack.index.build import IndexSpec, index_spec, open_index
from ragtrack.index.retriever import Retriever
from ragtrack.run.report import render_report
from ragtrack.run.runner import prepare, run
from ragtrack.scorers import Batch, build_scorer
from ragtrack.scorers.eval_json_v2 import parse_answer
from ragtrack.scorers.refusal_citation import parse_citations
from tests.conftest import make_config
from tests.index.corpus import index_config, write_corpus

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [
    "What uptime is guaranteed for compute instances?",
    "How much can I spend on a hotel per night?",
    "退款多久能退回来？",
    "账户被锁定多久？",
]
_EMPTY = AnswerExample(
    target_audience="",
    main_topic="",
    sub_topic="",
    detailed_description=[],
    original_evidence="",
    predicted_questions=[],
)


def v2_case(i: int, q: str) -> EvalCase:
    return EvalCase(id=f"v{i}", question=q, expected=ExpectedV2(answer_example=_EMPTY))


def rag_case(i: int, q: str) -> EvalCase:
    return EvalCase(id=f"r{i}", question=q, reference=RagReference())


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> IndexSpec:
    return index_spec(index_config(write_corpus(tmp_path_factory.mktemp("corpus")), size=70))


def generate(spec: IndexSpec, cases: list[EvalCase], **params) -> list[Prediction]:
    gen = build_generator("extractive", params)
    gen.index = spec
    return list(gen.generate(cases, "").predictions)


def test_json_answers_pass_the_eval_json_v2_schema(spec):
    preds = generate(spec, [v2_case(i, q) for i, q in enumerate(QUESTIONS)])
    assert [parse_answer(p.answer)[1] for p in preds] == [None] * len(QUESTIONS)


def test_json_answers_are_grounded_in_their_contexts(spec):
    cases = [v2_case(i, q) for i, q in enumerate(QUESTIONS)]
    out = build_scorer("eval_json_v2").score(Batch(cases=cases, predictions=generate(spec, cases)))
    assert [c.values["eval_json_v2/grounding"] for c in out.cases] == [1.0] * len(QUESTIONS)


def test_auto_gives_json_to_question_v2_cases_and_text_to_the_others(spec):
    v2, rag = generate(spec, [v2_case(0, QUESTIONS[0]), rag_case(0, QUESTIONS[0])])
    assert (v2.answer.startswith("{"), "\ncitations: [" in rag.answer) == (True, True)


def test_text_answers_carry_their_citations_in_the_refusal_citation_convention(spec):
    preds = generate(spec, [rag_case(i, q) for i, q in enumerate(QUESTIONS)], answer_format="text")
    assert [parse_citations(p.answer, None) for p in preds] == [p.citations for p in preds] and all(
        p.citations for p in preds
    )


def test_citations_name_the_paragraph_of_each_quoted_sentence(spec):
    (pred,) = generate(spec, [rag_case(0, "账户被锁定多久？")], max_sentences=1)
    assert pred.citations == ["zh/security.md#2"] and pred.answer.startswith(
        "连续 5 次输入错误密码后，账户将被锁定 30 分钟。"
    )


def test_the_best_covering_sentence_comes_first(spec):
    (pred,) = generate(
        spec, [rag_case(0, "How much can I spend on a hotel per night?")], answer_format="text"
    )
    assert pred.answer.startswith("Hotel costs in first-tier cities are capped at 650 yuan per night.")


def test_contexts_are_the_retrieved_chunks(spec):
    (pred,) = generate(spec, [rag_case(0, QUESTIONS[2])], top_k=2)
    hits = Retriever(open_index(spec)).search([QUESTIONS[2]], 2, "bm25")[0]
    assert [(c.id, c.source_path, c.text, c.score) for c in pred.contexts] == [
        (h.chunk.id, h.chunk.source_path, h.chunk.text, h.score) for h in hits
    ]


def test_the_same_questions_give_identical_answers(spec):
    cases = [v2_case(i, q) for i, q in enumerate(QUESTIONS)] + [
        rag_case(i, q) for i, q in enumerate(QUESTIONS)
    ]
    assert generate(spec, cases, retrieval="hybrid") == generate(spec, cases, retrieval="hybrid")


def test_nothing_retrieved_is_the_refusal(spec):
    (pred,) = generate(spec, [v2_case(0, "zebra quokka")])
    assert (pred.answer, pred.citations, pred.contexts) == ("not in context", [], [])


def test_a_retrieved_heading_alone_is_the_refusal(tmp_path):
    heading_chunks = index_spec(index_config(write_corpus(tmp_path), size=20))
    (pred,) = generate(heading_chunks, [v2_case(0, "SLA")], top_k=1)
    assert (pred.answer, [c.text for c in pred.contexts]) == ("not in context", ["# SLA"])


def test_keep_limits_the_answers_to_a_subset(spec):
    cases = [rag_case(i, q) for i, q in enumerate(QUESTIONS)]
    gen = build_generator("extractive")
    gen.index = spec
    assert [p.case_id for p in gen.generate(cases, "", keep={"r1", "r3"}).predictions] == ["r1", "r3"]


# ---------------------------------------------------------------- in a run


def test_a_recorded_index_is_an_input_error_naming_the_key(demo_files):
    with pytest.raises(InputError, match="retrieves from a built index") as e:
        prepare(make_config(demo_files, generator={"name": "extractive"}))
    assert e.value.field == "index"


def test_a_run_records_the_index_manifest(demo_files, spec):
    cfg = make_config(demo_files, generator={"name": "extractive"}, index=spec.config.model_dump())
    m = run(cfg).manifest
    assert (m.index_version, m.index) == (spec.version, spec.manifest)


def test_the_report_shows_the_index_chunks_chunker_and_embedder(demo_files, spec):
    cfg = make_config(demo_files, generator={"name": "extractive"}, index=spec.config.model_dump())
    row = (
        f"| index | {len(spec.chunks)} chunks of 4 files; chunker size 70, overlap 0, boundary paragraph; "
        "embedder `all-MiniLM-L6-v2`"
    )
    assert row in render_report(run(cfg))


def test_a_sweep_over_two_indexes_logs_two_runs_with_their_versions(demo_files):
    base = demo_files["questions"].parent
    write_corpus(
        base / "experiments" / "demo" / "corpus"
    )  # where conf/index/*_chunks.yaml look, relative to the working directory
    args = [
        "run",
        "-m",
        "index=small_chunks,large_chunks",
        "generator=extractive",
        f"eval_set.files=[{demo_files['questions']},{demo_files['qaset']}]",
        f"prompt.path={demo_files['prompt']}",
        f"tracking.uri=sqlite:///{base / 'mlflow.db'}",
        "tracking.experiment=indexes",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAGTRACK_PARENT_RUN_ID", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ragtrack.app.cli", *args],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    client = MlflowClient(f"sqlite:///{base / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("indexes").experiment_id])
    children = sorted(
        (r for r in runs if r.data.tags["ragtrack.stage"] == "full"), key=lambda r: r.data.params["index"]
    )
    assert [(r.info.run_name, r.info.status) for r in children] == [
        ("base-v1-large_chunks", "FINISHED"),
        ("base-v1-small_chunks", "FINISHED"),
    ]
    versions = {r.data.params["index_version"] for r in children}
    assert len(versions) == 2 and all(v.startswith("idx-") for v in versions)
    manifest = json.loads(
        Path(client.download_artifacts(children[0].info.run_id, "manifest.json", str(base))).read_text()
    )
    assert manifest["index"]["version"] == children[0].data.params["index_version"]
    archived = Path(
        client.download_artifacts(children[0].info.run_id, "predictions/predictions.jsonl", str(base))
    )
    first = json.loads(archived.read_text(encoding="utf-8").splitlines()[0])
    assert {"id", "source_path", "text"} <= set(first["contexts"][0])
