"""Score a run's archived answers again, with its logged config or a changed scoring, into a new run.

No answer is generated: the new run replays the archived predictions against the archived
eval-set files and prompt, under the source run's model and adapter stamps, so that
`ragtrack compare SOURCE NEW` shows exactly what a scorer change did (and nothing else
changed). Overrides are Hydra-style `KEY=VALUE` on the logged `config.yaml`, applied with
OmegaConf, and may touch only the scoring:

- `scorers.NAME.PARAM=VALUE`: set a scorer parameter (VALUE is YAML: `0.8`, `true`, `[a, b]`);
  a scorer the run did not use is added with it;
- `scorers=NAME[,NAME...]`: keep only these scorers (with their logged parameters; a new one
  starts from its defaults);
- `gates.NAME=[COND, ...]`, `gates={}`: change the gates.

Anything else (prompt, model, eval set...) would describe answers that were not generated
that way, and is an error.
"""

from __future__ import annotations

from typing import Any

from ragtrack.core.errors import InputError
from ragtrack.inputs.archive import ArchivedRun
from ragtrack.inputs.config import RunConfig
from ragtrack.run.trust import SCORING_KEYS, apply_overrides

__all__ = ["RESCORED_FROM_TAG", "SCORING_KEYS", "apply_overrides", "rescore_config"]

RESCORED_FROM_TAG = "ragtrack.rescored_from"


def rescore_config(
    config: dict[str, Any], archive: ArchivedRun, *, uri: str, experiment: str, run_name: str
) -> RunConfig:
    """A run configuration that scores the archive's answers as `config` says.

    Inputs come from the archive (eval files, prompt, predictions replayed); the index is
    the version the source run logged; stages are off (the archive is the stage's own set).
    """
    m = archive.manifest
    data = dict(config)
    data.update(
        eval_set={"name": m.eval_set_name, "files": [str(p) for p in archive.eval_paths]},
        prompt={"version": m.prompt_version, "path": str(archive.prompt_path)},
        generator={"name": "replay", "params": {"path": str(archive.predictions_path)}},
        index={
            "name": (config.get("index") or {}).get("name", "index"),
            "version": m.index_version,
            "path": None,
        },
        stages={**(config.get("stages") or {}), "enabled": False},
        tracking={"enabled": True, "uri": uri, "experiment": experiment, "run_name": run_name},
    )
    try:
        return RunConfig.from_container(data)
    except InputError as e:
        raise InputError("rescore", e.problem, field=e.field) from None
