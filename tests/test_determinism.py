"""The same inputs give bit-identical output, across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo"


def _score(hash_seed: str) -> bytes:
    args = [
        sys.executable,
        "-m",
        "ragtrack.app.cli",
        "score",
        "--eval-set",
        str(DEMO / "questions.json"),
        "--eval-set",
        str(DEMO / "qaset.json"),
        "--predictions",
        str(DEMO / "predictions" / "lora_a__v1.jsonl"),
        "--scorer",
        "eval_json_v2",
        "--scorer",
        "refusal_citation",
        "--json",
    ]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run(args, env=env, capture_output=True, check=True, timeout=120).stdout


def test_score_output_is_identical_across_hash_seeds():
    assert _score("1") == _score("2")
