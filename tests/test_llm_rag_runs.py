"""Runs with the openai generator over a built index and `rag`/`earag` judged by the llm backend, in a real
SQLite store.

One scripted server on 127.0.0.1 answers the generator (echo) and the judge (well-formed
verdicts); the API key is a canary from the environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import execute
from ragtrack.inputs.config import RunConfig
from ragtrack.scorers.llm_batch import LlmFailureRateError
from tests.conftest import make_config, write_demo_files, write_jsonl
from tests.index.corpus import index_config, write_corpus
from tests.llm_judges import STATEMENTS, lenient_judge
from tests.llm_server import LLMServer, reply, route
from tests.processes import runs

CANARY = "sk-canary-Vt83Lp2Qz9Hd"
RAG_CASES = [
    {"id": "lock", "question": "账户被锁定多久？", "ground_truth_answer": "账户将被锁定 30 分钟。"},
    {
        "id": "hotel",
        "question": "How much can I spend on a hotel per night?",
        "ground_truth_answer": "Hotel costs are capped at 650 yuan per night.",
    },
]


def _llm(url: str, work: Path) -> dict:
    return {"base_url": url, "model": "judge-1", "cache_dir": str(work / "cache"), "backoff_s": 0.01}


def _config(work: Path, files: dict[str, Path], url: str, **sections) -> RunConfig:
    eval_set = write_jsonl(work / "rag.jsonl", RAG_CASES)
    defaults = {
        "eval_set": {"name": "rag", "files": [str(eval_set)]},
        "index": index_config(write_corpus(work / "corpus"), size=70).model_dump(),
        "generator": {
            "name": "openai",
            "params": {**_llm(url, work), "model": "served-a", "top_k": 2, "retrieval": "hybrid"},
        },
        "scorers": {
            "rag": {"backend": "llm", "llm": _llm(url, work)},
            "earag": {"backend": "llm", "llm": _llm(url, work)},
        },
        "gates": {},
    }
    return make_config(files, **{**defaults, **sections})


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Two identical runs (the key in the environment), the server's request count after each, and the
    store."""
    work = tmp_path_factory.mktemp("llm-rag-runs")
    files = write_demo_files(work)
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = CANARY
    try:
        with LLMServer(script=lenient_judge()) as srv:
            cfg = _config(work, files, srv.url)
            counts = []
            for _ in range(2):
                execute(cfg, base_dir=work)
                counts.append(srv.count)
            requests = list(srv.requests)
    finally:
        if saved is None:
            os.environ.pop("OPENAI_API_KEY")
        else:
            os.environ["OPENAI_API_KEY"] = saved
    first, second = sorted(runs(cfg.tracking.uri), key=lambda r: r.info.start_time)
    return work, cfg, counts, requests, first, second


def test_the_run_finishes_with_the_judges_rag_and_earag_metrics(judged):
    _, _, _, _, first, _ = judged
    m = first.data.metrics
    assert (
        first.info.status,
        m["rag/faithfulness"],
        m["rag/context_relevance_n"],
        m["earag/faithfulness"],
        m["earag/llm/fallbacks"],
    ) == ("FINISHED", 1.0, 2.0, 1.0, 0.0)


def test_the_generator_shows_and_logs_the_retrieved_chunks(judged, tmp_path):
    _, cfg, _, requests, first, _ = judged
    path = MlflowClient(cfg.tracking.uri).download_artifacts(
        first.info.run_id, "predictions/predictions.jsonl", str(tmp_path)
    )
    preds = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    prompts = [r["body"]["messages"][0]["content"] for r in requests if r["body"]["model"] == "served-a"]
    shown = all(
        any(c["text"] in p and f"[{c['source_path']}]" in p for p in prompts)
        for pred in preds
        for c in pred["contexts"]
    )
    assert (
        [len(p["contexts"]) for p in preds],
        {tuple(sorted(c)) for p in preds for c in p["contexts"]},
        shown,
    ) == ([2, 2], {("id", "score", "source_path", "text")}, True)


def test_a_second_identical_run_makes_no_request(judged):
    _, _, counts, _, _, second = judged
    m = second.data.metrics
    assert (
        counts[1] - counts[0],
        m["generator/cache_misses"],
        m["rag/llm/cache_misses"],
        m["earag/llm/cache_misses"],
    ) == (0, 0.0, 0.0, 0.0)


def test_the_canary_key_is_sent_and_reaches_no_file(judged):
    work, _, _, requests, _, _ = judged
    files = [p for p in work.rglob("*") if p.is_file()]
    leaks = [str(p.relative_to(work)) for p in files if CANARY.encode() in p.read_bytes()]
    kinds = {p.suffix for p in files} | {p.name for p in files}
    assert (
        {r["headers"].get("Authorization") for r in requests},
        leaks,
        {"mlflow.db", "generations.jsonl", ".parquet"} <= kinds,
    ) == ({f"Bearer {CANARY}"}, [], True)


def test_unreadable_judge_replies_above_the_limit_end_the_run_failed(tmp_path):
    files = write_demo_files(tmp_path)
    with LLMServer(
        script=route((STATEMENTS, reply("Sure, here they are: one, two.")), default=lenient_judge())
    ) as srv:
        cfg = _config(
            tmp_path, files, srv.url, scorers={"rag": {"backend": "llm", "llm": _llm(srv.url, tmp_path)}}
        )
        with pytest.raises(LlmFailureRateError):
            execute(cfg, base_dir=tmp_path)
    (run,) = runs(cfg.tracking.uri)
    assert (
        run.info.status,
        "got no usable answer, above max_failure_rate 0.1" in run.data.tags["ragtrack.error"],
    ) == ("FAILED", True)
