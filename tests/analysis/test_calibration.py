"""`ragtrack calibrate`: judge scores against human labels, printed and logged to the run; bad CSV named by
line and field."""

from __future__ import annotations

import json
import math

import pytest
from mlflow.tracking import MlflowClient
from scipy.stats import spearmanr

from ragtrack.analysis.calibration import calibrate, read_golden
from ragtrack.app.cli import main
from ragtrack.app.hydra_app import execute
from ragtrack.core.errors import InputError
from tests.conftest import make_config, write_demo_files
from tests.llm_server import LLMServer, reply
from tests.processes import runs

# The judge's weighted score per case of the demo files (a1, a2, u1): accuracy = completeness = clarity.
JUDGE = {"a1": 8.0, "a2": 6.0, "u1": 2.0}


def _golden(tmp_path, text: str):
    path = tmp_path / "human.csv"
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ the numbers


def test_mae_within_1_and_spearman():
    human, judge = {"a": 1.0, "b": 5.0, "c": 9.0, "d": 4.0}, {"a": 2.0, "b": 5.0, "c": 7.0, "d": 6.0}
    r = calibrate(human, judge)
    expected_rho = spearmanr([1, 5, 9, 4], [2, 5, 7, 6]).statistic
    assert (r.n, r.mae, r.within_1, r.spearman) == (4, 1.25, 0.5, pytest.approx(expected_rho))


def test_spearman_of_constant_scores_is_not_a_number():
    assert math.isnan(calibrate({"a": 5.0, "b": 5.0}, {"a": 4.0, "b": 6.0}).spearman)


# ------------------------------------------------------------------ the golden file


def test_golden_reads_ids_and_scores_ignoring_other_columns(tmp_path):
    path = _golden(tmp_path, "\ufeffnote,id,human_score\nfine,a1,8\n\n,a2,6.5\n")
    assert read_golden(path) == ({"a1": 8.0, "a2": 6.5}, {"a1": 2, "a2": 4})


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "human.csv: empty file; expected a header row with id, human_score"),
        ("id,score\na1,3\n", "human.csv: line 1: no column 'human_score'; the header has: id, score"),
        ("id,human_score\na1,high\n", "human.csv: line 2: human_score: expected a number, got 'high'"),
        ("id,human_score\na1,3\na2,11\n", "human.csv: line 3: human_score: 11 is outside 1..10"),
        ("id,human_score\na1,3\na1,4\n", "human.csv: line 3: id: duplicate id 'a1' (first on line 2)"),
        ("id,human_score\n,4\n", "human.csv: line 2: id: empty"),
        ("id,human_score\na1\n", "human.csv: line 2: 1 fields, the header has 2"),
        ("id,human_score\n", "human.csv: no labelled case"),
    ],
)
def test_bad_golden_file_names_line_and_field(tmp_path, text, message):
    with pytest.raises(InputError) as info:
        read_golden(_golden(tmp_path, text))
    assert str(info.value).endswith(message)


# ------------------------------------------------------------------ the command, on a real run


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A tracked run of the demo files scored by rubric_judge: (tracking uri, run id)."""
    work = tmp_path_factory.mktemp("calibrate")
    files = write_demo_files(work)
    scores = {"退款多久到账？": 8, "What uptime does the SLA guarantee?": 6, "Who founded Lumen Cloud?": 2}

    def judge(n, body):
        prompt = body["messages"][0]["content"]
        s = next(v for q, v in scores.items() if f"<question>\n{q}\n</question>" in prompt)
        return reply(json.dumps({"analysis": "-", "accuracy": s, "completeness": s, "clarity": s}))

    with LLMServer(script=judge) as srv:
        params = {"base_url": srv.url, "model": "judge", "cache_dir": str(work / "cache")}
        cfg = make_config(files, scorers={"rubric_judge": params}, gates={})
        execute(cfg, base_dir=work)
    (run,) = runs(cfg.tracking.uri)
    return cfg.tracking.uri, run.info.run_id


def _calibrate(tmp_path, judged_run, text: str, *extra: str) -> int:
    uri, run_id = judged_run
    return main(
        [
            "calibrate",
            "--golden",
            str(_golden(tmp_path, text)),
            "--run",
            run_id,
            "--tracking-uri",
            uri,
            *extra,
        ]
    )


def test_calibration_is_printed(tmp_path, judged_run, capsys):
    assert _calibrate(tmp_path, judged_run, "id,human_score\na1,9\na2,6\nu1,4\n") == 0
    out = capsys.readouterr().out
    assert ("mae       1" in out, "within_1  0.6667" in out, "spearman  1" in out) == (True, True, True)


def test_calibration_is_logged_to_the_run(tmp_path, judged_run):
    _calibrate(tmp_path, judged_run, "id,human_score\na1,9\na2,6\nu1,4\n")
    uri, run_id = judged_run
    run = MlflowClient(uri).get_run(run_id)
    logged = {k: v for k, v in run.data.metrics.items() if k.startswith("calibration/")}
    assert logged == {
        "calibration/n": 3.0,
        "calibration/mae": 1.0,
        "calibration/within_1": 2 / 3,
        "calibration/spearman": 1.0,
    }


def test_golden_id_not_in_the_run_is_an_input_error(tmp_path, judged_run, capsys):
    assert _calibrate(tmp_path, judged_run, "id,human_score\na1,9\nzz,3\n") == 2
    assert "human.csv: line 3: id: no case 'zz' in run" in capsys.readouterr().err


def test_unknown_column_is_an_input_error(tmp_path, judged_run, capsys):
    assert _calibrate(tmp_path, judged_run, "id,human_score\na1,9\n", "--column", "rubric_judge/nope") == 2
    assert (
        "has no column 'rubric_judge/nope'; score columns: rubric_judge/accuracy" in capsys.readouterr().err
    )


def test_unknown_run_is_an_input_error(tmp_path, judged_run, capsys):
    uri, _ = judged_run
    assert (
        main(
            [
                "calibrate",
                "--golden",
                str(_golden(tmp_path, "id,human_score\na1,9\n")),
                "--run",
                "0" * 32,
                "--tracking-uri",
                uri,
            ]
        )
        == 2
    )
    assert f"run {'0' * 32}: no run in " in capsys.readouterr().err
