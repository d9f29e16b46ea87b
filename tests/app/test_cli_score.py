"""`ragtrack score --json` and `ragtrack --help` as subprocesses (SPEC §6 "Scoring without MLflow")."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

RAGTRACK = str(Path(sys.executable).with_name("ragtrack"))

EVIDENCE = "Lumen Cloud guarantees 99.9% monthly uptime for all paid plans, measured per calendar month."
ANSWER_EXAMPLE = {
    "target_audience": "customers",
    "main_topic": "SLA",
    "sub_topic": "uptime",
    "detailed_description": ["99.9% monthly uptime for paid plans"],
    "original_evidence": EVIDENCE,
    "predicted_questions": ["What credits apply when the SLA is missed?"],
}
CONTEXTS = [{"source_path": "policies/sla.md", "text": EVIDENCE}]
PERFECT = json.dumps(
    {
        **ANSWER_EXAMPLE,
        "source_map": [{"refs": [{"file": "policies/sla.md", "anchors": ["99.9% monthly uptime"]}]}],
    }
)


def _raise_on_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_raise_on_constant)


def write_json(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def ragtrack(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAGTRACK, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("score_cli")
    items = [
        {
            "id": "a1",
            "question": "What uptime does the SLA guarantee?",
            "expected": {"answer_example": ANSWER_EXAMPLE, "source_map": []},
        },
        {
            "id": "a2",
            "question": "Is the uptime measured monthly?",
            "expected": {"answer_example": ANSWER_EXAMPLE, "source_map": []},
        },
    ]
    return {
        "eval": write_json(d / "questions.json", items),
        # a1 answered with prose (schema failure), a2 has no prediction: the dev100 gate fails.
        "failing": write_jsonl(
            d / "failing.jsonl", [{"id": "a1", "answer": "The SLA is 99.9%.", "contexts": CONTEXTS}]
        ),
        "perfect": write_jsonl(
            d / "perfect.jsonl",
            [
                {"id": "a1", "answer": PERFECT, "contexts": CONTEXTS},
                {"id": "a2", "answer": "```json\n" + PERFECT + "\n```", "contexts": CONTEXTS},
            ],
        ),
        "qaset": write_json(
            d / "qaset.json",
            [
                {
                    "qid": "a1",
                    "q": "What uptime does the SLA guarantee?",
                    "answerable": True,
                    "gold_ids": ["sla#1"],
                }
            ],
        ),
        "qaset_preds": write_jsonl(
            d / "qaset_preds.jsonl", [{"qid": "a1", "answer": "99.9% citations: [sla#1]"}]
        ),
        "broken": (d / "broken.json").resolve(),
        "dir": d,
    }


@pytest.fixture(scope="module")
def failing_run(files: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    return ragtrack(
        "score",
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["failing"]),
        "--scorer",
        "eval_json_v2",
        "--json",
    )


@pytest.fixture(scope="module")
def failing_doc(failing_run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return strict_loads(failing_run.stdout)


def test_json_output_has_metrics_and_cases(failing_doc: dict[str, Any]) -> None:
    assert set(failing_doc) == {"metrics", "cases"}


def test_metric_names_are_scorer_slash_metric(failing_doc: dict[str, Any]) -> None:
    names = set(failing_doc["metrics"])
    assert all("/" in k for k in names)
    required = {
        f"eval_json_v2/{m}"
        for m in (
            "eval_score_avg",
            "schema_pass_rate",
            "target_audience",
            "main_topic",
            "sub_topic",
            "detailed_description_f1",
            "original_evidence",
            "predicted_questions_f1",
            "grounding",
        )
    }
    assert required <= names
    assert "gate/dev100" in names


def test_one_case_row_per_case_with_id_and_score(failing_doc: dict[str, Any]) -> None:
    rows = failing_doc["cases"]
    assert [r["id"] for r in rows] == ["a1", "a2"]
    assert all("eval_json_v2/score" in r and "eval_json_v2/schema_ok" in r for r in rows)
    assert [r["eval_json_v2/score"] for r in rows] == [0.0, 0.0]


def test_missing_prediction_counted(failing_doc: dict[str, Any]) -> None:
    assert failing_doc["metrics"]["predictions/n_missing"] == 1.0
    assert [r["missing"] for r in failing_doc["cases"]] == [False, True]


def test_exit_0_with_failing_gate(
    failing_run: subprocess.CompletedProcess[str], failing_doc: dict[str, Any]
) -> None:
    assert failing_doc["metrics"]["gate/dev100"] == 0.0
    assert failing_run.returncode == 0, failing_run.stderr


def test_exit_1_with_fail_on_gate_when_gate_fails(files: dict[str, Path]) -> None:
    proc = ragtrack(
        "score",
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["failing"]),
        "--scorer",
        "eval_json_v2",
        "--json",
        "--fail-on-gate",
    )
    assert proc.returncode == 1, proc.stderr


def test_exit_0_with_fail_on_gate_when_gate_passes(files: dict[str, Path]) -> None:
    proc = ragtrack(
        "score",
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
        "--json",
        "--fail-on-gate",
    )
    doc = strict_loads(proc.stdout)
    assert doc["metrics"]["eval_json_v2/eval_score_avg"] == pytest.approx(100.0)
    assert doc["metrics"]["gate/dev100"] == 1.0
    assert proc.returncode == 0, proc.stderr


def test_exit_2_and_one_line_error_for_bad_eval_set(files: dict[str, Path]) -> None:
    broken = files["broken"]
    broken.write_text('[{"id": "a1", "question": \n', encoding="utf-8")
    proc = ragtrack(
        "score",
        "--eval-set",
        str(broken),
        "--predictions",
        str(files["failing"]),
        "--scorer",
        "eval_json_v2",
        "--json",
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(broken) in lines[0]
    assert proc.stdout == ""


def test_columns_of_a_scorer_that_skipped_a_case_are_null(files: dict[str, Path]) -> None:
    # a2 is in questions.json only: refusal_citation has no gold for it, so its columns are null.
    proc = ragtrack(
        "score",
        "--eval-set",
        str(files["eval"]),
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
        "--scorer",
        "refusal_citation",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = strict_loads(proc.stdout)  # raises on NaN / Infinity
    assert [r["refusal_citation/label"] for r in doc["cases"]] == ["ANS_NO_HIT", None]


def test_scorer_without_its_eval_format_exits_2_naming_scorer_and_files(files: dict[str, Path]) -> None:
    proc = ragtrack(
        "score",
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["qaset_preds"]),
        "--scorer",
        "eval_json_v2",
        "--scorer",
        "refusal_citation",
        "--json",
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "ragtrack: error: scorers: eval_json_v2: needs question_v2 items (with `expected`), "
        "and no case of the eval set "
        f"has them; eval-set files: {files['qaset']} (qaset)\n"
    )


def test_help_is_fast() -> None:
    t0 = time.perf_counter()
    proc = ragtrack("--help")
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0
    assert "score" in proc.stdout
    assert elapsed < 1.0, f"ragtrack --help took {elapsed:.2f}s"


# ---------------------------------------------------------------- in-process (cheap) checks of bad input


def test_missing_predictions_file_exits_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrack.app.cli import main

    missing = files["dir"] / "nope.jsonl"
    assert (
        main(
            [
                "score",
                "--eval-set",
                str(files["eval"]),
                "--predictions",
                str(missing),
                "--scorer",
                "eval_json_v2",
            ]
        )
        == 2
    )
    assert str(missing) in capsys.readouterr().err


def test_unknown_scorer_exits_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrack.app.cli import main

    assert (
        main(
            [
                "score",
                "--eval-set",
                str(files["eval"]),
                "--predictions",
                str(files["failing"]),
                "--scorer",
                "nope",
            ]
        )
        == 2
    )
    assert "nope" in capsys.readouterr().err


def test_missing_gates_file_exits_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrack.app.cli import main

    missing = files["dir"] / "nope.yaml"
    argv = [
        "score",
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["failing"]),
        "--scorer",
        "eval_json_v2",
        "--gates",
        str(missing),
    ]
    assert main(argv) == 2
    assert str(missing) in capsys.readouterr().err


# ---------------------------------------------------------------- bad input: one clear error, exit 2


def score_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from ragtrack.app.cli import main

    code = main(["score", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def score_lines(
    capsys: pytest.CaptureFixture[str], eval_set: Path, lines: str, tmp: Path, *extra: str
) -> tuple[int, str, str]:
    preds = tmp / "p.jsonl"
    preds.write_text(lines, encoding="utf-8")
    return score_main(
        capsys, "--eval-set", str(eval_set), "--predictions", str(preds), "--scorer", "eval_json_v2", *extra
    )


def test_infinity_in_predictions_exits_2_naming_line_and_field(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = '{"id": "a1", "answer": ""}\n\n{"id": "a2", "answer": "", "latency_ms": Infinity}\n'
    code, out, err = score_lines(capsys, files["eval"], lines, tmp_path, "--json")
    assert (code, out) == (2, "")
    assert (
        err == f"ragtrack: error: {tmp_path / 'p.jsonl'}: line 3: latency_ms: Infinity is not a JSON number\n"
    )


def test_deeply_nested_predictions_exit_2_naming_the_line(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = score_lines(
        capsys, files["eval"], '{"id": "a1", "answer": ""}\n' + "[" * 100_000 + "\n", tmp_path
    )
    assert code == 2
    assert err == f"ragtrack: error: {tmp_path / 'p.jsonl'}: line 2: not valid JSON: nested too deeply\n"


def test_null_answer_exits_2_naming_line_and_field(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = score_lines(capsys, files["eval"], '{"id": "a1", "answer": null}\n', tmp_path)
    assert code == 2
    assert (
        err
        == f'ragtrack: error: {tmp_path / "p.jsonl"}: line 1: answer: null; a recorded empty answer is ""\n'
    )


def test_predictions_directory_exits_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = score_main(
        capsys, "--eval-set", str(files["eval"]), "--predictions", str(tmp_path), "--scorer", "eval_json_v2"
    )
    assert (code, err) == (2, f"ragtrack: error: {tmp_path}: cannot read: Is a directory\n")


def test_eval_set_directory_exits_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(tmp_path),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
    )
    assert (code, err) == (2, f"ragtrack: error: {tmp_path}: cannot read: Is a directory\n")


def test_nan_in_eval_set_exits_2_naming_item_and_field(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "qa.json"
    bad.write_text(
        '[{"qid": "a1", "q": "Q", "answerable": true, "gold_ids": [], "gold_claim": NaN}]', encoding="utf-8"
    )
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(bad),
        "--predictions",
        str(files["qaset_preds"]),
        "--scorer",
        "refusal_citation",
    )
    assert (code, err) == (2, f"ragtrack: error: {bad}: item 0: gold_claim: NaN is not a JSON number\n")


def test_predictions_given_as_eval_set_exits_2(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    preds = files["perfect"]
    code, _, err = score_main(
        capsys, "--eval-set", str(preds), "--predictions", str(preds), "--scorer", "eval_json_v2"
    )
    assert code == 2
    assert err.startswith(f"ragtrack: error: {preds}: line 1: answer: this looks like a predictions file")


def test_empty_predictions_file_warns_and_scores_every_case_missing(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = score_lines(capsys, files["eval"], "\n\n", tmp_path, "--json")
    assert code == 0
    assert (
        f"ragtrack: warning: {tmp_path / 'p.jsonl'}: no predictions: every case is scored as missing" in err
    )
    assert strict_loads(out)["metrics"]["predictions/n_missing"] == 2.0


# ---------------------------------------------------------------- gates that do not apply, gates skipped


def test_gates_of_scorers_that_did_not_run_are_dropped_with_a_note(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = score_main(
        capsys,
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
        "--json",
        "--fail-on-gate",
    )
    assert code == 0
    gates = sorted(k for k in strict_loads(out)["metrics"] if k.startswith("gate/"))
    assert gates == ["gate/all", "gate/dev100"]
    assert (
        "ragtrack: note: gates not applicable (their scorers did not run): G1_precision, G2_under_refusal, "
        in err
    )


def _gates_with_a_skipped_one(tmp_path: Path) -> Path:
    path = tmp_path / "gates.yaml"
    path.write_text(
        "dev100: ['eval_json_v2/eval_score_avg >= 95']\ntypo: ['eval_json/eval_score_avg >= 95']\n",
        encoding="utf-8",
    )
    return path


def test_fail_on_gate_exits_1_on_a_skipped_gate(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
        "--gates",
        str(_gates_with_a_skipped_one(tmp_path)),
        "--fail-on-gate",
    )
    assert code == 1
    assert "ragtrack: gate typo skipped" in err


def test_allow_skipped_gates_accepts_a_skipped_gate(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = score_main(
        capsys,
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["perfect"]),
        "--scorer",
        "eval_json_v2",
        "--gates",
        str(_gates_with_a_skipped_one(tmp_path)),
        "--fail-on-gate",
        "--allow-skipped-gates",
    )
    assert code == 0


def test_allow_skipped_gates_still_exits_1_on_a_failed_gate(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = score_main(
        capsys,
        "--eval-set",
        str(files["eval"]),
        "--predictions",
        str(files["failing"]),
        "--scorer",
        "eval_json_v2",
        "--gates",
        str(_gates_with_a_skipped_one(tmp_path)),
        "--fail-on-gate",
        "--allow-skipped-gates",
    )
    assert code == 1


# ---------------------------------------------------------------- --config: a run's scorers and gates


def write_run_config(
    path: Path, files: dict[str, Path], scorers: dict[str, Any], gates: dict[str, list[str]]
) -> Path:
    import yaml

    from ragtrack.inputs.config import RunConfig

    cfg = RunConfig.from_container(
        {
            "model": {"id": "m"},
            "adapter": {"name": "a", "id": "a@1"},
            "index": {"name": "i"},
            "prompt": {"version": "v1", "path": "prompt.md"},
            "eval_set": {"name": "e", "files": [str(files["qaset"])]},
            "generator": {"name": "replay", "params": {"path": str(files["qaset_preds"])}},
            "scorers": scorers,
            "gates": gates,
        }
    )
    path.write_text(
        yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return path


def test_config_gives_the_scorers_with_their_parameters(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preds = write_jsonl(tmp_path / "p.jsonl", [{"qid": "a1", "answer": "I don't know"}])
    config = write_run_config(
        tmp_path / "config.yaml", files, {"refusal_citation": {"refusal_token": "i don't know"}}, {}
    )
    code, out, _ = score_main(
        capsys,
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(preds),
        "--config",
        str(config),
        "--json",
    )
    assert code == 0
    assert strict_loads(out)["cases"][0]["refusal_citation/label"] == "OVER_REFUSAL"


def test_config_gives_the_gates(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_run_config(
        tmp_path / "config.yaml",
        files,
        {"refusal_citation": None},
        {"hits": ["refusal_citation/citation_hit_rate >= 1"]},
    )
    code, out, _ = score_main(
        capsys,
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["qaset_preds"]),
        "--config",
        str(config),
        "--json",
        "--fail-on-gate",
    )
    assert (code, sorted(k for k in strict_loads(out)["metrics"] if k.startswith("gate/"))) == (
        0,
        ["gate/all", "gate/hits"],
    )


def test_config_and_scorer_together_exit_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_run_config(tmp_path / "config.yaml", files, {"refusal_citation": None}, {})
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["qaset_preds"]),
        "--config",
        str(config),
        "--scorer",
        "refusal_citation",
    )
    assert (code, err) == (
        2,
        "ragtrack: error: --config: --scorer and --config both name the scorer; give one of them\n",
    )


def test_no_scorer_and_no_config_exit_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = score_main(
        capsys, "--eval-set", str(files["qaset"]), "--predictions", str(files["qaset_preds"])
    )
    assert (code, err) == (
        2,
        "ragtrack: error: --scorer: no scorer given: use --scorer NAME (repeatable) or --config FILE\n",
    )


def test_invalid_config_exits_2_naming_file_and_key(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("scorers: {refusal_citation: null}\n", encoding="utf-8")
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["qaset_preds"]),
        "--config",
        str(config),
    )
    assert (code, err) == (2, f"ragtrack: error: {config}: model: Field required\n")


def test_config_scorer_parameter_error_exits_2(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_run_config(
        tmp_path / "config.yaml", files, {"refusal_citation": {"refusal_tokn": "x"}}, {}
    )
    code, _, err = score_main(
        capsys,
        "--eval-set",
        str(files["qaset"]),
        "--predictions",
        str(files["qaset_preds"]),
        "--config",
        str(config),
    )
    assert (code, err) == (
        2,
        f"ragtrack: error: {config}: scorers.refusal_citation: refusal_tokn: "
        "Extra inputs are not permitted\n",
    )


def test_score_restores_the_garbage_collector(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragtrack score` pauses the collector while it works, and leaves it as it found it, error or not."""
    import gc

    eval_set = ["--eval-set", str(files["eval"]), "--scorer", "eval_json_v2"]
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            code, _, _ = score_main(capsys, *eval_set, "--predictions", str(files["perfect"]))
            assert (code, gc.isenabled()) == (0, enabled)
            code, _, _ = score_main(capsys, *eval_set, "--predictions", str(files["dir"] / "none.jsonl"))
            assert (code, gc.isenabled()) == (2, enabled)
        finally:
            gc.enable()
