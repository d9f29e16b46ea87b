"""Shared fixtures: a tiny bilingual eval set (question_v2 + qaset), predictions and a prompt."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ragtrack.inputs.config import RunConfig

# Two workers share two cores, so torch (here and in every process a test starts, which inherits this) takes
# one intra-op thread: encoding the pair benchmark's texts with one core busy elsewhere took 41 s of CPU on
# one thread against 59 s on two (the second spins while it waits for the core). A value set outside wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ANSWER_EXAMPLES: dict[str, dict[str, Any]] = {
    "a1": {
        "question": "退款多久到账？",
        "answer_example": {
            "target_audience": "客户",
            "main_topic": "退款",
            "sub_topic": "到账时间",
            "detailed_description": ["退款在7个工作日内到账", "原路退回付款账户"],
            "original_evidence": "退款将在审核通过后7个工作日内原路退回至付款账户，节假日顺延；"
            "超过15个工作日未到账可联系客服查询处理进度。",
            "predicted_questions": ["退款会退到哪里？"],
        },
        "file": "policies/refund.md",
        "chunk": "退款将在审核通过后7个工作日内原路退回至付款账户，节假日顺延；"
        "超过15个工作日未到账可联系客服查询处理进度。",
    },
    "a2": {
        "question": "What uptime does the SLA guarantee?",
        "answer_example": {
            "target_audience": "customers",
            "main_topic": "SLA",
            "sub_topic": "uptime",
            "detailed_description": ["99.9% monthly uptime for paid plans"],
            "original_evidence": "Lumen Cloud guarantees 99.9% monthly uptime for all paid plans.",
            "predicted_questions": ["What credits apply when the SLA is missed?"],
        },
        "file": "policies/sla.md",
        "chunk": "Lumen Cloud guarantees 99.9% monthly uptime for all paid plans.",
    },
}


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every on-disk cache (embeddings, indexes, generations) of the suite, and of the processes it starts,
    lives under pytest's tmp dirs."""
    os.environ["RAGTRACK_CACHE_DIR"] = str(tmp_path_factory.mktemp("ragtrack-cache"))


def _perfect_answer(qid: str) -> str:
    ex = ANSWER_EXAMPLES[qid]
    ans = dict(
        ex["answer_example"], source_map=[{"refs": [{"file": ex["file"], "anchors": [ex["chunk"][:12]]}]}]
    )
    return json.dumps(ans, ensure_ascii=False)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def demo_files(tmp_path: Path) -> dict[str, Path]:
    """questions.json (question_v2), qaset.json, good/bad predictions, a prompt and an index file."""
    return write_demo_files(tmp_path)


def write_demo_files(tmp_path: Path) -> dict[str, Path]:
    """The files of `demo_files`, written into `tmp_path` (for fixtures of a wider scope)."""
    questions = [
        {
            "id": qid,
            "question": ex["question"],
            "expected": {"answer_example": ex["answer_example"], "source_map": []},
        }
        for qid, ex in ANSWER_EXAMPLES.items()
    ]
    qaset = [
        {"qid": "a1", "q": ANSWER_EXAMPLES["a1"]["question"], "answerable": True, "gold_ids": ["refund#1"]},
        {
            "qid": "a2",
            "q": ANSWER_EXAMPLES["a2"]["question"],
            "answerable": True,
            "gold_ids": ["sla#1"],
            "gold_claim": "99.9% monthly uptime",
        },
        {"qid": "u1", "q": "Who founded Lumen Cloud?", "answerable": False, "gold_ids": []},
    ]
    ctx = {
        qid: [{"id": f"{Path(ex['file']).stem}#1", "source_path": ex["file"], "text": ex["chunk"]}]
        for qid, ex in ANSWER_EXAMPLES.items()
    }
    good: list[dict[str, Any]] = [
        {"id": "a1", "answer": _perfect_answer("a1"), "contexts": ctx["a1"], "citations": ["refund#1"]},
        {
            "id": "a2",
            "answer": "```json\n" + _perfect_answer("a2") + "\n```",
            "contexts": ctx["a2"],
            "citations": ["sla#1"],
        },
        {"id": "u1", "answer": "not in context", "contexts": [], "citations": []},
    ]
    bad: list[dict[str, Any]] = [
        {
            "id": "a1",
            "answer": "Sure! " + _perfect_answer("a1"),
            "contexts": ctx["a1"],
            "citations": ["sla#1"],
        },
        {"id": "u1", "answer": "Lumen Cloud was founded by Ada.", "contexts": []},
        {"id": "zz", "answer": "orphan"},
    ]
    (tmp_path / "questions.json").write_text(
        json.dumps(questions, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    (tmp_path / "qaset.json").write_text(json.dumps(qaset, ensure_ascii=False, indent=1), encoding="utf-8")
    write_jsonl(tmp_path / "good.jsonl", good)
    write_jsonl(tmp_path / "bad.jsonl", bad)
    (tmp_path / "prompt.md").write_text("Answer in JSON.\nQ: {{question}}\n{{context}}\n", encoding="utf-8")
    write_jsonl(tmp_path / "chunks.jsonl", [c for cs in ctx.values() for c in cs])
    return {p.stem: p for p in tmp_path.iterdir()}


def make_config(files: dict[str, Path], *, predictions: str = "good", **sections: Any) -> RunConfig:
    """A RunConfig over `demo_files`, tracking into `<tmp>/mlflow.db`; sections override whole keys."""
    base = files["questions"].parent
    data: dict[str, Any] = {
        "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
        "adapter": {"name": "lora_a", "id": "lumen/lora-a@v1"},
        "index": {"name": "test", "path": str(files["chunks"])},
        "prompt": {"version": "v1", "path": str(files["prompt"])},
        "eval_set": {"name": "tiny", "files": [str(files["questions"]), str(files["qaset"])]},
        "generator": {"name": "replay", "params": {"path": str(files[predictions])}},
        "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
        "gates": {
            "dev100": ["eval_json_v2/eval_score_avg >= 95", "eval_json_v2/schema_pass_rate >= 0.98"],
            "G1_precision": ["refusal_citation/precision >= 0.80"],
        },
        "tracking": {"uri": f"sqlite:///{base / 'mlflow.db'}", "experiment": "tests"},
    }
    data.update(sections)
    return RunConfig.from_container(data)


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory):
    """One SQLite store for the whole session with runs of the demo's lora_b/v2 (see
    `tests.demo_runs.DemoStore`)."""
    from tests.demo_runs import DemoStore

    return DemoStore(tmp_path_factory.mktemp("demo_store"))


def sweep_overrides(files: dict[str, Path], adapters: tuple[str, ...] = ("base", "lora_a")) -> list[str]:
    """`ragtrack run` overrides over `demo_files`: each adapter's (good) predictions, tracking into
    `<tmp>/mlflow.db`."""
    base = files["questions"].parent
    for a in adapters:
        shutil.copyfile(files["good"], base / f"{a}__v1.jsonl")
    return [
        f"eval_set.files=[{files['questions']},{files['qaset']}]",
        f"prompt.path={files['prompt']}",
        f"index.path={files['chunks']}",
        "generator.params.path=" + str(base) + "/${adapter.name}__${prompt.version}.jsonl",
        f"tracking.uri=sqlite:///{base / 'mlflow.db'}",
        "tracking.experiment=sweep-test",
    ]


@pytest.fixture(scope="session")
def _migrated_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow SQLite store, created and migrated once per test session (2-5 s each time
    otherwise)."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").search_experiments()
    return db


def clone_store(template: Path, directory: Path) -> str:
    """Copy the store `template` to `<directory>/mlflow.db`; its URI."""
    db = directory / "mlflow.db"
    with sqlite3.connect(template) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    return f"sqlite:///{db}"


@pytest.fixture
def fresh_store(tmp_path: Path, _migrated_store: Path) -> str:
    """`sqlite:///<tmp>/mlflow.db` (where `make_config` tracks): a copy of the migrated empty store."""
    return clone_store(_migrated_store, tmp_path)


# The scopes that take longest (minutes each on one worker), longest first, so that neither worker is left
# with a long one at the end while the other idles: the server stack (about 5 minutes), the sweeps (4), the
# bench tests (3), the end-to-end runs (3)
LONGEST_FIRST = ("tests/server/", "tests/app/test_sweep.py", "tests/bench/", "tests/test_end_to_end.py")
# Directories whose tests run on one worker: the server tests share one session stack (PostgreSQL, the S3
# stand-in, two `mlflow server`s), the bench tests one embedding cache (the reliability files' witness pairs
# are tuning pairs, whose texts re-fitting the support model has embedded)
SHARED_SCOPES = ("tests/server/", "tests/bench/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests of `LONGEST_FIRST` to the front in its order, the rest in their collected order."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, p in enumerate(LONGEST_FIRST) if item.nodeid.startswith(p)), len(LONGEST_FIRST))

    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (`-n 2`, pyproject's addopts) a test file runs on one worker, so its module
    fixtures are built once, and the tests of each of `SHARED_SCOPES` on one worker. The scopes start in
    collected order (`LONGEST_FIRST` first): xdist would otherwise start those with the most tests first,
    and a long one with few tests late, to run alone at the end on one core."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((d for d in SHARED_SCOPES if path.startswith(d)), path)

    return FileScheduling(config, log)
