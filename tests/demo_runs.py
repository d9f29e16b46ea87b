"""The shipped demo (`experiments/demo`) as run configurations with absolute paths, and runs of it logged to a
test store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtrack.inputs.config import RunConfig

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo"


def demo_config(
    store: Path,
    adapter: str = "lora_b",
    prompt: str = "v2",
    *,
    predictions: Path | None = None,
    **sections: Any,
) -> RunConfig:
    """The demo's `adapter` × `prompt` job (or `predictions` replayed instead), tracked into
    `<store>/mlflow.db`."""
    data: dict[str, Any] = {
        "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
        "adapter": {"name": adapter, "id": f"lumen/{adapter}@v1"},
        "index": {"name": "demo", "path": str(DEMO / "corpus" / "chunks.jsonl")},
        "prompt": {"version": prompt, "path": str(DEMO / "prompts" / f"{prompt}.md")},
        "eval_set": {"name": "demo", "files": [str(DEMO / "questions.json"), str(DEMO / "qaset.json")]},
        "generator": {
            "name": "replay",
            "params": {"path": str(predictions or DEMO / "predictions" / f"{adapter}__{prompt}.jsonl")},
        },
        "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
        "gates": {
            "dev100": ["eval_json_v2/eval_score_avg >= 95", "eval_json_v2/schema_pass_rate >= 0.98"],
            "G3_over_refusal": ["refusal_citation/over_refusal <= 0.25"],
        },
        "tracking": {"uri": f"sqlite:///{store / 'mlflow.db'}", "experiment": "demo"},
    }
    data.update(sections)
    return RunConfig.from_container(data)


def log_demo_run(cfg: RunConfig) -> str:
    """Score and log `cfg` as ragtrack does; the new run's id."""
    from ragtrack.app.hydra_app import execute

    execute(cfg)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    assert exp is not None
    return client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)[
        0
    ].info.run_id


def planted_predictions(src: Path, dst: Path, n: int) -> Path:
    """`src` with the answers of its first `n` lines broken (prose before the JSON: schema fails, refusals
    stay)."""
    import json

    lines = src.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i < n:
            obj["answer"] = "Sure! Here is the answer: " + obj["answer"]
        out.append(json.dumps(obj, ensure_ascii=False))
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")
    return dst


def artifact_dir(uri: str, run_id: str) -> Path:
    """Where the store keeps the run's artifacts on disk (to tamper with them)."""
    from urllib.parse import urlparse

    from mlflow.tracking import MlflowClient

    return Path(urlparse(MlflowClient(uri).get_run(run_id).info.artifact_uri).path)


PLANTED = 12  # answers broken in the planted regression


class DemoStore:
    """A store with three runs in experiment `demo`: `a` and `same` replay lora_b/v2's answers, `planted`
    breaks the first 12.

    Tests that change a run (tampering, rescoring) make their own with `new_run`.
    """

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.uri = f"sqlite:///{tmp / 'mlflow.db'}"
        self.planted_path = planted_predictions(
            DEMO / "predictions" / "lora_b__v2.jsonl", tmp / "planted.jsonl", PLANTED
        )
        self.ids = {
            name: self.new_run("demo", predictions=p)
            for name, p in (("a", None), ("same", None), ("planted", self.planted_path))
        }

    def new_run(self, experiment: str = "scratch", **kwargs: Any) -> str:
        """A new run of lora_b/v2 (`demo_config` keywords change it) in `experiment`; its id."""
        kwargs.setdefault("tracking", {"uri": self.uri, "experiment": experiment})
        return log_demo_run(demo_config(self.tmp, **kwargs))
