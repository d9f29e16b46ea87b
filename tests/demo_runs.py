"""The shipped demo (`experiments/demo`) as run configurations with absolute paths, and runs of it logged to a test store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtrack.config import RunConfig

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo"


def demo_config(store: Path, adapter: str = "lora_b", prompt: str = "v2", *, predictions: Path | None = None, **sections: Any) -> RunConfig:
    """The demo's `adapter` × `prompt` job (or `predictions` replayed instead), tracked into `<store>/mlflow.db`."""
    data: dict[str, Any] = {
        "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
        "adapter": {"name": adapter, "id": f"lumen/{adapter}@v1"},
        "index": {"name": "demo", "path": str(DEMO / "corpus" / "chunks.jsonl")},
        "prompt": {"version": prompt, "path": str(DEMO / "prompts" / f"{prompt}.md")},
        "eval_set": {"name": "demo", "files": [str(DEMO / "questions.json"), str(DEMO / "qaset.json")]},
        "generator": {"name": "replay", "params": {"path": str(predictions or DEMO / "predictions" / f"{adapter}__{prompt}.jsonl")}},
        "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
        "gates": {"dev100": ["eval_json_v2/eval_score_avg >= 95", "eval_json_v2/schema_pass_rate >= 0.98"],
                  "G3_over_refusal": ["refusal_citation/over_refusal <= 0.25"]},
        "tracking": {"uri": f"sqlite:///{store / 'mlflow.db'}", "experiment": "demo"},
    }
    data.update(sections)
    return RunConfig.from_container(data)


def log_demo_run(cfg: RunConfig) -> str:
    """Score and log `cfg` as ragtrack does; the new run's id."""
    from ragtrack.hydra_app import execute

    execute(cfg)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    return client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)[0].info.run_id
