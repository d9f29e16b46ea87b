"""Gates: parsing from config and pure threshold checks."""

from __future__ import annotations

import math

import pytest

from ragtrack.analysis.gates import applicable_gates, evaluate_gates, gate_metrics, parse_gates
from ragtrack.core.errors import InputError


def test_condition_parses_metric_op_threshold():
    (gate,) = parse_gates({"g": ["a/b >= 0.5"]})
    c = gate.conditions[0]
    assert (c.metric, c.op, c.threshold) == ("a/b", ">=", 0.5)


def test_unparseable_condition_names_gate_and_index():
    with pytest.raises(InputError, match=r"g\[1\]"):
        parse_gates({"g": ["a >= 1", "a is big"]})


def test_gate_needs_every_condition():
    (r,) = evaluate_gates(parse_gates({"g": ["a >= 1", "b <= 0.05"]}), {"a": 2.0, "b": 0.06})
    assert not r.passed


def test_threshold_is_inclusive_for_ge():
    (r,) = evaluate_gates(parse_gates({"g": ["a >= 0.98"]}), {"a": 0.98})
    assert r.passed


def test_absent_metric_skips_gate():
    (r,) = evaluate_gates(parse_gates({"g": ["missing >= 1"]}), {})
    assert r.skipped and not r.passed


def test_nan_metric_skips_gate():
    (r,) = evaluate_gates(parse_gates({"g": ["a >= 1"]}), {"a": math.nan})
    assert r.skipped


def test_gate_metrics_leave_out_skipped_gates():
    results = evaluate_gates(parse_gates({"ok": ["a >= 1"], "skip": ["z >= 1"]}), {"a": 1.0})
    assert gate_metrics(results) == {"gate/ok": 1.0, "gate/all": 1.0}


def test_shipped_default_gates_parse():
    import yaml

    from ragtrack.app.cli import DEFAULT_GATES

    names = [g.name for g in parse_gates(yaml.safe_load(DEFAULT_GATES.read_text()))]
    assert names == [
        "dev100",
        "G1_precision",
        "G2_under_refusal",
        "G3_over_refusal",
        "G4_citation_hit",
        "G5_compliance",
    ]


# ---------------------------------------------------------------- applicability


def _names(gates) -> list[str]:
    return [g.name for g in gates]


SHIPPED = {
    "dev100": ["eval_json_v2/eval_score_avg >= 95"],
    "G1_precision": ["refusal_citation/precision >= 0.80"],
    "missing": ["predictions/n_missing <= 0"],
}


def test_gate_of_a_scorer_that_did_not_run_is_dropped():
    kept, dropped = applicable_gates(parse_gates(SHIPPED), ["eval_json_v2"])
    assert (_names(kept), _names(dropped)) == (["dev100", "missing"], ["G1_precision"])


def test_predictions_metrics_are_always_applicable():
    kept, _ = applicable_gates(parse_gates(SHIPPED), [])
    assert _names(kept) == ["missing"]


def test_gate_with_one_metric_of_a_scorer_that_ran_is_kept():
    gates = parse_gates({"mixed": ["eval_json_v2/eval_score_avg >= 95", "refusal_citation/precision >= 0.8"]})
    assert _names(applicable_gates(gates, ["eval_json_v2"])[0]) == ["mixed"]


def test_gate_on_a_metric_of_no_registered_scorer_is_kept_to_be_skipped():
    gates = parse_gates({"typo": ["eval_jsn_v2/eval_score_avg >= 95"]})
    kept, _ = applicable_gates(gates, ["eval_json_v2"])
    (r,) = evaluate_gates(kept, {"eval_json_v2/eval_score_avg": 100.0})
    assert r.skipped
