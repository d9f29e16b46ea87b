"""Generation throughput of ragtrack's LLM client against a loopback server with a fixed delay.

    python bench/bench_llm.py [--delay 0.05] [--seconds 3] [--levels 1,4,16]

The scripted server (`tests/llm_server.py`) runs in its own process (a server thread in
this process would compete with the client for the GIL) and answers every request after
`--delay` seconds. At concurrency c the delay allows at most c / delay requests per
second; the client, with its generation cache writing every answer, should reach ≥ 90%
of that. Each level sends fresh prompts (no cache hits) for about `--seconds` seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragtrack.clients.gencache import GenCache  # noqa: E402
from ragtrack.clients.llm import LLMClient, LLMSettings, Message  # noqa: E402
from tests.llm_server import server_process  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay", type=float, default=0.05, help="server-side delay per reply, seconds")
    p.add_argument("--seconds", type=float, default=3.0, help="ideal duration of each level")
    p.add_argument("--levels", default="1,4,16", help="concurrency levels")
    args = p.parse_args()
    with server_process("--delay", str(args.delay)) as url:
        print(f"server {url}, delay {args.delay * 1000:.0f} ms per reply")
        print(f"{'concurrency':>11} {'requests':>8} {'seconds':>8} {'req/s':>8} {'ideal':>8} {'ratio':>6}")
        worst = 1.0
        with tempfile.TemporaryDirectory() as tmp:
            for run, level in enumerate(int(x) for x in args.levels.split(",")):
                n = max(level, round(level / args.delay * args.seconds))
                client = LLMClient(LLMSettings(base_url=url, model="bench", concurrency=level))
                prompts = [
                    [Message(role="user", content=f"level {level} run {run} question {i}")] for i in range(n)
                ]
                cache = GenCache(tmp)
                t0 = time.perf_counter()
                results, stats = client.complete_all(prompts, cache=cache, desc=f"c={level}")
                elapsed = time.perf_counter() - t0
                cache.close()
                assert stats.cache_misses == n and len(results) == n
                rate, ideal = n / elapsed, level / args.delay
                worst = min(worst, rate / ideal)
                print(f"{level:>11} {n:>8} {elapsed:>8.2f} {rate:>8.1f} {ideal:>8.1f} {rate / ideal:>6.1%}")
        print(f"lowest ratio {worst:.1%} (target >= 90%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
