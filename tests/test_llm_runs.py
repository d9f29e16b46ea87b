"""`ragtrack run generator=openai` as real processes against a scripted server: resume after kill -9, the
canary key, the error line."""

from __future__ import annotations

import os
import signal

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import write_demo_files
from tests.llm_server import LLMServer, echo, hang, reply, status
from tests.processes import run, runs, start, wait_for

CANARY = "sk-canary-Rk29Fq7Lm3Xw"


def _args(demo_files, url: str, *extra: str) -> list[str]:
    work = demo_files["questions"].parent
    return [
        "run",
        "generator=openai",
        f"generator.params.base_url={url}",
        "generator.params.backoff_s=0.01",
        f"eval_set.files=[{demo_files['questions']},{demo_files['qaset']}]",
        f"prompt.path={demo_files['prompt']}",
        f"index.path={demo_files['chunks']}",
        f"tracking.uri=sqlite:///{work / 'mlflow.db'}",
        *extra,
    ]


def _answer_then_hang_once(n: int, body: dict):
    return reply("first") if n == 0 else hang() if n == 1 else echo(n, body)


def test_kill_9_mid_run_then_rerun_asks_only_the_missing_cases(demo_files):
    work = demo_files["questions"].parent
    env = {"RAGTRACK_CACHE_DIR": str(work / "cache")}
    cache = work / "cache" / "generations" / "generations.jsonl"
    with LLMServer(script=_answer_then_hang_once) as srv:  # one server: the endpoint is part of the cache key
        proc = start(_args(demo_files, srv.url, "generator.params.concurrency=1"), cwd=work, **env)
        wait_for(
            lambda: srv.count == 2 and cache.read_text().count("\n") == 1,
            timeout=120,
            what="one cached answer",
        )
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        done = run(_args(demo_files, srv.url), cwd=work, **env)
    assert done.returncode == 0, done.stderr
    statuses = sorted(
        (r.info.status, r.data.metrics.get("generator/cache_hits"))
        for r in runs(f"sqlite:///{work / 'mlflow.db'}")
    )
    assert (srv.count - 2, statuses) == (2, [("FINISHED", 1.0), ("KILLED", None)])  # the killed run is reaped


# ------------------------------------------------------------------ the canary key


@pytest.fixture(scope="module")
def canary_work(tmp_path_factory):
    """A working directory after a generating run and a run whose server rejects (and echoes) the key."""
    work = tmp_path_factory.mktemp("llm-canary")
    files = write_demo_files(work)
    (work / "tmp").mkdir()
    env = {"OPENAI_API_KEY": CANARY, "TMPDIR": str(work / "tmp"), "RAGTRACK_CACHE_DIR": str(work / "cache")}
    outputs = []
    with LLMServer() as ok, LLMServer(script=[status(401, {"error": f"invalid api key {CANARY}"})]) as denied:
        for url in (ok.url, denied.url):
            proc = run(_args(files, url), cwd=work, **env)
            outputs.append(proc)
        sent = {r["headers"].get("Authorization") for r in ok.requests + denied.requests}
    return work, outputs, sent


def test_canary_key_was_sent_to_the_server(canary_work):
    _, outputs, sent = canary_work
    assert ([p.returncode for p in outputs], sent) == ([0, 1], {f"Bearer {CANARY}"})


def test_canary_key_reaches_no_file(canary_work):
    work, _, _ = canary_work
    files = [p for p in work.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in files} | {p.name for p in files}
    leaks = [str(p.relative_to(work)) for p in files if CANARY.encode() in p.read_bytes()]
    assert (leaks, {"mlflow.db", "generations.jsonl", ".parquet", ".md", ".jsonl"} <= kinds) == ([], True)


def test_canary_key_reaches_no_console_line_and_no_tag(canary_work):
    work, outputs, _ = canary_work
    client = MlflowClient(f"sqlite:///{work / 'mlflow.db'}")
    failed = [r for r in runs(f"sqlite:///{work / 'mlflow.db'}") if r.info.status == "FAILED"]
    error = client.get_run(failed[0].info.run_id).data.tags["ragtrack.error"]
    console = "".join(p.stdout + p.stderr for p in outputs)
    assert (
        CANARY in console,
        CANARY in error,
        "HTTP 401: authentication failed ($OPENAI_API_KEY is set but rejected)" in error,
    ) == (False, False, True)


def test_rejected_key_is_one_console_line_naming_endpoint_and_model(canary_work):
    _, outputs, _ = canary_work
    errors = [line for line in outputs[1].stderr.splitlines() if "error:" in line]
    assert (
        len(errors),
        "Traceback" in outputs[1].stderr,
        "/chat/completions (model 'Qwen/Qwen2.5-7B-Instruct'): HTTP 401" in errors[0],
    ) == (1, False, True)
