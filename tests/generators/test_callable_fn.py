"""Generator `callable`: a user's `module:function` answers each case."""

from __future__ import annotations

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase
from ragtrack.generators import build_generator

CASES = [EvalCase(id="a", question="Q-a?"), EvalCase(id="b", question="Q-b?")]
PREFIX = "tests.generators.sample_fns:"


def _gen(name: str):
    return build_generator("callable", {"target": PREFIX + name})


def test_string_return_becomes_the_answer():
    preds = _gen("echo").generate(CASES, "Q: {{question}}").predictions
    assert [p.answer for p in preds] == ["a: Q: Q-a?", "b: Q: Q-b?"]


def test_latency_is_measured():
    (p, _) = _gen("echo").generate(CASES, "{{question}}").predictions
    assert p.latency_ms is not None and p.latency_ms >= 0


def test_dict_return_is_read_like_a_predictions_line():
    p = _gen("structured").generate(CASES[:1], "").predictions[0]
    assert (p.answer, p.contexts[0].source_path, p.citations) == ("not in context", "a.md", ["1"])


def test_exception_names_target_and_case():
    with pytest.raises(
        RuntimeError, match=r"sample_fns:broken failed on case 'a': ValueError: model server said no"
    ):
        _gen("broken").generate(CASES, "")


def test_wrong_return_type_is_an_input_error():
    with pytest.raises(InputError, match="returned int"):
        _gen("wrong_type").generate(CASES, "")


@pytest.mark.parametrize(
    "target, message",
    [
        ("no_colon", "expected 'module:function'"),
        ("no.such.module:f", "cannot import module"),
        (PREFIX + "missing", "has no attribute"),
        (PREFIX + "not_callable", "is not callable"),
    ],
)
def test_bad_target_is_an_input_error(target, message):
    with pytest.raises(InputError, match=message):
        build_generator("callable", {"target": target}).generate(CASES, "")


def test_unknown_generator_param_is_an_input_error():
    with pytest.raises(InputError, match="retries: Extra inputs are not permitted"):
        build_generator("callable", {"target": PREFIX + "echo", "retries": 3})


def test_unknown_generator_name_is_an_input_error():
    with pytest.raises(InputError, match="unknown generator 'vllm'"):
        build_generator("vllm", {})
