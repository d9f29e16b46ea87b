"""Speed and memory of the `rag` and `earag` scorers against the raw embedding ceiling.

    python bench/bench_rag.py [--cases 1000] [--rounds 5] [--threads 10] [--per-thread 5]

1. Throughput on `--cases` generated cases (half English, half Chinese; question, answer of
   2–3 statements, 3 retrieved chunks, ground truth): each scorer scores the batch with a
   fresh embedder (no memo, no disk cache), timed end to end; the raw ceiling is one
   `model.encode` call on exactly the distinct texts that scorer embedded. Each of
   `--rounds` rounds times both, in alternating order (the CPU is shared); the median and
   range of wall and CPU time (all threads) are printed, the time the scorer spends
   outside the encoder, and the ratio of the medians. Target: the scorer takes at most
   1.25× the raw encode time.
2. Single-answer latency through the Python API: `--threads` threads, each scoring
   `--per-thread` answers one at a time with `earag` (which runs rag's faithfulness too),
   sharing one scorer; p50/p95/max. Target (seed 003): p95 < 5 s.
3. Peak RSS beyond the loaded model: the process's peak RSS minus its RSS right after the
   model was loaded. Target (seed 003): < 500 MB.

The machine's load average is printed first: the CPU is shared, so figures vary with it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtrack.clients import embeddings  # noqa: E402
from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference  # noqa: E402
from ragtrack.scorers import Batch, build_scorer  # noqa: E402

EN_SUBJECTS = [
    "The refund",
    "The premium plan",
    "An FHA loan",
    "The Lisbon office",
    "Amoxicillin",
    "The API gateway",
    "Article 12 of the charter",
    "The Berlin warehouse",
    "The annual audit",
    "The Python client",
]
EN_VERBS = ["takes", "costs", "requires", "allows", "lasts", "needs", "covers", "limits"]
EN_OBJECTS = [
    "{n} days",
    "{n} dollars",
    "{n}% of the price",
    "{n} business days",
    "{n} mg twice a day",
    "{n} requests per minute",
    "a review by the {org}",
    "{n} hours of notice",
    "approval from the {org}",
    "{n} kilometres of cable",
]
ORGS = [
    "State Department",
    "Federal Housing Administration",
    "European Commission",
    "city council",
    "audit board",
]
ZH_SUBJECTS = [
    "退款",
    "高级套餐",
    "公积金贷款",
    "上海分公司",
    "布洛芬缓释胶囊",
    "接口网关",
    "《劳动合同法》第十九条",
    "北京仓库",
    "年度审计",
    "小型微利企业",
]
ZH_OBJECTS = [
    "需要{n}个工作日",
    "费用为{n}元",
    "按{n}%收取",
    "最长{n}天",
    "每日{n}次",
    "每分钟{n}次请求",
    "须经{org}审核",
    "提前{n}小时通知",
    "最高{n}万元",
]
ZH_ORGS = ["财政部", "国家税务总局", "住房公积金管理中心", "市场监督管理局"]


def _en(rng: random.Random) -> str:
    obj = rng.choice(EN_OBJECTS).format(n=rng.randint(2, 999), org=rng.choice(ORGS))
    return f"{rng.choice(EN_SUBJECTS)} {rng.choice(EN_VERBS)} {obj}"


def _zh(rng: random.Random) -> str:
    return rng.choice(ZH_SUBJECTS) + rng.choice(ZH_OBJECTS).format(
        n=rng.randint(2, 999), org=rng.choice(ZH_ORGS)
    )


def make_batch(n: int, seed: int = 0) -> Batch:
    """`n` generated rag cases with predictions, deterministic in `seed`."""
    rng = random.Random(seed)
    cases, preds = [], []
    for i in range(n):
        zh = i % 2 == 1
        sent = (lambda: _zh(rng)) if zh else (lambda: _en(rng))
        end, join = ("。", "") if zh else (".", " ")
        facts = [sent() for _ in range(3)]
        chunks = [join.join(s + end for s in (facts[k], sent(), sent())) for k in range(3)]
        question = (
            (facts[0][:8] + "是多少？") if zh else f"What does {facts[0].split(' ')[1]} require for case {i}?"
        )
        answer = join.join(s + end for s in facts[: 2 + i % 2])
        gt = join.join(s + end for s in (facts[0], facts[1]))
        cid = f"c{i}"
        cases.append(
            EvalCase(
                id=cid,
                question=question,
                reference=RagReference(ground_truth_answer=gt, ground_truth_contexts=chunks[:2]),
            )
        )
        preds.append(Prediction(case_id=cid, answer=answer, contexts=[ContextChunk(text=c) for c in chunks]))
    return Batch(cases=cases, predictions=preds)


class Recorder:
    """An encoder that records every text it is asked for and delegates to a real Embedder."""

    def __init__(self, inner: embeddings.Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.seconds = 0.0  # spent inside the real encoder

    @property
    def identity(self) -> embeddings.ModelIdentity:
        return self.inner.identity

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        t0 = time.perf_counter()
        try:
            return self.inner.encode(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def raw_encode(texts: Sequence[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `model.encode` call on `texts`."""
    model = embeddings._load(embeddings.shared().folder)
    t0, c0 = time.perf_counter(), time.process_time()
    model.encode(
        list(texts), batch_size=64, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    return time.perf_counter() - t0, time.process_time() - c0


def _scored(batch: Batch, name: str) -> tuple[float, float, Recorder]:
    """Wall and CPU seconds of scoring `batch` with a fresh embedder, and what it embedded."""
    rec = Recorder(embeddings.Embedder())  # fresh: no memo, no disk cache
    scorer = build_scorer(name).use_encoder(rec)
    t0, c0 = time.perf_counter(), time.process_time()
    scorer.score(batch)
    return time.perf_counter() - t0, time.process_time() - c0, rec


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} [{min(values):.2f}–{max(values):.2f}]"


def throughput(batch: Batch, name: str, rounds: int) -> None:
    """Scorer and raw encode in `rounds` rounds, their order alternating (the CPU is shared): median [range]
    of each, wall and CPU (all threads), and the ratio of the medians."""
    scored: list[tuple[float, float, float]] = []
    raw: list[tuple[float, float]] = []
    _, _, rec = _scored(batch, name)  # a warm-up round, not counted: it names the texts the raw encode gets
    distinct = sorted(set(rec.texts))
    for i in range(rounds):
        for step in ("scorer", "raw") if i % 2 == 0 else ("raw", "scorer"):
            if step == "scorer":
                wall, cpu, rec = _scored(batch, name)
                scored.append((wall, cpu, wall - rec.seconds))
            else:
                raw.append(raw_encode(distinct))
    med = {
        k: statistics.median(v)
        for k, v in (
            ("sw", [s[0] for s in scored]),
            ("sc", [s[1] for s in scored]),
            ("rw", [r[0] for r in raw]),
            ("rc", [r[1] for r in raw]),
        )
    }
    print(
        f"{name:<6} {len(batch.cases):>6} cases, {len(distinct):>6} distinct texts, median [range] of "
        f"{rounds} alternated rounds:"
    )
    print(
        f"  scorer      wall {_spread([s[0] for s in scored])} s, CPU {_spread([s[1] for s in scored])} s "
        f"(outside the encoder: wall {statistics.median(s[2] for s in scored):.2f} s); "
        f"{len(batch.cases) / med['sw']:.1f} cases/s"
    )
    print(f"  raw encode  wall {_spread([r[0] for r in raw])} s, CPU {_spread([r[1] for r in raw])} s")
    print(
        f"  ratio of medians: wall {med['sw'] / med['rw']:.2f}, CPU {med['sc'] / med['rc']:.2f}  (target ≤ "
        "1.25)"
    )


def latency(threads: int, per_thread: int) -> None:
    scorer = build_scorer("earag", {"embedding_cache": False})
    batches = [make_batch(1, seed=1000 + k) for k in range(threads * per_thread)]
    times: list[float] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        for j in range(per_thread):
            b = batches[k * per_thread + j]
            t0 = time.perf_counter()
            scorer.score(b)
            with lock:
                times.append(time.perf_counter() - t0)

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    times.sort()
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
    print(
        f"earag single-answer latency, {threads} threads x {per_thread}: p50 {statistics.median(times):.3f} "
        f"s  p95 {p95:.3f} s  max {times[-1]:.3f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=10)
    ap.add_argument("--per-thread", type=int, default=5)
    ap.add_argument(
        "--rounds", type=int, default=5, help="scorer/raw rounds, order alternating; median and range"
    )
    args = ap.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    emb = embeddings.shared()
    _ = emb.identity  # hash the weights once, outside the timings
    embeddings._load(emb.folder)
    raw_encode(["warm up"])
    from ragtrack.nlp.entities import extract

    extract("预热中文分词")  # jieba's dictionary, once
    rss_model = psutil.Process().memory_info().rss
    batch = make_batch(args.cases)
    for name in ("rag", "earag"):
        throughput(batch, name, args.rounds)
    latency(args.threads, args.per_thread)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"RSS after loading the model and jieba {rss_model / 2**20:.0f} MB; peak {peak / 2**20:.0f} MB; "
        f"peak beyond the model {(peak - rss_model) / 2**20:.0f} MB"
    )


if __name__ == "__main__":
    main()
