"""The demo's rag cases: a valid `rag` eval set whose ground truth is taken from the demo corpus."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ragtrack.inputs.eval_sets import load_eval_set

ROOT = Path(__file__).resolve().parents[1]
FILES = yaml.safe_load((ROOT / "conf" / "eval_set" / "rag_demo.yaml").read_text(encoding="utf-8"))["files"]
CORPUS = [
    p.read_text(encoding="utf-8") for p in sorted((ROOT / "experiments" / "demo" / "corpus").rglob("*.md"))
]
CASES = load_eval_set([ROOT / f for f in FILES])[0].cases


def test_every_case_is_a_rag_case():
    assert len(CASES) == 22 and all(c.reference is not None for c in CASES)


def test_every_ground_truth_context_is_verbatim_in_the_corpus():
    contexts = [ctx for c in CASES for ctx in c.reference.ground_truth_contexts or []]
    assert contexts and [ctx for ctx in contexts if not any(ctx in text for text in CORPUS)] == []


def test_some_cases_have_no_ground_truth():
    assert sum(c.reference.ground_truth_answer is None for c in CASES) == 3
    assert sum(c.reference.ground_truth_contexts is None for c in CASES) == 4


def test_chinese_policy_cases_name_articles_titles_and_amounts():
    entities = [e for c in CASES for e in c.reference.graph_entities or []]
    assert all(
        any(re.fullmatch(p, e) for e in entities)
        for p in [r"第.+条", r"《.+》", r".*万元", r"流明云合规委员会"]
    )
