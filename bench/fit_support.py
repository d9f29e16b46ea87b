"""Fit the offline backend's support model (`ragtrack/scorers/support/offline.json`) on the tuning pairs.

    python bench/fit_support.py            # fit, write the file, print what it does on the tuning pairs
    python bench/fit_support.py --check    # fit and compare with the shipped file: exit 1 when they differ

Training statements, from every faithfulness pair of the `tune` split (bench/rag_pairs/) that marks its
altered statement: that statement of the worse side is unsupported (1), every statement of the better side
supported (0); a statement its sources contain word for word is left out (the judge supports it without
the model). Each is measured by the offline judge (`OfflineJudge.measure`) against the pair's two chunks.
A logistic regression (L2, C = 1, scipy's L-BFGS-B) weighs the measures, each weight bounded to its sign:
a measure of closeness (a cosine, a share of words found) can only make support likelier, a failed check
(a contradiction, a missing fact, added words, a reversed negation) only less likely, whatever the tuning
pairs happen to correlate; the language is free. The threshold is the one on a
0.05 grid whose shares of altered statements flagged and of better answers left clean (the benchmark's
flags) have the largest minimum on these pairs. Weights are written rounded to 6 decimals. `--check`
accepts a refit whose weights differ from the shipped ones by at most `TOLERANCE`: embeddings computed in
another batch or read from the cache differ in their last bits. Held-out pairs are never read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rag_quality import FLAG_MATCH, load_topics  # noqa: E402

from ragtrack.nlp.text import norm  # noqa: E402
from ragtrack.scorers import build_scorer  # noqa: E402
from ragtrack.scorers.judge import OfflineJudge  # noqa: E402
from ragtrack.scorers.support_model import FEATURES, PATH, SupportFeatures, SupportModel  # noqa: E402

C = 1.0  # inverse L2 strength, as scikit-learn's LogisticRegression
# the scorers' version whose measures (SupportFeatures) the model is fitted on: bumped with a change of what
# the judge measures of a statement, not with one elsewhere (rag 15 changed chunk relevance only)
MEASURES_VERSION = "14"
TOLERANCE = 1e-4  # how far a refit's weights may lie from the shipped ones (`--check`)
# the sign each weight is bounded to (+1: raises P(unsupported), -1: lowers it, 0: free)
SIGNS = {
    "cosine": -1,
    "lexical": -1,
    "sources_lexical": -1,
    "fuzz": -1,
    "quantity_conflict": 1,
    "conflict": 1,
    "missing_fact": 1,
    "added_words": 1,
    "grounding": -1,
    "reversed_polarity": 1,
    "word_coverage": -1,
    "chinese": 0,
}
GRID = [round(0.05 * i, 2) for i in range(1, 20)]

Row = tuple[
    str, int, SupportFeatures, bool
]  # topic id, label (1: unsupported), features, ruled out by a check


def statements(split: str = "tune") -> list[Row]:
    """Every training statement of `split`'s faithfulness pairs with an altered statement."""
    scorer = build_scorer("rag", {})
    placeholder = SupportModel(
        version="",
        features=FEATURES,
        weights=(0.0,) * len(FEATURES),
        intercept=0.0,
        threshold=0.5,
        fitted_on="",
    )
    judge = OfflineJudge(scorer.encoder(), relevance_cosine_weight=0.5, model=placeholder)
    topics = [t for _, t in load_topics(split) if t.get("faith_altered") and t.get("faith_worse")]
    sides = [
        (t, side, st)
        for t in topics
        for side, text in (("better", t.get("faith_better", t["good_answer"])), ("worse", t["faith_worse"]))
        for st in judge.statements(text)
    ]
    judge.prepare(
        {st for _, _, st in sides} | {s for t in topics for c in ("c1", "c2") for s in judge.statements(t[c])}
    )
    rows: list[Row] = []
    for t, side, st in sides:
        label = 0 if side == "better" else 1
        if label and fuzz.partial_ratio(norm(st), norm(t["faith_altered"])) < FLAG_MATCH:
            continue  # the worse side's statements that were not altered are the better side's
        (measured,) = judge.measure([st], [t["c1"], t["c2"]]) or [None]
        if measured is not None:
            rows.append((t["id"], label, measured[0], bool(measured[1])))
    return rows


def flags(rows: list[Row], p: np.ndarray, threshold: float) -> tuple[float, float]:
    """The shares of worse sides whose altered statement is flagged and of better sides with none flagged."""
    flagged: dict[str, bool] = {}
    clean: dict[str, bool] = {}
    for (tid, label, _, ruled_out), q in zip(rows, p, strict=True):
        out = ruled_out or q >= threshold
        if label:
            flagged[tid] = flagged.get(tid, False) or out
        else:
            clean[tid] = clean.get(tid, True) and not out
    clean.update((tid, True) for tid in flagged if tid not in clean)
    return sum(flagged.values()) / len(flagged), sum(clean.values()) / len(clean)


def logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weights and (last) intercept minimising C · log-loss + ½‖weights‖², each weight within its `SIGNS`."""
    from scipy.optimize import minimize

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w[:-1] + w[-1]
        p = 1 / (1 + np.exp(-z))
        value = C * float(np.sum(np.logaddexp(0, z) - y * z)) + 0.5 * float(w[:-1] @ w[:-1])
        grad = np.append(C * (x.T @ (p - y)) + w[:-1], C * np.sum(p - y))
        return value, grad

    bounds = [
        (0, None) if s > 0 else (None, 0) if s < 0 else (None, None) for s in (SIGNS[n] for n in FEATURES)
    ]
    found = minimize(
        loss,
        np.zeros(x.shape[1] + 1),
        jac=True,
        method="L-BFGS-B",
        bounds=[*bounds, (None, None)],
        options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-10},
    )
    return np.asarray(found.x)


def fit(rows: list[Row], version: str) -> tuple[SupportModel, dict[str, Any]]:
    x = np.array([[getattr(f, n) for n in FEATURES] for _, _, f, _ in rows])
    y = np.array([label for _, label, _, _ in rows], dtype=float)
    w = logistic(x, y)
    weights = tuple(round(float(v), 6) + 0.0 for v in w[:-1])  # + 0.0: no -0.0 in the file
    intercept = round(float(w[-1]), 6)
    z = intercept + x @ np.array(weights)
    p = 1 / (1 + np.exp(-z))
    shares = {th: flags(rows, p, th) for th in GRID}
    threshold = max(GRID, key=lambda th: (min(shares[th]), -th))
    altered, topics = int(y.sum()), len({tid for tid, *_ in rows})
    model = SupportModel(
        version=version,
        features=FEATURES,
        weights=weights,
        intercept=intercept,
        threshold=threshold,
        fitted_on=f"bench/rag_pairs tune split: {len(rows)} statements ({altered} altered), {topics} topics",
    )
    return model, dict(zip(("flagged", "clean"), shares[threshold], strict=True))


def agrees(shipped: SupportModel, refit: SupportModel) -> bool:
    """The same model up to `TOLERANCE` in each weight and the intercept."""
    numbers = zip((*shipped.weights, shipped.intercept), (*refit.weights, refit.intercept), strict=True)
    return shipped.model_dump(exclude={"weights", "intercept"}) == refit.model_dump(
        exclude={"weights", "intercept"}
    ) and all(abs(a - b) <= TOLERANCE for a, b in numbers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="compare with the shipped file instead of writing it"
    )
    args = ap.parse_args(argv)
    model, figures = fit(statements(), MEASURES_VERSION)
    text = json.dumps(model.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n"
    print(f"{model.fitted_on}; threshold {model.threshold}")
    flagged, clean = figures["flagged"], figures["clean"]
    print(f"on these pairs: altered statements flagged {flagged:.3f}, better answers clean {clean:.3f}")
    for name, w in zip(FEATURES, model.weights, strict=True):
        print(f"  {name:<20} {w:+.3f}")
    print(f"  {'intercept':<20} {model.intercept:+.3f}")
    if args.check:
        same = PATH.is_file() and agrees(
            SupportModel.model_validate_json(PATH.read_text(encoding="utf-8")), model
        )
        print("the shipped model is this fit" if same else f"{PATH} differs from this fit")
        return 0 if same else 1
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
