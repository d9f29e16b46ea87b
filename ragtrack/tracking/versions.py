"""Each configuration as an MLflow version: a LoggedModel per model × adapter × prompt × index × generator.

MLflow 3 lists an experiment's versions on its **Agent versions** page, one row per
LoggedModel with its params and the metrics linked to it. A job finds the LoggedModel of
its combination by the sha256 of its version stamps (`ragtrack.version_key`), or creates
it, named as a person reads it (`Qwen2_5-7B + lora_b · prompt v2 · demo@1a2b3c4d`; MLflow
allows no `.`, `/`, `:`, `%` or quotes in a name) with the stamps as params. The run's
metrics are logged with its `model_id` and the eval set's dataset, which links them to
the version; the run logs no model output, so it stays in MLflow's Evaluation runs view.

Several jobs creating the same version at once each create one, then keep the oldest (by
creation time, then id) and delete their own if it is not that one: every job ends on one
version. A store that cannot hold LoggedModels (an older server) costs one warning line
and nothing else.
"""

from __future__ import annotations

import logging
import re

from mlflow.entities import LoggedModel
from mlflow.tracking import MlflowClient
from pydantic import BaseModel, ConfigDict

from ragtrack.core.hashing import sha256_json
from ragtrack.core.redact import redact, redact_text
from ragtrack.core.types import RunManifest
from ragtrack.inputs.config import RunConfig
from ragtrack.tracking.entities import find_or_create, optional
from ragtrack.tracking.search import equals

__all__ = ["VERSION_KEY_TAG", "Version", "ensure_version", "version_of"]

log = logging.getLogger("ragtrack")

VERSION_KEY_TAG = "ragtrack.version_key"
MAX_NAME = 250
_NOT_IN_NAME = re.compile(r"[/:.%\"']")
_GENERATORS_WITHOUT_MODEL = frozenset(
    {"extractive"}
)  # answers cut from the retrieved chunks: no model wrote them


class Version(BaseModel):
    """One configuration: its key (the sha256 of its stamps), its name, and the stamps as params."""

    model_config = ConfigDict(frozen=True)

    key: str
    name: str
    params: dict[str, str]


def version_of(cfg: RunConfig, m: RunManifest) -> Version:
    """The version a stage's answers come from, by the stamps the run logged."""
    params = {
        "model_id": m.model_id,
        "adapter_id": m.adapter_id,
        "prompt_version": m.prompt_version,
        "prompt_sha256": m.prompt_sha256,
        "index_version": m.index_version,
        "generator": m.generator.name,
    }
    author = (
        m.generator.name
        if m.generator.name in _GENERATORS_WITHOUT_MODEL
        else f"{cfg.model.id.rstrip('/').rpartition('/')[2]} + {cfg.adapter.name}"
    )
    index_short = re.split(r"[@-]", m.index_version)[-1][:8] if m.index_version else ""
    name = f"{author} · prompt {m.prompt_version} · {cfg.index.name}" + (
        f"@{index_short}" if index_short else ""
    )
    shown = {
        k: redact(v, k) for k, v in params.items()
    }  # a secret in a stamp is masked, as in the run's params
    return Version(
        key=sha256_json(params)[:32], name=_NOT_IN_NAME.sub("_", redact_text(name))[:MAX_NAME], params=shown
    )


def _found(client: MlflowClient, experiment_id: str, key: str) -> list[LoggedModel]:
    models: list[LoggedModel] = []
    token = None
    while True:
        page = client.search_logged_models(
            [experiment_id], filter_string=equals(f"tags.`{VERSION_KEY_TAG}`", key)[0], page_token=token
        )
        models += page
        token = page.token
        if not token:
            return sorted(models, key=lambda lm: (lm.creation_timestamp, lm.model_id))


def ensure_version(
    client: MlflowClient, experiment_id: str, version: Version, source_run_id: str
) -> str | None:
    """The `model_id` of `version` in the experiment, created when missing; None when the store has no
    LoggedModels."""

    def create() -> LoggedModel:
        created = client.create_logged_model(
            experiment_id,
            name=version.name,
            source_run_id=source_run_id,
            tags={VERSION_KEY_TAG: version.key},
            params=version.params,
        )
        client.finalize_logged_model(created.model_id, "READY")
        return created

    with optional("versions not logged as MLflow LoggedModels"):
        kept = find_or_create(
            client.tracking_uri,
            lambda: _found(client, experiment_id, version.key),
            create,
            key=lambda lm: lm.model_id,
            delete=lambda lm: client.delete_logged_model(lm.model_id),
        )
        return kept.model_id
    return None
