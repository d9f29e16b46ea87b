"""Searching a store without silent limits: every page of the answer, and a filter that quotes any value.

MLflow answers a search with at most `max_results` runs (1,000 unless told), oldest or newest
first by the order asked, and a page token for the rest: a caller that ignores the token
loses the remainder without a word. Its filter grammar quotes a string with `'` or `"` and
has no escape, so a value holding both cannot be written as an equality; it is searched with
LIKE, each quote a one-character wildcard, and the caller keeps the exact matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlflow.entities import Run
from mlflow.tracking import MlflowClient

__all__ = ["PAGE", "all_experiment_ids", "all_runs", "equals"]

# runs per request: MLflow's default page; a request for more costs the server more memory at once
PAGE = 1000


def all_runs(
    client: MlflowClient,
    experiment_ids: Sequence[str],
    filter_string: str = "",
    order_by: Sequence[str] | None = None,
) -> list[Run]:
    """Every run of `experiment_ids` matching `filter_string`, in `order_by` order, page after page."""
    if not experiment_ids:
        return []
    out: list[Run] = []
    token = None
    while True:
        page = client.search_runs(
            list(experiment_ids),
            filter_string,
            max_results=PAGE,
            order_by=list(order_by) if order_by else None,
            page_token=token,
        )
        out += page
        token = page.token
        if not token:
            return out


def all_experiment_ids(client: MlflowClient) -> list[str]:
    """The ids of every active experiment, page after page."""
    ids: list[str] = []
    token = None
    while True:
        page = client.search_experiments(max_results=PAGE, page_token=token)
        ids += [e.experiment_id for e in page]
        token = page.token
        if not token:
            return ids


def equals(field: str, value: str) -> tuple[str, bool]:
    """A filter condition `field` = `value`, and whether it is exact (else it matches more: keep the equal
    ones)."""
    if "'" not in value:
        return f"{field} = '{value}'", True
    if '"' not in value:
        return f'{field} = "{value}"', True
    return f"{field} LIKE '{value.replace(chr(39), '_').replace(chr(34), '_')}'", False
