"""`ragtrack audit` on real runs: an untouched run passes every check; each kind of tampering fails its
check."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragtrack.app import audit
from ragtrack.app.audit import index_check, vectors_check
from ragtrack.app.cli import main
from ragtrack.core.hashing import sha256_file
from ragtrack.index.build import CHECKSUMS, index_spec, open_index
from tests.conftest import make_config
from tests.demo_runs import DEMO, artifact_dir
from tests.index.corpus import index_config, write_corpus


def _audit(capsys, uri, *args):
    capsys.readouterr()
    code = main(["audit", *args, "--tracking-uri", uri])
    out = capsys.readouterr()
    return code, out.out, out.err


def _failed(out: str) -> list[str]:
    return [line.split(":")[0][2:] for line in out.splitlines() if line.startswith("✗ ")]


def test_untouched_run_passes_every_check(demo_store, capsys):
    index = DEMO / "corpus" / "chunks.jsonl"
    code, out, _ = _audit(capsys, demo_store.uri, demo_store.ids["a"], "--set", f"index.path={index}")
    marks = [line[0] for line in out.splitlines()[1:-1]]
    assert (code, set(marks)) == (0, {"✓"})
    assert (
        "✓ index: " in out and "✓ re-score: metrics: all 28 logged metrics re-derived bit for bit" in out
    ), out
    assert "✓ archive: 4 archived inputs at their places" in out


def test_the_index_file_the_run_names_is_not_read_unless_the_auditor_names_it(demo_store, capsys):
    code, out, _ = _audit(capsys, demo_store.uri, demo_store.ids["a"])
    (line,) = [x for x in out.splitlines() if x.startswith("– index: ")]
    assert code == 0 and "not re-derived" in line and "give --set index.path=…" in line, line


def test_an_auditor_may_set_only_where_to_reach_not_the_scoring(demo_store, capsys):
    code, out, err = _audit(
        capsys, demo_store.uri, demo_store.ids["a"], "--set", "scorers.eval_json_v2.min_evidence_chars=400"
    )
    assert (code, out) == (2, "")
    assert (
        "`scorers.eval_json_v2.min_evidence_chars` cannot be changed here (allowed: index.corpus.dir" in err
    ), err
    assert err.rstrip().endswith("(a scoring change is `ragtrack rescore`)")


def _tamper_file(rel: str, old: str, new: str):
    def tamper(store, run_id):
        path = artifact_dir(store.uri, run_id) / rel
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return tamper


def _tamper_db(table: str, key: str, column: str, value: str):
    def tamper(store, run_id):
        con = sqlite3.connect(store.tmp / "mlflow.db")
        with con:
            tables = [table, "latest_metrics"] if table == "metrics" else [table]
            for t in tables:
                n = con.execute(
                    f"UPDATE {t} SET {column} = ? WHERE run_uuid = ? AND key = ?", (value, run_id, key)
                ).rowcount
                assert n == 1
        con.close()

    return tamper


TAMPERING = {
    "eval file": (
        _tamper_file("inputs/0/questions.json", "退款", "退货"),
        ["eval file inputs/0/questions.json", "re-score"],
    ),
    "prompt": (_tamper_file("prompt/v2.md", "JSON", "YAML"), ["prompt prompt/v2.md"]),
    "config": (
        _tamper_file("config.yaml", "eval_json_v2: {}", "eval_json_v2: {min_evidence_chars: 400}"),
        ["config.yaml", "re-score"],
    ),
    "predictions": (
        _tamper_file("predictions/lora_b__v2.jsonl", '"answer": "{', '"answer": "Sure: {'),
        ["predictions predictions/lora_b__v2.jsonl", "re-score"],
    ),
    "metric value": (_tamper_db("metrics", "eval_json_v2/eval_score_avg", "value", "99.5"), ["re-score"]),
    "scorer code hash": (
        _tamper_db("params", "scorer/eval_json_v2/code_sha256", "value", "0" * 64),
        ["scorer eval_json_v2"],
    ),
}


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_tampering_fails_its_check_and_the_audit(demo_store, capsys, kind):
    tamper, failing = TAMPERING[kind]
    run_id = demo_store.new_run()
    tamper(demo_store, run_id)
    code, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert code == 1
    assert set(failing) <= set(_failed(out)), out


def test_a_changed_metric_is_named_with_both_values(demo_store, capsys):
    run_id = demo_store.new_run()
    _tamper_db("metrics", "refusal_citation/precision", "value", "0.5")(demo_store, run_id)
    _, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert (
        "✗ re-score: metrics: 1 metric(s) differ: refusal_citation/precision: logged 0.5, re-scored 1.0"
        in out
    )


def test_case_shows_question_contexts_answer_subscores_and_versions(demo_store, capsys):
    code, out, _ = _audit(capsys, demo_store.uri, demo_store.ids["planted"], "--case", "q03")
    assert code == 0
    assert "question:\n  流明云哪些费用是不能退款的？" in out
    assert "contexts (" in out and "policies/refund_policy.md" in out
    assert "raw answer:\n  Sure! Here is the answer: {" in out
    assert "✓ eval_json_v2/schema_ok                False | False" in out
    assert "scorer eval_json_v2: v1, code sha256 " in out and "prompt: v2 (sha256 " in out


def test_unknown_case_is_one_line(demo_store, capsys):
    code, out, err = _audit(capsys, demo_store.uri, demo_store.ids["a"], "--case", "nope")
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "no case 'nope' (52 cases, e.g. q01, q02" in err


def test_a_run_logged_before_code_hashes_still_passes_and_says_so(demo_store, capsys):
    import json

    run_id = demo_store.new_run()
    con = sqlite3.connect(demo_store.tmp / "mlflow.db")
    with con:
        con.execute("DELETE FROM params WHERE run_uuid = ? AND key LIKE 'scorer/%/code_sha256'", (run_id,))
    con.close()
    path = artifact_dir(demo_store.uri, run_id) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for s in manifest["scorers"]:
        del s["code_sha256"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    code, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert code == 0
    assert "✓ scorer eval_json_v2: v1 installed, code hash not logged by this run" in out


def test_a_run_logged_with_a_module_only_code_hash_passes_and_says_so(demo_store, capsys):
    from ragtrack.core.registry import module_sha256
    from ragtrack.scorers.eval_json_v2 import EvalJsonV2Scorer

    run_id = demo_store.new_run()
    _tamper_db("params", "scorer/eval_json_v2/code_sha256", "value", module_sha256(EvalJsonV2Scorer))(
        demo_store, run_id
    )
    code, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert code == 0
    assert "✓ scorer eval_json_v2: v1 installed, code sha256 " in out and "of its module alone" in out


def test_a_run_logged_with_a_byte_code_hash_passes_and_says_so(demo_store, capsys):
    from ragtrack.core.registry import bytes_code_sha256
    from ragtrack.scorers.eval_json_v2 import EvalJsonV2Scorer

    run_id = demo_store.new_run()
    _tamper_db("params", "scorer/eval_json_v2/code_sha256", "value", bytes_code_sha256(EvalJsonV2Scorer))(
        demo_store, run_id
    )
    code, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert code == 0
    assert "of its files' bytes (this run predates hashes of syntax trees)" in out


def test_an_audit_re_derives_a_built_index_version(tmp_path, demo_files):
    corpus = write_corpus(tmp_path / "corpus")
    cfg = make_config(demo_files, index=index_config(corpus).model_dump())
    check = index_check(cfg, index_spec(cfg.index).version)
    assert (check.status, check.detail.startswith(f"corpus {corpus} re-derives idx-")) == ("pass", True)


def test_an_audit_skips_a_built_index_whose_corpus_is_not_here(tmp_path, demo_files):
    cfg = make_config(demo_files, index=index_config(tmp_path / "gone").model_dump())
    assert index_check(cfg, "idx-0").status == "skip"


def _poison(index_path: str) -> None:
    """Random vectors of the right shape, with checksums rewritten to match: what only a fresh embedding
    catches."""
    folder = Path(index_path)
    shape = np.load(folder / "vectors.npy").shape
    np.save(folder / "vectors.npy", np.random.default_rng(1).standard_normal(shape).astype(np.float32))
    sums = json.loads((folder / CHECKSUMS).read_text())
    (folder / CHECKSUMS).write_text(json.dumps({**sums, "vectors.npy": sha256_file(folder / "vectors.npy")}))


def test_a_deep_audit_passes_an_honest_index_cache(tmp_path, demo_files):
    cfg = make_config(demo_files, index=index_config(write_corpus(tmp_path / "corpus")).model_dump())
    open_index(index_spec(cfg.index))
    assert vectors_check(cfg, "idx").status == "pass"


def test_a_deep_audit_fails_a_poisoned_index_cache_naming_its_folder(tmp_path, demo_files):
    cfg = make_config(demo_files, index=index_config(write_corpus(tmp_path / "corpus")).model_dump())
    index = open_index(index_spec(cfg.index))
    _poison(index.path)
    try:
        check = vectors_check(cfg, "idx")
    finally:
        shutil.rmtree(
            index.path
        )  # the session shares one cache: later tests must not find the poisoned index
    assert (check.status, index.path in check.detail) == ("fail", True)


def test_a_deep_audit_has_no_vectors_to_compare_for_an_index_file(demo_files):
    assert vectors_check(make_config(demo_files), "chunks@1").status == "skip"


def test_a_deep_audit_of_a_run_with_an_index_file_says_there_are_no_vectors(demo_store, capsys):
    index = DEMO / "corpus" / "chunks.jsonl"
    code, out, _ = _audit(
        capsys, demo_store.uri, demo_store.ids["a"], "--deep", "--set", f"index.path={index}"
    )
    assert code == 0 and "– index vectors: the run's index is a file or a label" in out, out


def test_an_index_given_as_a_label_is_not_applicable_not_proved(demo_files):
    cfg = make_config(demo_files, index={"name": "prod", "version": "prod-2024-06"})
    assert index_check(cfg, "prod-2024-06").status == "skip"


def test_an_index_label_other_than_the_logged_one_fails(demo_files):
    cfg = make_config(demo_files, index={"name": "prod", "version": "prod-2024-06"})
    assert index_check(cfg, "prod-2024-07").status == "fail"


def _tamper_cases(row: int, column: str):
    def tamper(store, run_id):
        path = artifact_dir(store.uri, run_id) / "cases.parquet"
        frame = pd.read_parquet(path)
        frame.loc[row, column] = frame.loc[row, column] / 2 + 1
        frame.to_parquet(path, index=False)

    return tamper


def test_cases_are_compared_a_few_rows_at_a_time(demo_store, capsys, monkeypatch):
    monkeypatch.setattr(audit, "CASES_COMPARED", 5)
    _, out, _ = _audit(capsys, demo_store.uri, demo_store.ids["a"])
    assert "✓ re-score: cases.parquet: all 52 rows × 25 columns equal" in out, out


def test_a_changed_case_score_in_a_later_batch_fails_naming_its_column(demo_store, capsys, monkeypatch):
    monkeypatch.setattr(audit, "CASES_COMPARED", 5)
    run_id = demo_store.new_run()
    _tamper_cases(37, "eval_json_v2/score")(demo_store, run_id)
    code, out, _ = _audit(capsys, demo_store.uri, run_id)
    assert code == 1 and "✗ re-score: cases.parquet: column(s) differ: eval_json_v2/score" in out, out
