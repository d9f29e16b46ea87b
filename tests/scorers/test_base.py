"""The scorer base: which eval-set section each scorer reads, and the check that it applies."""

from __future__ import annotations

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import AnswerExample, EvalCase, EvalFile, EvalSet, ExpectedV2, Gold
from ragtrack.scorers import build_scorer
from ragtrack.scorers.base import check_applicable

EXAMPLE = AnswerExample(
    target_audience="a",
    main_topic="b",
    sub_topic="c",
    detailed_description=[],
    original_evidence="e",
    predicted_questions=[],
)


def eval_set(*cases: EvalCase) -> EvalSet:
    files = [
        EvalFile(path="data/qaset.json", stem="qaset", format="qaset", sha1="0" * 40, n_items=len(cases))
    ]
    return EvalSet(name="t", files=files, cases=list(cases))


GOLD_ONLY = eval_set(EvalCase(id="1", question="Q?", gold=Gold(answerable=True)))


@pytest.mark.parametrize(("name", "section"), [("eval_json_v2", "expected"), ("refusal_citation", "gold")])
def test_builtin_scorers_name_the_section_they_read(name: str, section: str) -> None:
    assert build_scorer(name).section == section


def test_scorer_with_its_section_on_some_case_applies() -> None:
    es = eval_set(
        EvalCase(id="1", question="Q?", gold=Gold(answerable=True)),
        EvalCase(id="2", question="Q2?", expected=ExpectedV2(answer_example=EXAMPLE)),
    )
    check_applicable([build_scorer("eval_json_v2"), build_scorer("refusal_citation")], es)


def test_scorer_that_applies_to_no_case_is_an_error_naming_it_and_the_files() -> None:
    with pytest.raises(InputError) as ei:
        check_applicable([build_scorer("refusal_citation"), build_scorer("eval_json_v2")], GOLD_ONLY)
    assert str(ei.value) == (
        "scorers: eval_json_v2: needs question_v2 items (with `expected`), and no case of the eval set has "
        "them; eval-set files: data/qaset.json (qaset)"
    )


@pytest.mark.parametrize("name", ["eval_json_v2", "refusal_citation"])
def test_scorer_info_carries_the_code_hash_of_its_module_and_what_it_imports(name: str) -> None:
    from ragtrack.core.registry import code_sha256

    scorer = build_scorer(name)
    assert scorer.info.code_sha256 == code_sha256(type(scorer))
