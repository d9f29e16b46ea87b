"""Index build time and retrieval recall@k on the demo corpus: dense vs BM25 vs hybrid.

    python bench/bench_index.py                       # conf/index/small_chunks and large_chunks
    python bench/bench_index.py --index small_chunks --k 1 3 5

Gold passages: the `gold_ids` of the demo qaset's answerable questions (paragraph ids
`<source_path>#<n>`, 44 questions, half Chinese) and the `ground_truth_contexts` of the
demo's rag cases (found verbatim in the corpus). A gold passage counts as found at k when
one of the top-k chunks holds at least half of it, or it holds at least half of that chunk
(a small chunk inside a long paragraph). recall@k is the mean share of found gold passages
per question. Builds go to a fresh temporary cache (`RAGTRACK_CACHE_DIR`), so the first
build of each index is cold (the folder is removed at exit); the model is loaded before timing.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["RAGTRACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="ragtrack-bench-index-")
atexit.register(shutil.rmtree, os.environ["RAGTRACK_CACHE_DIR"], ignore_errors=True)

from omegaconf import OmegaConf  # noqa: E402

from ragtrack.clients.embeddings import Embedder  # noqa: E402
from ragtrack.index.build import CorpusFile, index_spec, open_index  # noqa: E402
from ragtrack.index.retriever import Retriever  # noqa: E402
from ragtrack.inputs.config import IndexConfig  # noqa: E402
from ragtrack.nlp.text import cjk_runs  # noqa: E402

DEMO = ROOT / "experiments" / "demo"
MODES = ("dense", "bm25", "hybrid")


def load_index_config(name: str) -> IndexConfig:
    raw = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "index" / f"{name}.yaml"), resolve=True)
    raw["corpus"]["dir"] = str(ROOT / raw["corpus"]["dir"])
    return IndexConfig.model_validate(raw)


def gold_questions(files: list[CorpusFile]) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """(question, [(source_path, start, end) of each gold passage]) for the qaset and the rag cases."""
    by_path = {f.path: f for f in files}
    out = []
    for item in json.loads((DEMO / "qaset.json").read_text(encoding="utf-8")):
        if item["answerable"]:
            spans = []
            for gid in item["gold_ids"]:
                path, _, n = gid.rpartition("#")
                s, e = by_path[path].paragraphs[int(n) - 1]
                spans.append((path, s, e))
            out.append((item["q"], spans))
    for line in (DEMO / "rag_cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        spans = []
        for ctx in case.get("ground_truth_contexts") or []:
            f = next(f for f in files if ctx in f.text)
            s = f.text.index(ctx)
            spans.append((f.path, s, s + len(ctx)))
        if spans:
            out.append((case["question"], spans))
    return out


def found(hit_chunks, gold: tuple[str, int, int]) -> bool:
    path, s, e = gold
    for c in hit_chunks:
        if c.source_path == path:
            overlap = min(e, c.end) - max(s, c.start)
            if overlap > 0 and overlap >= 0.5 * min(e - s, c.end - c.start):
                return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", action="append", help="conf/index/<name>.yaml (repeatable)")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5])
    args = ap.parse_args()
    names = args.index or ["small_chunks", "large_chunks"]
    t0 = time.perf_counter()
    Embedder().encode(["warm-up"])
    print(f"model load: {time.perf_counter() - t0:.2f} s (not in the build times)")
    head = f"{'index':<14} {'chunks':>6} {'cold build s':>12} {'reuse s':>8} {'questions':>12}  "
    print(head + " ".join(f"{m + '@' + str(k):>9}" for m in MODES for k in args.k))
    for name in names:
        cfg = load_index_config(name)
        t0 = time.perf_counter()
        spec = index_spec(cfg)
        index = open_index(spec)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        open_index(index_spec(cfg))
        reuse = time.perf_counter() - t0
        questions = gold_questions(spec.files)
        retriever = Retriever(index)
        hits = {mode: retriever.search([q for q, _ in questions], max(args.k), mode) for mode in MODES}
        for lang in ("all", "en", "zh"):
            rows = [
                i
                for i, (q, _) in enumerate(questions)
                if lang == "all" or (lang == "zh") == bool(cjk_runs(q))
            ]
            cells = []
            for mode in MODES:
                for k in args.k:
                    per_q = [
                        sum(found([h.chunk for h in hits[mode][i][:k]], g) for g in questions[i][1])
                        / len(questions[i][1])
                        for i in rows
                    ]
                    cells.append(f"{sum(per_q) / len(per_q):>9.3f}")
            lead = (
                f"{name:<14} {len(spec.chunks):>6} {cold:>12.2f} {reuse:>8.2f}"
                if lang == "all"
                else f"{'':<14} {'':>6} {'':>12} {'':>8}"
            )
            print(f"{lead} {lang + ' (' + str(len(rows)) + ')':>12}  " + " ".join(cells))


if __name__ == "__main__":
    main()
