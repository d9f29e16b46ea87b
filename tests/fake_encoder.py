"""A tiny deterministic encoder for tests of formulas: chosen vectors for chosen texts.

A text given a vector gets that vector (normalised); every other text gets an axis of
its own, so its cosine to every other text is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DIM = 512
_GIVEN = 8  # the first 8 dimensions are for chosen vectors


class FakeEncoder:
    def __init__(self, vectors: dict[str, Sequence[float]] | None = None) -> None:
        self.vectors = {t: np.asarray(v, dtype=np.float64) for t, v in (vectors or {}).items()}
        self.axes: dict[str, int] = {}
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            if t in self.vectors:
                v = self.vectors[t]
                rows[i, : len(v)] = v / np.linalg.norm(v)
            else:
                rows[i, _GIVEN + self.axes.setdefault(t, len(self.axes))] = 1.0
        return rows
