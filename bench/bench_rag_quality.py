"""Pairwise accuracy of the `rag` and `earag` metrics on the hand-written dev set (bench/rag_pairs/).

    python bench/bench_rag_quality.py [--split tune|holdout|blind|heldout|all] [--show-misses]
        [--param rag.match_ratio=85 ...]
    python bench/bench_rag_quality.py --write-reliability     # ragtrack/scorers/reliability/{rag,earag}.json
    python bench/bench_rag_quality.py --check-reliability     # derive them again: exit 1 when they differ

For each metric, each pair has a better and a worse side that a careful reader tells
apart (bench/rag_pairs/README.md says how the sides are built from each topic). A pair
counts 1 when the metric prefers the better side (higher, or lower for
`earag/hallucination`), ½ on a tie (or when either side is NaN), 0 otherwise. Prints
each metric's accuracy overall and per language, for the chosen split. `--write-reliability`
measures the shipped scorers with their defaults on the held-out split and on all pairs, per
language, with 95% Wilson intervals, and writes the files the scorers quote in their reports
(`ragtrack.scorers.reliability`), each naming what it was derived from and the scores of a sample of
pairs; `--check-reliability` derives them again (about 15 CPU-minutes) and compares. tests/bench checks
the files' inputs and sample instead.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtrack.core.hashing import sha256_bytes  # noqa: E402
from ragtrack.core.registry import code_sha256  # noqa: E402
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference  # noqa: E402
from ragtrack.nlp.text import norm  # noqa: E402
from ragtrack.scorers import Batch, build_scorer, get_scorer_class, support_model  # noqa: E402
from ragtrack.scorers.reliability import DIR as RELIABILITY_DIR  # noqa: E402
from ragtrack.scorers.reliability import Accuracy, Derivation, Reliability, measured_params  # noqa: E402

PAIRS_DIR = Path(__file__).resolve().parent / "rag_pairs"
LOWER_IS_BETTER = {"earag/hallucination"}


class Side(BaseModel):
    model_config = ConfigDict(frozen=True)

    answer: str
    contexts: list[str]


class Pair(BaseModel):
    """One metric's better/worse pair over a topic."""

    model_config = ConfigDict(frozen=True)

    id: str
    metric: str  # `<scorer>/<metric>`
    lang: str
    domain: str
    split: str
    question: str
    ground_truth_answer: str | None = None
    ground_truth_contexts: list[str] | None = None
    better: Side
    worse: Side
    altered: str | None = None  # faithfulness: the worse side's statement that was altered (newer topics)


def pairs_of(topic: dict[str, Any], lang: str) -> list[Pair]:
    """The eight pairs a topic gives (see bench/rag_pairs/README.md)."""
    t = topic
    ctx = [t["c1"], t["c2"]]
    common = {"lang": lang, "domain": t["domain"], "split": t["split"], "question": t["question"]}
    spec: list[tuple[str, dict[str, Any], Side, Side]] = [
        (
            "rag/faithfulness",
            {},
            Side(answer=t.get("faith_better", t["good_answer"]), contexts=ctx),
            Side(answer=t["faith_worse"], contexts=ctx),
        ),
        (
            "rag/context_relevance",
            {},
            Side(answer=t["good_answer"], contexts=ctx),
            Side(answer=t["good_answer"], contexts=[t["c1"], t["d1"]]),
        ),
        (
            "rag/context_recall",
            {"ground_truth_answer": t["gt_answer"]},
            Side(answer=t["good_answer"], contexts=ctx),
            Side(answer=t["good_answer"], contexts=[t["c1"], t["d2"]]),
        ),
        (
            "rag/context_precision",
            {"ground_truth_contexts": ctx},
            Side(answer=t["good_answer"], contexts=[t["c1"], t["c2"], t["d2"]]),
            Side(answer=t["good_answer"], contexts=[t["d2"], t["c1"], t["c2"]]),
        ),
        (
            "rag/answer_relevancy",
            {},
            Side(answer=t["good_answer"], contexts=ctx),
            Side(answer=t["off_answer"], contexts=ctx),
        ),
        (
            "rag/answer_correctness",
            {"ground_truth_answer": t["gt_answer"]},
            Side(answer=t["correct_better"], contexts=ctx),
            Side(answer=t["correct_worse"], contexts=ctx),
        ),
        (
            "earag/entity_coverage",
            {},
            Side(answer=t["good_answer"], contexts=ctx),
            Side(answer=t["cov_worse"], contexts=ctx),
        ),
        (
            "earag/hallucination",
            {},
            Side(answer=t["hall_better"], contexts=ctx),
            Side(answer=t["hall_worse"], contexts=ctx),
        ),
    ]
    altered = {"rag/faithfulness": t.get("faith_altered")}
    return [
        Pair(
            id=f"{t['id']}:{metric}",
            metric=metric,
            better=b,
            worse=w,
            altered=altered.get(metric),
            **common,
            **extra,
        )
        for metric, extra, b, w in spec
    ]


# rapidfuzz partial_ratio at which an unsupported statement is the altered one (a split may cut it)
FLAG_MATCH = 80


def flag_rates(pairs: Sequence[Pair]) -> dict[str, tuple[float, float, int]]:
    """Per language (and `all`): the share of faithfulness pairs whose altered statement the worse side's
    `rag/unsupported` names, the share whose better side has no unsupported statement, and the pair count."""
    chosen = [p for p in pairs if p.metric == "rag/faithfulness" and p.altered]
    cols = side_scores(chosen, None) if chosen else {}
    by: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for p in chosen:
        worse = json.loads(cols[f"{p.id}/worse"]["rag/unsupported"])
        better = json.loads(cols[f"{p.id}/better"]["rag/unsupported"])
        flagged = any(
            fuzz.partial_ratio(norm(v["statement"]), norm(p.altered or "")) >= FLAG_MATCH for v in worse
        )
        for key in ("all", p.lang):
            by[key].append((flagged, not better))
    return {k: (sum(f for f, _ in v) / len(v), sum(c for _, c in v) / len(v), len(v)) for k, v in by.items()}


SPLITS = ("tune", "holdout", "blind", "heldout")


def load_topics(split: str = "all", langs: Iterable[str] = ("en", "zh")) -> list[tuple[str, dict[str, Any]]]:
    """(language, topic) of every topic file (`<lang>.json`, `tune2_<lang>.json`, `heldout_<lang>.json`) in
    `split`."""
    out = []
    for path in sorted(PAIRS_DIR.glob("*.json")):
        lang = path.stem.rpartition("_")[2]
        if lang in langs:
            out += [
                (lang, t)
                for t in json.loads(path.read_text(encoding="utf-8"))
                if split in ("all", t["split"])
            ]
    return out


def load_pairs(split: str = "all", langs: Iterable[str] = ("en", "zh")) -> list[Pair]:
    return [p for lang, topic in load_topics(split, langs) for p in pairs_of(topic, lang)]


def _batch(pairs: Sequence[Pair]) -> Batch:
    cases, preds = [], []
    for p in pairs:
        ref = RagReference(
            ground_truth_answer=p.ground_truth_answer, ground_truth_contexts=p.ground_truth_contexts
        )
        for side_name, side in (("better", p.better), ("worse", p.worse)):
            cid = f"{p.id}/{side_name}"
            cases.append(EvalCase(id=cid, question=p.question, reference=ref))
            preds.append(
                Prediction(
                    case_id=cid, answer=side.answer, contexts=[ContextChunk(text=c) for c in side.contexts]
                )
            )
    return Batch(cases=cases, predictions=preds)


def side_scores(
    pairs: Sequence[Pair], params: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Every per-case column of the scorer of each pair's metric, by case id (`<pair id>/better|worse`); a
    scorer scores only the pairs of its own metrics."""
    params = params or {}
    cols: dict[str, dict[str, Any]] = defaultdict(dict)
    for name in sorted({p.metric.split("/")[0] for p in pairs}):
        batch = _batch([p for p in pairs if p.metric.split("/")[0] == name])
        for cs in build_scorer(name, params.get(name)).score(batch).cases:
            cols[cs.case_id].update(cs.values)
    return cols


def pair_credit(metric: str, better: float, worse: float) -> float:
    """1 when the better side wins, ½ on a tie or a NaN, 0 otherwise."""
    if math.isnan(better) or math.isnan(worse) or better == worse:
        return 0.5
    wins = better < worse if metric in LOWER_IS_BETTER else better > worse
    return 1.0 if wins else 0.0


def pair_scores(
    pairs: Sequence[Pair], params: dict[str, dict[str, Any]] | None = None
) -> dict[str, tuple[float, float]]:
    """Each pair's better and worse side's score of its metric, by pair id."""
    cols = side_scores(pairs, params)
    return {
        p.id: (float(cols[f"{p.id}/better"][p.metric]), float(cols[f"{p.id}/worse"][p.metric])) for p in pairs
    }


def credits(
    pairs: Sequence[Pair], params: dict[str, dict[str, Any]] | None = None
) -> tuple[dict[str, float], list[str]]:
    """Each pair's credit by id; and a line for every pair not won."""
    return _credits(pairs, pair_scores(pairs, params))


def _credits(
    pairs: Sequence[Pair], scores: dict[str, tuple[float, float]]
) -> tuple[dict[str, float], list[str]]:
    out, misses = {}, []
    for p in pairs:
        b, w = scores[p.id]
        out[p.id] = pair_credit(p.metric, b, w)
        if out[p.id] < 1:
            misses.append(f"{p.id} [{p.split}] better={b:.4f} worse={w:.4f}")
    return out, misses


def accuracy(
    pairs: Sequence[Pair], params: dict[str, dict[str, Any]] | None = None
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Per metric: accuracy overall and per language; and a line for every pair not won."""
    got, misses = credits(pairs, params)
    credit: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in pairs:
        credit[p.metric]["all"].append(got[p.id])
        credit[p.metric][p.lang].append(got[p.id])
    return {m: {k: sum(v) / len(v) for k, v in by.items()} for m, by in credit.items()}, misses


HELD_OUT = "heldout"  # the split written before any rule was tuned, and never studied since


WITNESS_EVERY = 8  # the witness pairs: those of every 8th tuning topic, in id order
# how far a witness score may lie from the shipped one: embeddings computed in another batch, or read from the
# cache, differ in their last bits
WITNESS_TOLERANCE = 1e-5


def pairs_sha256() -> str:
    """sha256 over the pair files' names and bytes, in name order."""
    return sha256_bytes(
        b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(PAIRS_DIR.glob("*.json")))
    )


def derivation(scorer: str) -> Derivation:
    """The installed inputs `scorer`'s reliability is derived from, with its default parameters."""
    built = build_scorer(scorer)
    return Derivation(
        code_sha256=code_sha256(type(built)),
        support_model_sha256=support_model.sha256(),
        model_sha256=built.encoder().identity.sha256,
        pairs_sha256=pairs_sha256(),
    )


def witness_pairs(scorer: str) -> list[Pair]:
    """`scorer`'s pairs over every `WITNESS_EVERY`th tuning topic: the sample whose scores a reliability file
    carries, so a machine can check it scores them alike without scoring every pair."""
    tune = [p for p in load_pairs("tune") if p.metric.startswith(f"{scorer}/")]
    chosen = sorted({p.id.split(":")[0] for p in tune})[::WITNESS_EVERY]
    return [p for p in tune if p.id.split(":")[0] in chosen]


def witness_differences(
    shipped: dict[str, tuple[float | None, float | None]],
    scored: dict[str, tuple[float | None, float | None]],
) -> list[str]:
    """The witness pairs whose scores differ by more than `WITNESS_TOLERANCE` (or in being NaN), by id."""
    return [
        pid
        for pid in sorted(shipped.keys() | scored.keys())
        if pid not in shipped
        or pid not in scored
        or any(
            (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > WITNESS_TOLERANCE)
            for a, b in zip(shipped[pid], scored[pid], strict=True)
        )
    ]


def witness_scores(scorer: str) -> dict[str, tuple[float | None, float | None]]:
    """Score `scorer`'s witness pairs as its reliability file carries them."""
    pairs = witness_pairs(scorer)
    return _witness(pairs, pair_scores(pairs))


def _witness(
    pairs: Sequence[Pair], scores: dict[str, tuple[float, float]]
) -> dict[str, tuple[float | None, float | None]]:
    """The scores of `pairs` as a reliability file's witness carries them: NaN as None."""
    return {p.id: (_finite(scores[p.id][0]), _finite(scores[p.id][1])) for p in pairs}


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


def reliabilities() -> dict[str, Reliability]:
    """The shipped scorers' reliability, with their default parameters (the offline backend), on every
    pair."""
    pairs = load_pairs("all")
    scores = pair_scores(pairs)
    got, _ = _credits(pairs, scores)
    by: dict[str, dict[str, dict[str, dict[str, list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    )
    for p in pairs:
        scorer, metric = p.metric.split("/")
        for subset in ("all", HELD_OUT) if p.split == HELD_OUT else ("all",):
            for lang in ("all", p.lang):
                by[scorer][metric][subset][lang].append(got[p.id])
    out = {}
    for scorer, metrics in sorted(by.items()):
        built = build_scorer(scorer)
        defaults = built.p
        out[scorer] = Reliability(
            scorer=scorer,
            version=get_scorer_class(scorer).version,
            backend=defaults.backend,
            model=defaults.model,
            derived_from=derivation(scorer),
            params=measured_params(built.info.params),
            method="pairwise accuracy: the share of pairs of bench/rag_pairs/ where the better side scores "
            "better (lower for hallucination), a tie or a NaN counting 1/2; 95% Wilson interval; `heldout`: "
            "the pairs written before any rule was tuned and never studied since; `all`: every pair (most "
            "were tuned on)",
            metrics={
                m: {
                    s: {lang: Accuracy.of(c) for lang, c in sorted(langs.items())}
                    for s, langs in sorted(sets.items())
                }
                for m, sets in sorted(metrics.items())
            },
            witness=_witness(witness_pairs(scorer), scores),
        )
    return out


def shipped_reliabilities() -> dict[str, Reliability]:
    """The reliability files shipped with the scorers, by scorer."""
    return {
        p.stem: Reliability.model_validate_json(p.read_text(encoding="utf-8"))
        for p in RELIABILITY_DIR.glob("*.json")
    }


def check_reliability() -> list[str]:
    """What differs between the shipped reliability files and deriving them again: one line per scorer."""
    shipped = shipped_reliabilities()
    derived = reliabilities()
    out = [f"{name}: not shipped" for name in sorted(derived.keys() - shipped.keys())]
    out += [f"{name}: not derived" for name in sorted(shipped.keys() - derived.keys())]
    for name in sorted(shipped.keys() & derived.keys()):
        a, b = shipped[name], derived[name]
        if a.model_dump(exclude={"witness"}) != b.model_dump(exclude={"witness"}):
            out.append(f"{name}: differs")
        elif moved := witness_differences(a.witness, b.witness):
            out.append(f"{name}: witness pairs score otherwise: {', '.join(moved)}")
    return out


def write_reliability() -> list[Path]:
    RELIABILITY_DIR.mkdir(exist_ok=True)
    written = []
    for scorer, rel in reliabilities().items():
        path = RELIABILITY_DIR / f"{scorer}.json"
        path.write_text(
            json.dumps(rel.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        written.append(path)
    return written


def _params(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in items:
        key, value = item.split("=", 1)
        scorer, name = key.split(".", 1)
        out[scorer][name] = json.loads(value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="all", choices=[*SPLITS, "all"])
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument(
        "--param", action="append", default=[], help="scorer.param=JSON value, e.g. rag.match_ratio=85"
    )
    ap.add_argument(
        "--write-reliability", action="store_true", help="write ragtrack/scorers/reliability/*.json"
    )
    ap.add_argument(
        "--check-reliability", action="store_true", help="derive the reliability files again and compare"
    )
    args = ap.parse_args()
    if args.check_reliability:
        differ = check_reliability()
        print("\n".join(differ) or "the shipped reliability files are what deriving them again gives")
        raise SystemExit(1 if differ else 0)
    if args.write_reliability:
        for path in write_reliability():
            rel = Reliability.model_validate_json(path.read_text(encoding="utf-8"))
            print(
                f"{path.relative_to(PAIRS_DIR.parents[1])}: {rel.scorer} v{rel.version}, {rel.backend} "
                "backend"
            )
            for metric, sets in rel.metrics.items():
                held = sets.get(HELD_OUT, {})
                print(
                    f"  {metric:<20} held out "
                    + "  ".join(f"{k} {a.show()}" for k, a in held.items())
                    + f" | all {sets['all']['all'].show()}"
                )
        return
    pairs = load_pairs(args.split)
    acc, misses = accuracy(pairs, _params(args.param))
    n = defaultdict(int)
    for p in pairs:
        n[p.metric] += 1
    print(f"split={args.split}  pairs={len(pairs)}")
    print(f"{'metric':<26} {'pairs':>5} {'all':>6} {'en':>6} {'zh':>6}")
    for metric in sorted(acc):
        a = acc[metric]
        print(
            f"{metric:<26} {n[metric]:>5} {a['all']:>6.3f} {a.get('en', math.nan):>6.3f} "
            f"{a.get('zh', math.nan):>6.3f}"
        )
    rates = flag_rates(pairs)
    if rates:
        print(
            "\nfaithfulness, pairs with a marked altered statement: altered statement flagged on the worse "
            "side / better side left clean"
        )
        for key, (flagged, clean, n) in sorted(rates.items()):
            print(f"  {key:<4} {flagged:.3f} / {clean:.3f}  ({n} pairs)")
    if args.show_misses:
        # The held-out topics are measured, never studied: their misses are not shown.
        shown = [line for line in misses if "[heldout]" not in line]
        print(f"\npairs not won ({len(misses) - len(shown)} held-out misses not shown):")
        for line in shown:
            print("  " + line)


if __name__ == "__main__":
    main()
