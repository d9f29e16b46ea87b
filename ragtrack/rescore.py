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

from ragtrack.archive import ArchivedRun
from ragtrack.config import RunConfig
from ragtrack.errors import InputError

__all__ = ["RESCORED_FROM_TAG", "SCORING_KEYS", "apply_overrides", "rescore_config"]

RESCORED_FROM_TAG = "ragtrack.rescored_from"
SCORING_KEYS = ("scorers", "gates")


def _value(text: str, override: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as e:
        raise InputError("overrides", f"value is not YAML: {str(e).splitlines()[0]}", field=override) from None


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """The logged config with the scoring overrides applied, in order."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    conf = OmegaConf.create(config)
    for o in overrides:
        key, sep, text = o.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError("overrides", "expected KEY=VALUE, e.g. scorers.eval_json_v2.jaccard_threshold=0.8", field=o)
        if key.split(".")[0] not in SCORING_KEYS:
            raise InputError(
                "overrides",
                f"rescore changes only the scoring (scorers.…, gates.…): `{key}` would describe answers that were not "
                "generated that way; use `ragtrack run` for that",
                field=o,
            )
        value = _value(text, o)
        try:
            if key == "scorers":
                names = value if isinstance(value, list) else [n.strip() for n in str(value or "").split(",") if n.strip()]
                if not names:
                    raise InputError("overrides", "name at least one scorer, e.g. scorers=refusal_citation", field=o)
                logged = OmegaConf.to_container(conf.scorers) if "scorers" in conf else {}
                conf.scorers = {str(n): logged.get(str(n)) for n in names}  # type: ignore[union-attr]
            else:
                OmegaConf.update(conf, key, {} if key == "gates" and value is None else value, merge=False)
        except OmegaConfBaseException as e:
            raise InputError("overrides", str(e).splitlines()[0], field=o) from None
    out = OmegaConf.to_container(conf)
    assert isinstance(out, dict)
    return out  # type: ignore[return-value]


def rescore_config(config: dict[str, Any], archive: ArchivedRun, *, uri: str, experiment: str, run_name: str) -> RunConfig:
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
        index={"name": (config.get("index") or {}).get("name", "index"), "version": m.index_version, "path": None},
        stages={**(config.get("stages") or {}), "enabled": False},
        tracking={"enabled": True, "uri": uri, "experiment": experiment, "run_name": run_name},
    )
    try:
        return RunConfig.from_container(data)
    except InputError as e:
        raise InputError("rescore", e.problem, field=e.field) from None
