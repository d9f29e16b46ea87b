"""Every exception class ragtrack defines survives pickling (multiprocessing, joblib, Hydra launchers)."""

from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import signal

import ragtrack
from ragtrack.devserver import ComponentError
from ragtrack.errors import InputError, RunNotEnded
from ragtrack.llm import LLMAuthError, LLMError, _Retryable
from ragtrack.scorers.judge import JudgeFailure
from ragtrack.scorers.llm_batch import LlmFailureRateError, ReplyError
from ragtrack.scorers.rubric_judge import JudgeParseError
from ragtrack.termination import Terminated
from ragtrack.trust import Refused, Setting

# One example of every exception class defined in the package; a new class must add one.
EXAMPLES: dict[type[BaseException], BaseException] = {
    InputError: InputError("data/qaset.json", "expected a list", where="item 3", field="gold_ids"),
    Terminated: Terminated(signal.SIGTERM),
    LLMError: LLMError("http://127.0.0.1:8000/v1", "m", "HTTP 500", secret="sk-x"),
    LLMAuthError: LLMAuthError("http://127.0.0.1:8000/v1", "m", "HTTP 401: key rejected"),
    _Retryable: _Retryable("HTTP 503", retry_after=1.5),
    RunNotEnded: RunNotEnded("http://127.0.0.1:5000: run abc stays RUNNING until reaped"),
    ComponentError: ComponentError("postgresql", "initdb failed: exit 1"),
    JudgeParseError: JudgeParseError("rubric_judge: 3 of 10 replies unreadable"),
    ReplyError: ReplyError("no JSON in the reply"),
    JudgeFailure: JudgeFailure("llm: unreadable reply: no JSON in the reply"),
    LlmFailureRateError: LlmFailureRateError("rag: 3 of 10 judge questions got no usable answer (max 10%)"),
    Refused: Refused("config.yaml", [Setting(key="scorers.rubric_judge.base_url", kind="host", value="http://x/v1",
                                             default=None, present=True)]),
}


def _defined_exception_classes() -> set[type[BaseException]]:
    found = set()
    for info in pkgutil.walk_packages(ragtrack.__path__, "ragtrack."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__.startswith("ragtrack"):
                found.add(obj)
    return found


def test_every_exception_class_has_an_example() -> None:
    assert _defined_exception_classes() == set(EXAMPLES)


@pytest.mark.parametrize("error", list(EXAMPLES.values()), ids=lambda e: type(e).__name__)
def test_exception_survives_pickling(error: BaseException) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert (type(back), str(back), vars(back)) == (type(error), str(error), vars(error))


def test_input_error_without_where_and_field_survives_pickling() -> None:
    back = pickle.loads(pickle.dumps(InputError("f", "p")))
    assert (str(back), back.file, back.problem, back.where, back.field) == ("f: p", "f", "p", None, None)


def test_input_error_message_names_file_where_field_problem() -> None:
    assert str(EXAMPLES[InputError]) == "data/qaset.json: item 3: gold_ids: expected a list"
