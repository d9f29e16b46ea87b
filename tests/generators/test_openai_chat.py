"""Generator `openai` against a scripted server on 127.0.0.1: prompts, predictions, cache, run metrics,
failures."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import execute
from ragtrack.clients.llm import LLMAuthError, LLMError
from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase
from ragtrack.generators import build_generator
from ragtrack.index.build import index_spec, open_index
from ragtrack.index.retriever import Retriever
from ragtrack.run.runner import run
from tests.conftest import make_config
from tests.index.corpus import index_config, write_corpus
from tests.llm_server import LLMServer, raw, reply, status
from tests.processes import runs

CASES = [EvalCase(id="a", question="Q-a?"), EvalCase(id="b", question="Q-b?")]


def _params(url: str, tmp_path, **extra) -> dict:
    return {
        "base_url": url,
        "model": "served-a",
        "cache_dir": str(tmp_path / "cache"),
        "backoff_s": 0.01,
        "max_retries": 1,
        **extra,
    }


def _config(demo_files, url: str, **extra):
    params = _params(url, demo_files["questions"].parent, **extra)
    return make_config(demo_files, generator={"name": "openai", "params": params})


def test_each_case_is_asked_with_its_rendered_prompt(tmp_path):
    with LLMServer() as srv:
        build_generator("openai", _params(srv.url, tmp_path)).generate(CASES, "Q: {{question}}")
    asked = sorted(b["messages"][0]["content"] for b in srv.bodies())  # requests run concurrently: any order
    assert [b["messages"][1:] for b in srv.bodies()] == [[], []] and asked == ["Q: Q-a?", "Q: Q-b?"]


def test_predictions_carry_answer_latency_and_usage(tmp_path):
    with LLMServer() as srv:
        p = (
            build_generator("openai", _params(srv.url, tmp_path))
            .generate(CASES, "{{question}}")
            .predictions[0]
        )
    assert (p.case_id, p.answer, p.usage["total_tokens"], p.latency_ms > 0) == ("a", "ECHO Q-a?", 15, True)


def test_only_the_kept_cases_are_asked(tmp_path):
    with LLMServer() as srv:
        gen = build_generator("openai", _params(srv.url, tmp_path)).generate(
            CASES, "{{question}}", keep={"b"}
        )
    assert ([p.case_id for p in gen.predictions], srv.count) == (["b"], 1)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return index_spec(index_config(write_corpus(tmp_path_factory.mktemp("corpus")), size=70))


def _over_index(spec, url: str, tmp_path, cases: list[EvalCase], **extra):
    gen = build_generator("openai", _params(url, tmp_path, **extra))
    gen.index = spec
    return gen.generate(cases, "{{context}}\n---\n{{question}}").predictions


def test_over_an_index_the_retrieved_chunks_are_in_the_prompt(spec, tmp_path):
    question = "账户被锁定多久？"
    with LLMServer() as srv:
        _over_index(
            spec, srv.url, tmp_path, [EvalCase(id="z", question=question)], top_k=2, retrieval="hybrid"
        )
    hits = Retriever(open_index(spec)).search([question], 2, "hybrid")[0]
    shown = "\n\n".join(f"[{h.chunk.source_path}]\n{h.chunk.text}" for h in hits)
    assert srv.bodies()[0]["messages"][0]["content"] == f"{shown}\n---\n{question}"


def test_over_an_index_the_predictions_carry_the_chunks_with_their_scores(spec, tmp_path):
    question = "How much can I spend on a hotel per night?"
    with LLMServer() as srv:
        (p,) = _over_index(spec, srv.url, tmp_path, [EvalCase(id="h", question=question)])
    hits = Retriever(open_index(spec)).search([question], 3, "bm25")[0]
    assert [c.model_dump() for c in p.contexts] == [
        {"text": h.chunk.text, "source_path": h.chunk.source_path, "id": h.chunk.id, "score": h.score}
        for h in hits
    ]


def test_without_an_index_nothing_is_retrieved(tmp_path):
    with LLMServer() as srv:
        p = (
            build_generator("openai", _params(srv.url, tmp_path))
            .generate(CASES[:1], "{{context}}|{{question}}")
            .predictions[0]
        )
    assert (p.contexts, srv.bodies()[0]["messages"][0]["content"]) == ([], "|Q-a?")


def test_over_an_index_a_template_without_context_is_an_input_error(spec, tmp_path):
    gen = build_generator("openai", _params("http://127.0.0.1:1/v1", tmp_path))
    gen.index = spec
    with pytest.raises(
        InputError, match=r"config: prompt\.path: the prompt template has no \{\{context\}\} placeholder"
    ):
        gen.prepare(CASES, "Q: {{question}}")


def test_run_metrics_count_cache_hits_and_misses(demo_files):
    with LLMServer() as srv:
        first = run(_config(demo_files, srv.url))
        second = run(_config(demo_files, srv.url))
    hits_misses = [
        (r.metrics["generator/cache_hits"], r.metrics["generator/cache_misses"]) for r in (first, second)
    ]
    assert (hits_misses, srv.count) == ([(0.0, 3.0), (3.0, 0.0)], 3)


def test_run_metrics_sum_tokens_of_the_calls_made(demo_files):
    with LLMServer() as srv:
        m = run(_config(demo_files, srv.url)).metrics
    assert (m["generator/total_tokens"], m["generator/requests"], m["generator/latency_ms_mean"] > 0) == (
        45.0,
        3.0,
        True,
    )


def test_changing_the_model_misses_every_answer(demo_files):
    with LLMServer() as srv:
        run(_config(demo_files, srv.url))
        m = run(_config(demo_files, srv.url, model="served-b")).metrics
    assert (m["generator/cache_misses"], srv.count) == (3.0, 6)


def test_unknown_parameter_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"generator\.openai: api_key: Extra inputs are not permitted"):
        build_generator("openai", _params("http://127.0.0.1:1/v1", tmp_path, api_key="x"))


def test_base_url_without_scheme_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"base_url: String should match pattern"):
        build_generator("openai", _params("127.0.0.1:8000/v1", tmp_path))


# ------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    "script, error, problem",
    [
        ([status(401)], LLMAuthError, "HTTP 401: authentication failed"),
        ([status(404, {"error": "no such model"})], LLMError, "HTTP 404 (unknown model or wrong base_url?)"),
        ([raw("<html>hello</html>")], LLMError, "the reply is not JSON"),
        ([raw('{"choices": []}')], LLMError, "the reply has no choices"),
    ],
)
def test_a_failing_server_is_one_error_naming_endpoint_and_model(tmp_path, script, error, problem):
    with LLMServer(script=script) as srv:
        with pytest.raises(error) as info:
            build_generator("openai", _params(srv.url, tmp_path)).generate(CASES, "{{question}}")
    assert str(info.value).startswith(f"{srv.url}/chat/completions (model 'served-a'): {problem}")


def test_a_failing_server_ends_the_run_failed(demo_files):
    with LLMServer(script=[status(500)]) as srv:
        cfg = _config(demo_files, srv.url)
        with pytest.raises(LLMError):
            execute(cfg, base_dir=demo_files["questions"].parent)
    (r,) = runs(cfg.tracking.uri)
    assert (r.info.status, "HTTP 500" in r.data.tags["ragtrack.error"]) == ("FAILED", True)


def test_answers_before_the_failure_stay_cached(tmp_path):
    cases = [*CASES, EvalCase(id="c", question="Q-c?")]
    with LLMServer(script=[reply("one"), reply("two"), status(500)]) as srv:
        with pytest.raises(LLMError):
            build_generator("openai", _params(srv.url, tmp_path, concurrency=1, max_retries=0)).generate(
                cases, "{{question}}"
            )
    lines = (tmp_path / "cache" / "generations.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["text"] for line in lines) == ["one", "two"]


def test_archived_answers_replay_as_a_predictions_file(demo_files, tmp_path):
    from ragtrack.inputs.predictions import match_prediction_file

    with LLMServer() as srv:
        (result,) = execute(_config(demo_files, srv.url), base_dir=demo_files["questions"].parent)
    uri = _config(demo_files, srv.url).tracking.uri
    (run,) = runs(uri)
    path = MlflowClient(uri).download_artifacts(
        run.info.run_id, "predictions/predictions.jsonl", str(tmp_path)
    )
    replayed = match_prediction_file(path, result.all_cases).predictions
    assert [p.model_dump() for p in replayed] == [p.model_dump() for p in result.generation.predictions]
