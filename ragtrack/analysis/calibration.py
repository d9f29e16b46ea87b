"""Calibration of a judge against human labels (SPEC §5, seed 001's "±1 point" target).

The golden file is CSV (UTF-8, a byte-order mark tolerated) with a header row and at
least the columns `id` (a case id of the run) and `human_score` (the human's score,
a number from 1 to 10); other columns are ignored, blank lines skipped:

    id,human_score,note
    q001,8,precise
    q002,2,hallucinated the refund period

Compared with one per-case column of the run (default `rubric_judge/weighted_score`):
mean absolute error, the share of cases within ±1 point, and Spearman's rank
correlation (NaN when either side is constant or fewer than two cases).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError

__all__ = ["Calibration", "calibrate", "read_golden"]

REQUIRED = ("id", "human_score")


class Calibration(BaseModel):
    """Agreement of judge and human scores over the labelled cases."""

    model_config = ConfigDict(frozen=True)

    n: int
    mae: float
    within_1: float
    spearman: float

    def metrics(self) -> dict[str, float]:
        return {
            "calibration/n": float(self.n),
            "calibration/mae": self.mae,
            "calibration/within_1": self.within_1,
            "calibration/spearman": self.spearman,
        }


def read_golden(path: str | Path) -> tuple[dict[str, float], dict[str, int]]:
    """`({case id: human score}, {case id: line number})`; a bad file is an error naming line and field."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise InputError.from_os_error(path, e) from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if header is None:
        raise InputError(str(path), f"empty file; expected a header row with {', '.join(REQUIRED)}")
    columns = [h.strip() for h in header]
    for name in REQUIRED:
        if name not in columns:
            raise InputError(
                str(path), f"no column {name!r}; the header has: {', '.join(columns)}", where="line 1"
            )
    i_id, i_score = columns.index("id"), columns.index("human_score")
    scores: dict[str, float] = {}
    lines: dict[str, int] = {}
    for lineno, row in enumerate(rows, 2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"line {lineno}"
        if len(row) < len(columns):
            raise InputError(str(path), f"{len(row)} fields, the header has {len(columns)}", where=where)
        case_id, raw = row[i_id].strip(), row[i_score].strip()
        if not case_id:
            raise InputError(str(path), "empty", where=where, field="id")
        if case_id in scores:
            raise InputError(
                str(path),
                f"duplicate id {case_id!r} (first on line {lines[case_id]})",
                where=where,
                field="id",
            )
        try:
            score = float(raw)
        except ValueError:
            raise InputError(
                str(path), f"expected a number, got {raw!r}", where=where, field="human_score"
            ) from None
        if not 1 <= score <= 10:
            raise InputError(str(path), f"{raw} is outside 1..10", where=where, field="human_score")
        scores[case_id], lines[case_id] = score, lineno
    if not scores:
        raise InputError(str(path), "no labelled case")
    return scores, lines


def calibrate(human: Mapping[str, float], judge: Mapping[str, float]) -> Calibration:
    """MAE, share within ±1 and Spearman over the ids of `human` (each must be in `judge`)."""
    from scipy.stats import spearmanr

    ids = sorted(human)
    h = [human[i] for i in ids]
    j = [judge[i] for i in ids]
    diffs = [abs(a - b) for a, b in zip(h, j, strict=True)]
    rho = math.nan
    if len(ids) >= 2 and len(set(h)) > 1 and len(set(j)) > 1:
        rho = float(spearmanr(h, j).statistic)
    return Calibration(
        n=len(ids),
        mae=math.fsum(diffs) / len(ids),
        within_1=sum(d <= 1 for d in diffs) / len(ids),
        spearman=rho,
    )
