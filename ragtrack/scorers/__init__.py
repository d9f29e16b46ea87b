"""Scorers: named, versioned, batch-oriented (see `ragtrack.scorers.base`).

May import: `ragtrack.core`, `nlp`, `clients`, `inputs`.
"""

from ragtrack.scorers.base import (
    Batch,
    Scorer,
    ScorerParams,
    build_scorer,
    get_scorer_class,
    register_scorer,
    scorer_names,
)

__all__ = [
    "Batch",
    "Scorer",
    "ScorerParams",
    "build_scorer",
    "get_scorer_class",
    "register_scorer",
    "scorer_names",
]
