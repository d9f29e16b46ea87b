"""How far each metric of the `rag` family can be trusted: its measured pairwise accuracy, shipped with
the scorer.

`bench/bench_rag_quality.py --write-reliability` scores the project's pair benchmark
(`bench/rag_pairs/`: for each metric, pairs of a better and a worse answer or context list)
and writes `reliability/<scorer>.json`: for the scorer's version and backend, each metric's
pairwise accuracy (the share of pairs where the better side scores better; a tie or a NaN
counts ½) with a 95% Wilson interval, per language, on the held-out pairs (written before
any rule was tuned and never looked at since) and on all pairs. The scorer logs the file's
sha256 (`scorer/<name>/reliability_sha256`) and its report shows the figure beside each
metric; a backend or version the file was not measured for says so instead of a number, and so do
other settings (`params`: a weight, a match ratio, another support model) or other embedding weights,
naming what differs.

A file names what it was derived from (`derived_from`: the scorer's code, the support model, the
embedding model's weights and the pair files, each by sha256) and carries the scores of a sample of
pairs (`witness`): the test suite checks that the installed inputs are those, and that this machine
scores the sample alike, instead of re-deriving the file (about 15 CPU-minutes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragtrack.core.hashing import sha256_bytes

__all__ = [
    "DIR",
    "NOT_COMPARED",
    "Accuracy",
    "Derivation",
    "Reliability",
    "load",
    "measured_params",
    "note",
    "wilson",
]

DIR = Path(__file__).resolve().parent / "reliability"
Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
# Settings not compared: those that change how a scorer runs, not what it scores; the embedding model's name
# (its weights are compared: a local copy of the model measured is that model); the reranker, whose metrics
# the backend already names (`offline+reranker`)
NOT_COMPARED = frozenset(
    {"batch_size", "embedding_cache", "nli_batch_size", "reranker_batch_size", "model", "reranker_model"}
)


class Accuracy(BaseModel):
    """A pairwise accuracy over `n` pairs and its 95% Wilson interval."""

    model_config = ConfigDict(frozen=True)

    accuracy: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, credits: list[float]) -> Accuracy:
        n = len(credits)
        acc = sum(credits) / n if n else math.nan
        low, high = wilson(acc, n)
        return cls(accuracy=round(acc, 4), low=round(low, 4), high=round(high, 4), n=n)

    def show(self) -> str:
        return f"{self.accuracy:.2f} [{self.low:.2f}, {self.high:.2f}] on {self.n} pairs"


class Derivation(BaseModel):
    """What a reliability file was derived from, each by sha256: deriving it again from the same gives it."""

    model_config = ConfigDict(frozen=True)

    code_sha256: str  # the scorer's code (`registry.code_sha256`: its module and the ones it imports)
    support_model_sha256: str  # the offline backend's support model (`support_model.sha256`)
    model_sha256: str  # the embedding model's weights
    pairs_sha256: str  # the benchmark's pair files, in name order


class Reliability(BaseModel):
    """One scorer's measured reliability: per metric, per pair set (`heldout`, `all`), per language
    (`all`, `en`, `zh`)."""

    model_config = ConfigDict(frozen=True)

    scorer: str
    version: str
    backend: str
    model: str  # the embedding model it was measured with
    derived_from: Derivation
    params: dict[str, Any]  # the scorer's settings it was measured with (`measured_params`)
    method: str
    metrics: dict[str, dict[str, dict[str, Accuracy]]]
    # pair id -> its better and worse side's score (None: NaN), for a sample of the tuning pairs
    witness: dict[str, tuple[float | None, float | None]]


def wilson(p: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion `p` observed over `n` trials."""
    if n == 0 or math.isnan(p):
        return math.nan, math.nan
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@cache
def load(scorer: str) -> tuple[Reliability, str] | None:
    """The shipped reliability of `scorer` and the file's sha256, or None when none ships."""
    path = DIR / f"{scorer}.json"
    if not path.is_file():
        return None
    data = path.read_bytes()
    return Reliability.model_validate(json.loads(data)), sha256_bytes(data)


def measured_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a scorer's logged params (`ComponentInfo.params`) a measured accuracy may depend on:
    all but `NOT_COMPARED`."""
    return {k: v for k, v in params.items() if k not in NOT_COMPARED}


def note(
    scorer: str,
    version: str,
    backend: str,
    metric: str,
    params: Mapping[str, Any] | None = None,
    model_sha256: str | None = None,
    unread: frozenset[str] = frozenset(),
) -> str:
    """What the report says beside `metric`: its measured accuracy, or why there is none for this scorer
    as configured: another version, backend or setting (`params`: the scorer's `measured_params`, but
    those `metric` does not read, `unread`), or other embedding weights (`model_sha256`, when known)."""
    found = load(scorer)
    if found is None:
        return "reliability not measured"
    rel, _ = found
    if rel.version != version or rel.backend != backend:
        return f"reliability measured for {rel.scorer} v{rel.version} with the {rel.backend} backend only"
    mine = params or {}
    keys = (mine.keys() | rel.params.keys()) - unread
    differ = sorted(k for k in keys if mine.get(k) != rel.params.get(k))
    if model_sha256 is not None and model_sha256 != rel.derived_from.model_sha256:
        differ.append("embedding weights")
    if differ:
        return f"reliability measured with other settings only (set otherwise here: {', '.join(differ)})"
    by_set = rel.metrics.get(metric)
    if by_set is None:
        return "reliability not measured"
    held, every = by_set["heldout"]["all"], by_set["all"]["all"]
    return f"pairwise accuracy {held.show()} held out; {every.show()} in all"
