"""`ragtrack compare` on real runs of the demo in a SQLite store, and the statistics of
`ragtrack.analysis.compare`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ragtrack.analysis.compare import RunRef, RunSide, compare
from ragtrack.app.cli import main
from ragtrack.core.errors import InputError
from tests.demo_runs import DEMO, PLANTED, demo_config, log_demo_run


@pytest.fixture
def store(demo_store):
    return demo_store.tmp, demo_store.uri, demo_store.ids


def _compare(capsys, uri, *args):
    capsys.readouterr()
    code = main(["compare", *args, "--tracking-uri", uri])
    out = capsys.readouterr()
    return code, out.out, out.err


def _json(capsys, uri, *args):
    code, out, err = _compare(capsys, uri, *args, "--json")
    return code, json.loads(out), err


def _metric(doc, name):
    return next(m for m in doc["metrics"] if m["metric"] == name)


def test_planted_regression_is_detected(store, capsys):
    _, uri, ids = store
    _, doc, _ = _json(capsys, uri, ids["a"], ids["planted"])
    m = _metric(doc, "eval_json_v2/schema_pass_rate")
    assert (m["verdict"], m["mcnemar"]["pass_to_fail"], m["mcnemar"]["fail_to_pass"]) == ("worse", PLANTED, 0)
    assert m["ci_high"] < 0 and m["mcnemar"]["p_value"] < 0.05


def test_planted_regression_fails_the_gate(store, capsys):
    _, uri, ids = store
    code, _, err = _compare(
        capsys, uri, ids["a"], ids["planted"], "--fail-on-regression", "eval_json_v2/eval_score_avg"
    )
    assert code == 1
    assert f"regression: {ids['planted']}" in err and "regresses on eval_json_v2/eval_score_avg" in err


def test_a_margin_wider_than_the_drop_passes_the_gate(store, capsys):
    _, uri, ids = store
    code, _, _ = _compare(
        capsys, uri, ids["a"], ids["planted"], "--fail-on-regression", "eval_json_v2/eval_score_avg:60"
    )
    assert code == 0


def test_the_planted_cases_are_the_ones_that_moved_with_both_answers(store, capsys):
    _, uri, ids = store
    _, doc, _ = _json(capsys, uri, ids["a"], ids["planted"], "--top", "20")
    moved = _metric(doc, "eval_json_v2/schema_pass_rate")["moved"]
    assert sorted(x["case_id"] for x in moved) == [f"q{i:02d}" for i in range(1, PLANTED + 1)]
    assert all(x["answer_b"] == "Sure! Here is the answer: " + x["answer_a"] for x in moved)


def test_identical_predictions_differ_by_zero_and_pass_the_gate(store, capsys):
    _, uri, ids = store
    code, doc, _ = _json(
        capsys, uri, ids["a"], ids["same"], "--fail-on-regression", "eval_json_v2/eval_score_avg"
    )
    assert code == 0
    assert all(m["diff"] == 0 and m["ci_low"] <= 0 <= m["ci_high"] for m in doc["metrics"])
    assert all(not m["moved"] for m in doc["metrics"])


def test_terminal_table_names_every_metric_and_the_verdict(store, capsys):
    _, uri, ids = store
    code, out, _ = _compare(capsys, uri, ids["a"], ids["planted"])
    assert code == 0
    row = next(line for line in out.splitlines() if "eval_json_v2/eval_score_avg" in line)
    assert "worse" in row and "refusal_citation/over_refusal ↓" in out


def test_the_terminal_ends_with_the_ui_link_comparing_the_two_runs_case_by_case(store, capsys):
    _, uri, ids = store
    _, out, _ = _compare(capsys, uri, ids["a"], ids["planted"])
    link = out.strip().splitlines()[-1].split(": ", 1)[1]
    assert link.startswith("http://127.0.0.1:5000/#/experiments/")
    assert link.endswith(f"/runs/{ids['planted']}/evaluations?compareToRunUuid={ids['a']}")


@pytest.fixture(scope="module")
def written(demo_store, tmp_path_factory):
    """`compare a planted --log --out DIR` once (rendering the PNG is the slow part); the output directory."""
    out = tmp_path_factory.mktemp("compare_out")
    ids = demo_store.ids
    assert (
        main(
            [
                "compare",
                ids["a"],
                ids["planted"],
                "--log",
                "--out",
                str(out),
                "--tracking-uri",
                demo_store.uri,
            ]
        )
        == 0
    )
    return out


def test_log_adds_markdown_json_and_png_to_run_b(store, written):
    _, uri, ids = store
    names = [f.path for f in MlflowClient(uri).list_artifacts(ids["planted"], f"compare/{ids['a']}")]
    stem = f"compare/{ids['a']}/compare_{ids['a']}_vs_{ids['planted']}"
    assert sorted(names) == [f"{stem}.json", f"{stem}.md", f"{stem}.png"]


def test_out_writes_the_markdown_report(store, written):
    _, uri, ids = store
    md = (written / f"compare_{ids['a']}_vs_{ids['planted']}.md").read_text(encoding="utf-8")
    assert (
        "| eval_json_v2/schema_pass_rate | higher | 1 | 0.7273 |" in md and "## Cases that moved most" in md
    )


def test_experiment_mode_compares_every_other_run_with_the_baseline(store, capsys):
    _, uri, ids = store
    _, docs, _ = _json(capsys, uri, "--experiment", "demo", "--baseline", ids["a"])
    assert sorted(d["run_b"]["run_id"] for d in docs) == sorted([ids["same"], ids["planted"]])


def test_experiment_mode_opens_with_one_row_per_run_against_the_baseline(store, capsys):
    _, uri, ids = store
    _, out, _ = _compare(capsys, uri, "--experiment", "demo", "--baseline", ids["a"])
    head = out.split("\n\n")[0]
    assert (
        out.startswith(f"every run against the baseline {ids['a']}")
        and ids["planted"][:12] in head
        and ids["same"][:12] in head
    )


def test_experiment_mode_takes_the_baseline_by_name_prefix(store, capsys):
    _, uri, ids = store
    _, docs, _ = _json(capsys, uri, "--experiment", "demo", "--baseline", ids["a"][:10])
    assert ids["a"] not in [d["run_b"]["run_id"] for d in docs]


def test_experiment_mode_filters_runs_by_param(store, capsys):
    tmp, uri, ids = store
    planted_path = str(tmp / "planted.jsonl")  # the planted run's replayed file
    _, docs, _ = _json(
        capsys,
        uri,
        "--experiment",
        "demo",
        "--baseline",
        ids["a"],
        "--param",
        f"generator/replay/path={planted_path}",
    )
    assert [d["run_b"]["run_id"] for d in docs] == [ids["planted"]]


# ------------------------------------------------------------------ bad input


@pytest.fixture(scope="module")
def other_set(demo_store):
    """A run of the same answers on an eval set with the last 10 questions dropped."""
    tmp, uri = demo_store.tmp, demo_store.uri
    for name in ("questions", "qaset"):
        items = json.loads((DEMO / f"{name}.json").read_text(encoding="utf-8"))
        (tmp / f"{name}.json").write_text(json.dumps(items[:-10], ensure_ascii=False), encoding="utf-8")
    cfg = demo_config(
        tmp,
        eval_set={"name": "short", "files": [str(tmp / "questions.json"), str(tmp / "qaset.json")]},
        tracking={"uri": uri, "experiment": "other"},
    )
    return log_demo_run(cfg)


def test_different_eval_sets_are_refused_in_one_line(store, other_set, capsys):
    _, uri, ids = store
    code, out, err = _compare(capsys, uri, ids["a"], other_set)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "were scored on different eval sets" in err and "--allow-different-eval-sets" in err


def test_allowed_different_eval_sets_compare_the_shared_cases_and_say_so(store, other_set, capsys):
    _, uri, ids = store
    _, doc, _ = _json(capsys, uri, ids["a"], other_set, "--allow-different-eval-sets")
    assert (doc["n_shared"], doc["n_only_a"], doc["same_eval_set"]) == (42, 10, False)
    assert doc["notes"] == [
        "different eval sets: only the 42 shared cases are compared (10 only in A, 0 only in B)"
    ]


@pytest.mark.parametrize("args", [["one"], ["a", "b", "--baseline", "a"], ["--experiment", "demo"]])
def test_wrong_run_selection_is_one_line(store, capsys, args):
    _, uri, _ = store
    code, out, err = _compare(capsys, uri, *args)
    assert (code, out, err.count("\n")) == (2, "", 1)


def test_unknown_metric_for_the_gate_is_bad_input(store, capsys):
    _, uri, ids = store
    code, _, err = _compare(capsys, uri, ids["a"], ids["same"], "--fail-on-regression", "eval_json_v2/nope")
    assert code == 2 and "no metric 'eval_json_v2/nope' compared case by case" in err


@pytest.fixture(scope="module")
def reweighted(demo_store):
    """A run of run A's answers scored with another `jaccard_threshold` of eval_json_v2."""
    scorers = {"eval_json_v2": {"jaccard_threshold": 0.6}, "refusal_citation": {}}
    cfg = demo_config(
        demo_store.tmp, scorers=scorers, tracking={"uri": demo_store.uri, "experiment": "other"}
    )
    return log_demo_run(cfg)


def test_a_run_scored_with_other_settings_compares_only_the_scorers_that_scored_alike(
    store, reweighted, capsys
):
    _, uri, ids = store
    _, doc, _ = _json(capsys, uri, ids["a"], reweighted)
    assert {m["metric"].split("/")[0] for m in doc["metrics"]} == {"refusal_citation"}
    why = "eval_json_v2 scored it with other settings in A and B: jaccard_threshold"
    assert f"eval_json_v2/eval_score_avg: {why}" in doc["not_compared"]


def test_the_terminal_names_the_metrics_scored_otherwise(store, reweighted, capsys):
    _, uri, ids = store
    _, out, _ = _compare(capsys, uri, ids["a"], reweighted)
    assert "not compared:" in out and "other settings in A and B: jaccard_threshold" in out


def test_allow_different_scorers_compares_them_too(store, reweighted, capsys):
    _, uri, ids = store
    _, doc, _ = _json(capsys, uri, ids["a"], reweighted, "--allow-different-scorers")
    assert "eval_json_v2/eval_score_avg" in {m["metric"] for m in doc["metrics"]}


# ------------------------------------------------------------------ the statistics


def _side(run_id: str, scores: list[float], labels: list[str] | None = None) -> RunSide:
    n = len(scores)
    frame = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(n)],
            "question": ["q"] * n,
            "answer": [f"{run_id}{i}" for i in range(n)],
            "eval_json_v2/score": scores,
            "eval_json_v2/schema_ok": [s > 0 for s in scores],
        }
    )
    for sub in (
        "target_audience",
        "main_topic",
        "sub_topic",
        "detailed_description_f1",
        "original_evidence",
        "predicted_questions_f1",
        "grounding",
    ):
        frame[f"eval_json_v2/{sub}"] = [s / 100 for s in scores]
    ref = RunRef(run_id=run_id, run_name=run_id, label=run_id, eval_set_version="e@1")
    return RunSide(ref=ref, scorers=["eval_json_v2"], params={}, metrics={}, cases=frame)


def test_bootstrap_interval_is_reproducible_for_a_seed():
    a, b = (
        _side("a", [10.0 * (i % 7) for i in range(40)]),
        _side("b", [10.0 * ((i + 1) % 7) for i in range(40)]),
    )
    ci = [(m.ci_low, m.ci_high) for m in compare(a, b, seed=3).metrics]
    assert ci == [(m.ci_low, m.ci_high) for m in compare(a, b, seed=3).metrics]
    assert ci != [(m.ci_low, m.ci_high) for m in compare(a, b, seed=4).metrics]


def test_a_uniform_shift_has_a_degenerate_interval_at_the_shift():
    a, b = _side("a", [50.0] * 10), _side("b", [40.0] * 10)
    m = compare(a, b).metrics[0]
    assert (m.metric, m.diff, m.ci_low, m.ci_high, m.verdict, m.n_worse) == (
        "eval_json_v2/eval_score_avg",
        -10.0,
        -10.0,
        -10.0,
        "worse",
        10,
    )


def test_few_flips_are_not_significant_for_a_pass_fail_metric_however_tight_the_interval():
    # 4 of 40 cases fail in B only: the percentile interval is clear of 0, McNemar's p = 0.125
    a, b = _side("a", [100.0] * 40), _side("b", [0.0] * 4 + [100.0] * 36)
    m = next(m for m in compare(a, b).metrics if m.metric == "eval_json_v2/schema_pass_rate")
    assert m.ci_high < 0 and m.mcnemar.p_value == 0.125
    assert (m.verdict, m.regressed()) == ("no significant difference", False)


def test_cases_are_paired_by_id_not_by_position():
    a = _side("a", [0.0, 100.0])
    b = _side("b", [100.0, 0.0])
    b = b.model_copy(
        update={"cases": b.cases.iloc[::-1].assign(id=["c0", "c1"])}
    )  # rows reversed, ids swapped back
    m = compare(a, b).metrics[0]
    assert (m.diff, m.n_worse, m.n_better) == (0.0, 0, 0)


def test_no_shared_case_is_bad_input():
    a, b = _side("a", [1.0]), _side("b", [1.0])
    b = b.model_copy(update={"cases": b.cases.assign(id=["other"])})
    with pytest.raises(InputError, match="share no case id"):
        compare(a, b)


# ------------------------------------------------------------------ runs scored otherwise


def _scored(side: RunSide, **params: str) -> RunSide:
    """`side` with `scorer/eval_json_v2/<key>` params logged."""
    return side.model_copy(update={"params": {f"scorer/eval_json_v2/{k}": v for k, v in params.items()}})


def test_a_scorer_at_another_version_in_b_is_not_compared_and_says_why():
    a = _scored(_side("a", [50.0] * 10), version="3")
    b = _scored(_side("b", [40.0] * 10), version="4")
    c = compare(a, b)
    assert c.metrics == []
    assert "eval_json_v2/eval_score_avg: scored by eval_json_v2 v3 in A and v4 in B" in "\n".join(
        c.not_compared
    )


def test_a_scoring_setting_that_differs_withholds_the_scorer_s_metrics():
    a = _scored(_side("a", [50.0] * 10), version="3", weights='{"main_topic":0.1}')
    b = _scored(_side("b", [40.0] * 10), version="3", weights='{"main_topic":0.2}')
    assert compare(a, b).metrics == []
    assert any(n.endswith("other settings in A and B: weights") for n in compare(a, b).not_compared)


def test_settings_of_how_a_scorer_ran_or_logged_by_one_run_only_do_not_withhold_it():
    a = _scored(_side("a", [50.0] * 10), version="3", batch_size="8", code_sha256="x")
    b = _scored(_side("b", [40.0] * 10), version="3", batch_size="64", code_sha256="y", weights="{}")
    assert compare(a, b).metrics[0].diff == -10.0


def test_allowed_different_scorers_are_compared_with_a_note():
    a = _scored(_side("a", [50.0] * 10), version="3")
    b = _scored(_side("b", [40.0] * 10), version="4")
    c = compare(a, b, allow_different_scorers=True)
    assert c.metrics[0].diff == -10.0
    assert c.notes[0].startswith("scored otherwise, compared anyway: eval_json_v2/eval_score_avg: scored by")


def test_a_regression_gate_on_a_metric_scored_otherwise_names_why():
    a = _scored(_side("a", [50.0] * 10), version="3")
    b = _scored(_side("b", [40.0] * 10), version="4")
    with pytest.raises(InputError, match="v3 in A and v4 in B"):
        compare(a, b).metric("eval_json_v2/eval_score_avg")


def test_another_judge_model_withholds_but_another_server_for_it_does_not():
    a = _scored(_side("a", [50.0] * 10), **{"llm.model": "m1", "llm.base_url": "http://one/v1"})
    b = _scored(_side("b", [40.0] * 10), **{"llm.model": "m1", "llm.base_url": "http://two/v1"})
    assert compare(a, b).metrics[0].diff == -10.0
    c = _scored(_side("c", [40.0] * 10), **{"llm.model": "m2", "llm.base_url": "http://one/v1"})
    assert compare(a, c).metrics == []


def test_an_embedding_model_named_otherwise_with_the_same_weights_does_not_withhold():
    a = _scored(_side("a", [50.0] * 10), model="all-MiniLM-L6-v2", embedding_model_sha256="s")
    b = _scored(_side("b", [40.0] * 10), model="/models/minilm", embedding_model_sha256="s")
    assert compare(a, b).metrics[0].diff == -10.0
