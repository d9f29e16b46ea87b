"""`ragtrack index build` as real processes: concurrent builds, and bad input as one line with exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.index.corpus import write_corpus

ROOT = Path(__file__).resolve().parents[2]
CORPUS = (
    Path("experiments") / "demo" / "corpus"
)  # where conf/index/small_chunks.yaml looks, relative to the working directory


def _ragtrack(cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTRACK_CACHE_DIR": str(cwd / "cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "ragtrack.app.cli", *args],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _run(cwd: Path, *args: str) -> tuple[int, str, str]:
    proc = _ragtrack(cwd, *args)
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def test_two_concurrent_builds_of_one_index_build_it_once(tmp_path):
    write_corpus(tmp_path / CORPUS)
    procs = [_ragtrack(tmp_path, "index", "build", "index=small_chunks") for _ in range(2)]
    results = [(p.communicate(timeout=600), p.returncode) for p in procs]
    assert [rc for _, rc in results] == [0, 0], [err for (_, err), _ in results]
    verbs = sorted("already built" in out for (out, _), _ in results)
    stored = [p.name for p in (tmp_path / "cache" / "indexes").iterdir() if p.is_dir()]
    assert (verbs, len(stored), stored[0].startswith("idx-")) == ([False, True], 1, True)


def test_a_bad_chunker_value_is_one_line_naming_the_key(tmp_path):
    rc, _, err = _run(tmp_path, "index", "build", "index=small_chunks", "index.chunker.overlap=500")
    assert (
        rc == 2
        and "config: index.chunker: overlap (500) must be smaller than size (160)" in err
        and "Traceback" not in err
    )


def test_an_empty_corpus_folder_is_one_line_naming_the_folder(tmp_path):
    (tmp_path / CORPUS).mkdir(parents=True)
    rc, _, err = _run(tmp_path, "index", "build", "index=small_chunks")
    assert rc == 2 and f"{CORPUS}: index.corpus.glob: no file matches '**/*.md': the corpus is empty" in err


def test_a_missing_model_path_in_a_run_exits_2_before_any_store_exists(demo_files):
    base = demo_files["questions"].parent
    write_corpus(base / CORPUS)
    rc, _, err = _run(
        base,
        "run",
        "index=small_chunks",
        "generator=extractive",
        f"index.embedder.model={base / 'nope'}",
        f"eval_set.files=[{demo_files['questions']},{demo_files['qaset']}]",
        f"prompt.path={demo_files['prompt']}",
    )
    assert (
        rc == 2
        and "index.embedder.model: model path does not exist" in err
        and not (base / "mlflow.db").exists()
    )
