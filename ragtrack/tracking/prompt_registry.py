"""A run's prompt in MLflow's Prompt Registry: one prompt per experiment, one version per distinct content.

The prompts a sweep compares are versions of one prompt: the experiment's
(`<experiment>-prompt`, in the characters a prompt name allows). A run's template is
found by its sha256 (the version tag `ragtrack.prompt_sha256`) or registered as a new
version, with its label (`prompt v2`) as the commit message; the same bytes never make a
second version. The prompt is listed on the experiment's Prompts page (MLflow's experiment-ids
tag on the prompt). Jobs registering the same content at once keep the lowest version and
delete their own. The run is linked to its version (the UI's Prompts page lists the runs
that used each version) by the `mlflow.linkedPrompts` tag MLflow's own linking writes: its
linking call reads the process-global tracking URI, which ragtrack never sets. A store
without a Prompt Registry costs one warning line and nothing else.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path

from mlflow.entities import RunTag
from mlflow.entities.model_registry import PromptVersion
from mlflow.exceptions import MlflowException
from mlflow.prompt.constants import PROMPT_EXPERIMENT_IDS_TAG_KEY
from mlflow.tracing.constant import TraceTagKey
from mlflow.tracing.utils.prompt import update_linked_prompts_tag
from mlflow.tracking import MlflowClient

from ragtrack.core.cachedir import cache_root
from ragtrack.core.errors import InputError, disk_full
from ragtrack.core.hashing import sha256_bytes
from ragtrack.core.redact import redact_text
from ragtrack.inputs.config import PROMPT_URI
from ragtrack.inputs.prompts import Prompt, prompt_of
from ragtrack.tracking.entities import find_or_create, optional

__all__ = ["PROMPT_SHA_TAG", "fetch_prompt", "link_prompt", "prompt_name"]

log = logging.getLogger("ragtrack")

PROMPT_SHA_TAG = "ragtrack.prompt_sha256"
# MlflowClient._link_prompt_to_experiment's thread name
_MLFLOW_LINK_THREAD = "link_prompt_to_experiment_thread"
_DEFAULT_EXPERIMENT = "0"  # the experiment MLflow's fluent API falls back to
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def prompt_name(experiment: str) -> str:
    """The registry name of an experiment's prompt."""
    return _NOT_IN_NAME.sub("-", f"{experiment}-prompt").strip("-")


def _same_content(client: MlflowClient, name: str, sha256: str) -> list[PromptVersion]:
    versions: list[PromptVersion] = []
    token = None
    while True:
        try:
            page = client.search_prompt_versions(name, page_token=token)
        except MlflowException as e:
            if e.error_code == "RESOURCE_DOES_NOT_EXIST":
                return []
            raise
        versions += [v for v in page if (v.tags or {}).get(PROMPT_SHA_TAG) == sha256]
        token = getattr(page, "token", None)
        if not token:
            return sorted(versions, key=lambda v: int(v.version))


def _register(client: MlflowClient, name: str, template: str, sha256: str, label: str) -> PromptVersion:
    """A new version; when another job created the prompt itself a moment earlier, the call is made once more.

    MLflow's `register_prompt` also lists the prompt in the process's active experiment, in a thread;
    ragtrack sets none, so that is the Default experiment ("0"): that entry is taken out again unless the
    prompt had it before."""
    before = _experiment_ids(client, name)
    tags = {PROMPT_SHA_TAG: sha256, "ragtrack.prompt_version": label}
    try:
        version = client.register_prompt(name, template, commit_message=f"prompt {label}", tags=tags)
    except MlflowException as e:
        if "already exists" not in str(e):
            raise
        version = client.register_prompt(name, template, commit_message=f"prompt {label}", tags=tags)
    for (
        thread
    ) in threading.enumerate():  # let MLflow's tagging thread finish first, or its write could drop the
        if thread.name.startswith(_MLFLOW_LINK_THREAD):  # experiment `_show_in` adds
            thread.join(timeout=30)
    after = _experiment_ids(client, name)
    if _DEFAULT_EXPERIMENT in after and _DEFAULT_EXPERIMENT not in before:
        _set_experiment_ids(client, name, [i for i in after if i != _DEFAULT_EXPERIMENT])
    return version


def _experiment_ids(client: MlflowClient, name: str) -> list[str]:
    """The experiments whose Prompts page lists the prompt (MLflow's tag `,1,4,`); none for a missing
    prompt."""
    try:
        prompt = client.get_prompt(name)
    except MlflowException:
        return []
    return [
        i
        for i in ((prompt.tags if prompt else None) or {}).get(PROMPT_EXPERIMENT_IDS_TAG_KEY, "").split(",")
        if i
    ]


def _set_experiment_ids(client: MlflowClient, name: str, ids: list[str]) -> None:
    client.set_prompt_tag(name, PROMPT_EXPERIMENT_IDS_TAG_KEY, f",{','.join(ids)}," if ids else "")


def _show_in(client: MlflowClient, name: str, experiment_id: str) -> None:
    """List the prompt on the experiment's Prompts page, as MLflow's fluent API does for the active
    experiment."""
    ids = _experiment_ids(client, name)
    if experiment_id not in ids:
        _set_experiment_ids(client, name, [*ids, experiment_id])


def link_prompt(
    client: MlflowClient,
    run_id: str,
    experiment: str,
    experiment_id: str,
    template: str,
    sha256: str,
    label: str,
    registered: str | None = None,
) -> str | None:
    """Register (or find) the version of `template`, or use the `registered` one it was fetched from, show the
    prompt in the experiment and link `run_id` to the version; its `prompts:/` URI, or None."""
    with optional("prompt not registered in MLflow's Prompt Registry"):
        if registered is not None:
            m = PROMPT_URI.fullmatch(registered)
            assert m is not None and m["version"]  # a fetched prompt's resolved URI
            name, version = m["name"], client.get_prompt_version(m["name"], m["version"])
        else:
            name = prompt_name(experiment)
            version = find_or_create(
                client.tracking_uri,
                lambda: _same_content(client, name, sha256),
                lambda: _register(client, name, template, sha256, redact_text(label)),
                key=lambda v: str(v.version),
                delete=lambda v: client.delete_prompt_version(name, str(v.version)),
            )
        _show_in(client, name, experiment_id)
        linked = update_linked_prompts_tag(
            client.get_run(run_id).data.tags.get(TraceTagKey.LINKED_PROMPTS), [version]
        )
        client.log_batch(run_id, tags=[RunTag(TraceTagKey.LINKED_PROMPTS, linked)], synchronous=True)
        return version.uri
    return None


def fetch_prompt(client: MlflowClient, uri: str, label: str) -> Prompt:
    """The Prompt Registry version `uri` names (an alias resolved to its number), kept as a file in
    ragtrack's cache so that the run reads, hashes and archives it as it does a prompt file."""
    m = PROMPT_URI.fullmatch(uri)
    if m is None:
        raise InputError(
            "config",
            f"{uri!r} is not a prompt URI: prompts:/NAME/VERSION or prompts:/NAME@ALIAS",
            field="prompt.uri",
        )
    try:
        found = (
            client.get_prompt_version(m["name"], m["version"])
            if m["version"]
            else client.get_prompt_version_by_alias(m["name"], m["alias"])
        )
    except MlflowException as e:
        if disk_full(e, Path.cwd(), None) is not None:
            raise
        found, why = None, str(e).splitlines()[0] if str(e) else type(e).__name__
    else:
        why = "no such prompt version"
    if found is None:
        raise InputError(
            uri,
            f"not found in the Prompt Registry of {redact_text(client.tracking_uri)} ({why})",
            field="prompt.uri",
        )
    if not isinstance(found.template, str):
        raise InputError(
            uri,
            "a chat prompt (a list of messages); ragtrack's prompts are text templates with "
            "{{question}} and {{context}}",
            field="prompt.uri",
        )
    data = found.template.encode("utf-8")
    path = (
        cache_root("prompts") / sha256_bytes(data) / f"{_NOT_IN_NAME.sub('-', m['name'])}-v{found.version}.md"
    )
    if not (path.is_file() and path.read_bytes() == data):
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_bytes(data)
        os.replace(part, path)
    return prompt_of(data, str(path), label, uri=f"prompts:/{m['name']}/{found.version}")
