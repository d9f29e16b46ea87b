"""The `llm` backends of `rag`/`earag` against a loopback judge of fixed delay: requests per case, wall time.

    python bench/bench_llm_judge.py [--cases 40] [--delay 0.05] [--levels 1,4,16]

The scripted server (`tests/llm_server.py --judge`) runs in its own process and answers
every judge prompt (well-formed statements, verdicts, relevance, entities, scores) after
`--delay` seconds. A batch asks its questions in rounds (rag: statements and relevance,
then support verdicts; earag: one round), each round at most `concurrency` requests in
flight, so the delay allows at best `Σ_rounds ceil(n_round / c) · delay` seconds; the
table gives that bound against the measured time. Embeddings come from a fake encoder
(tests/fake_encoder.py), so only the LLM path is timed. Each level uses fresh texts (no
cache hit); a second pass of the last batch shows the cached re-run (zero requests).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrack.core.types import ContextChunk, EvalCase, Prediction, RagReference  # noqa: E402
from ragtrack.scorers import Batch, build_scorer  # noqa: E402
from tests.fake_encoder import FakeEncoder  # noqa: E402
from tests.llm_server import server_process  # noqa: E402

K = 3  # retrieved chunks per case


def batch(n: int, tag: str) -> Batch:
    cases, preds = [], []
    for i in range(n):
        cid = f"{tag}-{i}"
        cases.append(
            EvalCase(
                id=cid,
                question=f"What does plan {cid} cost?",
                reference=RagReference(
                    ground_truth_answer=f"Plan {cid} costs {i} dollars. Refunds for {cid} take 5 days."
                ),
            )
        )
        preds.append(
            Prediction(
                case_id=cid,
                answer=f"Plan {cid} costs {i} dollars. It includes pets.",
                contexts=[ContextChunk(text=f"Chunk {j} about plan {cid}: {i} dollars.") for j in range(K)],
            )
        )
    return Batch(cases=cases, predictions=preds)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--delay", type=float, default=0.05, help="server-side delay per reply, seconds")
    p.add_argument("--levels", default="1,4,16", help="concurrency levels")
    args = p.parse_args()
    rounds = {"rag": [2 + K + 1, 4], "earag": [3]}  # questions per case in each round (see the module doc)
    with server_process("--judge", "--delay", str(args.delay)) as url:
        print(f"server {url}, delay {args.delay * 1000:.0f} ms per reply, {args.cases} cases of {K} chunks")
        print(
            f"{'scorer':>6} {'conc.':>5} {'requests':>8} {'req/case':>8} {'seconds':>8} {'bound s':>8} "
            f"{'ratio':>6}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("rag", "earag"):
                for level in (int(x) for x in args.levels.split(",")):
                    llm = {"base_url": url, "model": "bench", "concurrency": level, "cache_dir": tmp}
                    scorer = build_scorer(name, {"backend": "llm", "llm": llm}).use_encoder(FakeEncoder())
                    b = batch(args.cases, f"{name}{level}")
                    t0 = time.perf_counter()
                    out = scorer.score(b)
                    elapsed = time.perf_counter() - t0
                    n = out.metrics[f"{name}/llm/requests"]
                    bound = sum(math.ceil(q * args.cases / level) for q in rounds[name]) * args.delay
                    print(
                        f"{name:>6} {level:>5} {n:>8.0f} {n / args.cases:>8.1f} {elapsed:>8.2f} "
                        f"{bound:>8.2f} {bound / elapsed:>6.1%}"
                    )
                t0 = time.perf_counter()
                again = scorer.score(b)
                print(
                    f"{name:>6} re-run: {again.metrics[f'{name}/llm/requests']:.0f} requests, "
                    f"{again.metrics[f'{name}/llm/cache_hits']:.0f} cache hits, "
                    f"{time.perf_counter() - t0:.2f} s"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
