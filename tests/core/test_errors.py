"""Every exception class ragtrack defines survives pickling (multiprocessing, joblib, Hydra launchers); a full
disk is recognised however it is wrapped."""

from __future__ import annotations

import errno
import importlib
import pickle
import pkgutil
import re
import signal
import sqlite3

import pytest

import ragtrack
from ragtrack.app.devserver import ComponentError
from ragtrack.clients.llm import LLMAuthError, LLMError, _Retryable
from ragtrack.core.errors import DiskFull, InputError, RunNotEnded, disk_full, human_bytes
from ragtrack.core.termination import Terminated
from ragtrack.index.build import _Damaged
from ragtrack.run.trust import Refused, Setting
from ragtrack.scorers.judge import JudgeFailure
from ragtrack.scorers.llm_batch import LlmFailureRateError, ReplyError
from ragtrack.scorers.rubric_judge import JudgeParseError

# One example of every exception class defined in the package; a new class must add one.
EXAMPLES: dict[type[BaseException], BaseException] = {
    InputError: InputError("data/qaset.json", "expected a list", where="item 3", field="gold_ids"),
    Terminated: Terminated(signal.SIGTERM),
    LLMError: LLMError("http://127.0.0.1:8000/v1", "m", "HTTP 500", secret="sk-x"),
    LLMAuthError: LLMAuthError("http://127.0.0.1:8000/v1", "m", "HTTP 401: key rejected"),
    _Retryable: _Retryable("HTTP 503", retry_after=1.5),
    RunNotEnded: RunNotEnded("http://127.0.0.1:5000: run abc stays RUNNING until reaped"),
    DiskFull: DiskFull("/srv/mlflow", 2048),
    _Damaged: _Damaged("vectors.npy does not match its checksum"),
    ComponentError: ComponentError("postgresql", "initdb failed: exit 1"),
    JudgeParseError: JudgeParseError("rubric_judge: 3 of 10 replies unreadable"),
    ReplyError: ReplyError("no JSON in the reply"),
    JudgeFailure: JudgeFailure("llm: unreadable reply: no JSON in the reply"),
    LlmFailureRateError: LlmFailureRateError("rag: 3 of 10 judge questions got no usable answer (max 10%)"),
    Refused: Refused(
        "config.yaml",
        [
            Setting(
                key="scorers.rubric_judge.base_url",
                kind="host",
                value="http://x/v1",
                default=None,
                present=True,
            )
        ],
    ),
}


def _defined_exception_classes() -> set[type[BaseException]]:
    found = set()
    for info in pkgutil.walk_packages(ragtrack.__path__, "ragtrack."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("ragtrack")
            ):
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


# ------------------------------------------------------------------ a full disk


def _wrapped(inner: BaseException) -> BaseException:
    """`inner` as MLflow raises it: a chain of library errors around the driver's."""
    try:
        try:
            raise inner
        except BaseException as e:
            raise RuntimeError("(sqlite3.OperationalError) the statement failed") from e
    except RuntimeError as outer:
        return outer


def test_enospc_deep_in_a_chain_is_a_full_disk(tmp_path) -> None:
    assert disk_full(_wrapped(OSError(errno.ENOSPC, "No space left on device")), tmp_path, 10) is not None


def test_sqlite_full_is_a_full_disk(tmp_path) -> None:
    assert disk_full(sqlite3.OperationalError("database or disk is full"), tmp_path, None) is not None


def test_a_quota_is_a_full_disk(tmp_path) -> None:
    assert disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"), tmp_path, None) is not None


def test_another_os_error_is_not_a_full_disk(tmp_path) -> None:
    assert disk_full(_wrapped(OSError(errno.EACCES, "Permission denied")), tmp_path, None) is None


def test_a_full_disk_names_the_file_the_os_named(tmp_path) -> None:
    full = disk_full(
        OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "f.json")), tmp_path, None
    )
    assert full is not None and full.path == tmp_path / "f.json"


def test_a_full_disk_reads_as_one_line_with_free_and_needed_space(tmp_path) -> None:
    text = str(DiskFull(tmp_path, 3 * 1024 * 1024))
    assert "\n" not in text and re.search(
        r"disk full writing .*: [\d.]+ [KMG]?B free there, .* about 3\.0 MB", text
    )


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KB"), (5 * 1024**3, "5.0 GB")]
)
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


def test_a_full_disk_during_a_copy_names_the_destination(tmp_path) -> None:
    e = OSError(errno.ENOSPC, "No space left on device")
    e.filename, e.filename2 = "/data/source.jsonl", str(tmp_path / "copy.jsonl")
    full = disk_full(e, tmp_path, None)
    assert full is not None and full.path == tmp_path / "copy.jsonl"


def test_a_relative_path_not_found_says_where_it_was_looked_for(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    e = InputError.from_os_error("data/qaset.json", FileNotFoundError(2, "No such file"))
    assert e.problem == f"file not found (relative paths resolve against {tmp_path})"


def test_an_absolute_path_not_found_is_just_not_found(tmp_path) -> None:
    assert (
        InputError.from_os_error(tmp_path / "x.json", FileNotFoundError(2, "No such file")).problem
        == "file not found"
    )
