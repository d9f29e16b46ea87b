"""Deterministic synthetic eval sets for the benchmarks: bilingual, with realistic model flaws."""

from __future__ import annotations

import json
import random
from pathlib import Path

ZH = "退款审核通过后七个工作日内原路退回付款账户节假日顺延发票开具数据保留期限安全策略服务等级协议赔偿额度"
EN = (
    "refund invoice retention account security uptime credit policy customer billing period request approval"
).split()


def _zh(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ZH) for _ in range(n))


def _en(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(EN) for _ in range(n))


def _text(rng: random.Random, n: int) -> str:
    return _zh(rng, n) if rng.random() < 0.5 else _en(rng, max(2, n // 4))


def make(n: int, seed: int = 0) -> tuple[list[dict], list[dict], list[dict]]:
    """`(question_v2 items, qaset items, predictions)` for n cases."""
    rng = random.Random(seed)
    questions, qaset, preds = [], [], []
    for i in range(n):
        qid = f"c{i:05d}"
        chunk = _text(rng, 90)
        path = f"docs/policy_{i % 37}.md"
        ex = {
            "target_audience": _text(rng, 4),
            "main_topic": _text(rng, 6),
            "sub_topic": _text(rng, 8),
            "detailed_description": [_text(rng, 20) for _ in range(rng.randint(2, 5))],
            "original_evidence": chunk[:70],
            "predicted_questions": [_text(rng, 14) for _ in range(rng.randint(2, 4))],
        }
        question = f"Q{i}: {_text(rng, 12)}"
        questions.append(
            {"id": qid, "question": question, "expected": {"answer_example": ex, "source_map": []}}
        )
        answerable = rng.random() < 0.85
        qaset.append(
            {
                "qid": qid,
                "q": question,
                "answerable": answerable,
                "gold_ids": [f"{path}#1"] if answerable else [],
                "gold_claim": _en(rng, 6),
            }
        )
        got = dict(ex)
        roll = rng.random()
        if roll < 0.3:  # paraphrase and pad
            got["detailed_description"] = [d[::-1] for d in ex["detailed_description"]] + [
                _text(rng, 20) for _ in range(8)
            ]
        got["source_map"] = [
            {"refs": [{"file": path, "anchors": [chunk[5:25]]}, {"file": "other.md", "anchors": ["x"]}]}
        ]
        answer = json.dumps(got, ensure_ascii=False)
        if roll > 0.9:
            answer = "Sure, here it is: " + answer
        elif roll > 0.7:
            answer = "```json\n" + answer + "\n```"
        if not answerable and rng.random() < 0.7:
            answer = "not in context"
        preds.append(
            {
                "id": qid,
                "answer": answer,
                "contexts": [{"id": f"{path}#1", "source_path": path, "text": chunk}],
                "citations": [f"{path}#{rng.randint(1, 2)}"],
            }
        )
    return questions, qaset, preds


def _paths(directory: Path) -> dict[str, Path]:
    return {
        "questions": directory / "questions.json",
        "qaset": directory / "qaset.json",
        "predictions": directory / "predictions.jsonl",
        "prompt": directory / "prompt.md",
        "index": directory / "chunks.jsonl",
    }


def write(directory: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """Write the synthetic set, predictions, a prompt and an index file; return their paths."""
    questions, qaset, preds = make(n, seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = _paths(directory)
    paths["questions"].write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    paths["qaset"].write_text(json.dumps(qaset, ensure_ascii=False), encoding="utf-8")
    paths["predictions"].write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds), encoding="utf-8"
    )
    paths["prompt"].write_text("Answer as JSON.\n{{question}}\n{{context}}\n", encoding="utf-8")
    paths["index"].write_text(
        "".join(json.dumps(p["contexts"][0], ensure_ascii=False) + "\n" for p in preds), encoding="utf-8"
    )
    return paths


def write_in_child(directory: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """`write`, done by another process, so this one stays small: a child's peak RSS as `os.wait4` reports
    it is at least the parent's RSS when it was spawned (the child starts as a copy of the parent)."""
    import subprocess
    import sys

    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import synth; "
    code += f"synth.write(__import__('pathlib').Path({str(directory)!r}), {n}, {seed})"
    subprocess.run([sys.executable, "-c", code], check=True)
    return _paths(directory)
