"""Searches that read every page, and filters that quote any value: a real SQLite store."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.core.errors import InputError
from ragtrack.tracking import search
from ragtrack.tracking.reader import find_runs, get_run
from ragtrack.tracking.search import all_experiment_ids, all_runs, equals

VALUES = ["plain", "it's", 'say "hi"', "both ' and \"", "per%cent_", "back\\slash"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[str, MlflowClient, str]:
    uri = f"sqlite:///{tmp_path_factory.mktemp('search') / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("quoted")
    for value in [
        *VALUES,
        "both _ and _",
    ]:  # the last one only looks like the LIKE pattern of "both ' and \""
        run = client.create_run(exp, tags={"ragtrack.stage": "full"})
        client.log_param(run.info.run_id, "p", value)
        client.set_terminated(run.info.run_id, "FINISHED")
    for i in range(4):
        client.create_experiment(f"more-{i}")
    return uri, client, exp


@pytest.fixture
def small_pages(monkeypatch) -> None:
    monkeypatch.setattr(search, "PAGE", 2)


def test_every_page_of_runs_is_read(store, small_pages):
    _, client, exp = store
    assert len(all_runs(client, [exp])) == len(VALUES) + 1


def test_every_page_of_experiments_is_read(store, small_pages):
    _, client, _ = store
    assert len(all_experiment_ids(client)) == 6  # Default, quoted, 4 more


def test_pages_keep_the_order_asked(store, small_pages):
    _, client, exp = store
    runs = all_runs(client, [exp], order_by=["attributes.start_time ASC"])
    assert [r.info.start_time for r in runs] == sorted(r.info.start_time for r in runs)


@pytest.mark.parametrize("value", VALUES)
def test_a_filter_finds_a_value_with_any_quote(store, value):
    _, client, exp = store
    condition, exact = equals("params.p", value)
    found = [r.data.params["p"] for r in all_runs(client, [exp], condition)]
    assert value in found and (not exact or found == [value])


@pytest.mark.parametrize("value", VALUES)
def test_find_runs_matches_a_param_exactly(store, value):
    uri, _, _ = store
    assert [r.params["p"] for r in find_runs(uri, "quoted", {"p": value})] == [value]


# ------------------------------------------------------------------ naming a run


@pytest.fixture(scope="module")
def named(tmp_path_factory) -> tuple[str, MlflowClient, list[str]]:
    uri = f"sqlite:///{tmp_path_factory.mktemp('named') / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("named")
    ids = [client.create_run(exp, run_name=name).info.run_id for name in ("lora_b-v2", "twin", "twin")]
    return uri, client, ids


def test_a_run_is_found_by_its_name(named):
    uri, _, ids = named
    assert get_run(uri, "lora_b-v2").run_id == ids[0]


def test_a_run_is_found_by_a_unique_prefix_of_its_id(named):
    uri, _, ids = named
    assert get_run(uri, ids[1][:12]).run_id == ids[1]


def test_a_name_shared_by_two_runs_lists_both(named):
    uri, _, ids = named
    with pytest.raises(InputError, match="names 2 runs") as e:
        get_run(uri, "twin")
    assert ids[1] in e.value.problem and ids[2] in e.value.problem


def test_a_reference_to_no_run_says_what_was_tried(named):
    uri, *_ = named
    with pytest.raises(InputError, match="no run in .* has this id, id prefix or run name"):
        get_run(uri, "nothing-like-it")
