"""bench/fit_support.py: the shipped support model is what fitting it on the tuning pairs gives."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def fitting():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("fit_support", BENCH / "fit_support.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_shipped_support_model_re_derives_from_the_tuning_pairs(fitting, capsys) -> None:
    assert fitting.main(["--check"]) == 0, capsys.readouterr().out


def test_a_weight_stays_within_its_sign_when_the_data_pull_it_the_other_way(fitting) -> None:
    # the first feature rises with the label but must lower P(unsupported): its weight stops at 0
    x = np.array([[0.0] * len(fitting.FEATURES), [1.0] + [0.0] * (len(fitting.FEATURES) - 1)] * 5)
    y = np.array([0.0, 1.0] * 5)
    assert fitting.SIGNS[fitting.FEATURES[0]] == -1
    assert fitting.logistic(x, y)[0] == 0.0


def test_a_refit_agrees_only_within_the_tolerance(fitting) -> None:
    from ragtrack.scorers import support_model

    shipped = support_model.load()
    near = shipped.model_copy(update={"intercept": shipped.intercept + fitting.TOLERANCE / 2})
    far = shipped.model_copy(update={"intercept": shipped.intercept + fitting.TOLERANCE * 2})
    assert fitting.agrees(shipped, near) and not fitting.agrees(shipped, far)
