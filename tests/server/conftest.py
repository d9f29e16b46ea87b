"""Session fixtures: the server stack starts once (both servers side by side) and stops at the end.

A component that cannot start skips the tests that need it, with the component and the
reason in the skip message (`pytest -ra` lists it), never a silent pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from unittest import mock

import pytest

from ragtrack.app.devserver import ComponentError
from tests.server.stack import Stack, Target


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """In-process commands set MLflow's retry settings in os.environ (see `tracking.remote`): undone after
    each test."""
    with mock.patch.dict(os.environ):
        yield


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    st = Stack(tmp_path_factory.mktemp("server-stack"))
    try:
        try:
            st.start()
        except ComponentError as e:
            pytest.skip(str(e))
        yield st
    finally:
        st.stop()


def _target(stack: Stack, name: str) -> Target:
    try:
        return stack.target(name)
    except ComponentError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def plain(stack: Stack) -> Target:
    """`mlflow server` on PostgreSQL, artifacts in the bucket."""
    return _target(stack, "plain")


@pytest.fixture(scope="session")
def auth(stack: Stack) -> Target:
    """The same with MLflow's basic-auth app."""
    return _target(stack, "auth")
