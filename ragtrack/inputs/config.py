"""The run configuration as a validated pydantic model.

Hydra composes `conf/` into a DictConfig; `RunConfig.from_container` validates it, so
that a typo in a config key is an error that names the key, not a silent default.
Secrets never live here: generators that need a key read it from the environment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_json
from ragtrack.core.registry import reaching

__all__ = ["RunConfig", "load_run_config", "read_yaml"]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Section):
    id: str
    revision: str | None = None

    @property
    def stamp(self) -> str:
        """`model_id` as logged: `<id>` or `<id>@<revision>`."""
        return f"{self.id}@{self.revision}" if self.revision else self.id


class AdapterConfig(_Section):
    name: str
    id: str
    served_model: str | None = None  # the model name a server answers this adapter under (vLLM: one per LoRA)


class CorpusConfig(_Section):
    dir: str = reaching("path")  # the corpus folder; chunks name their file by its path relative to it
    glob: str = "**/*"  # which files of the folder (sorted by relative path)


class ChunkerConfig(_Section):
    size: int = Field(gt=0)  # most characters in a chunk
    overlap: int = Field(default=0, ge=0)  # most characters two consecutive chunks share
    boundary: Literal["paragraph", "sentence", "char"] = "paragraph"  # the coarsest unit a cut prefers

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkerConfig:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        return self


class EmbedderConfig(_Section):
    model: str = reaching("model", "all-MiniLM-L6-v2")  # a local sentence-transformers folder or a hub name
    batch_size: int = Field(default=64, gt=0)


class IndexConfig(_Section):
    """An index built from a corpus (`corpus`, `chunker`, `embedder`), or a recorded one
    (`version`/`path`)."""

    name: str
    version: str | None = None
    path: str | None = reaching("path", None)  # a recorded index's file (hashed into index_version)
    corpus: CorpusConfig | None = None
    chunker: ChunkerConfig | None = None
    embedder: EmbedderConfig | None = None

    @model_validator(mode="after")
    def _one_form(self) -> IndexConfig:
        built = [k for k in ("corpus", "chunker", "embedder") if getattr(self, k) is not None]
        if built and (self.version or self.path):
            raise ValueError(
                "an index is built (`corpus`, `chunker`, `embedder`) or recorded (`version`/`path`), not both"
            )
        if built and len(built) < 3:
            raise ValueError("a built index needs `corpus`, `chunker` and `embedder`")
        return self

    @property
    def built(self) -> bool:
        """Built by ragtrack from `corpus` (else a recorded index, named by `version` or `path`)."""
        return self.corpus is not None


PROMPT_URI = re.compile(r"prompts:/(?P<name>[^/@\s]+)(?:/(?P<version>[0-9]+)|@(?P<alias>[A-Za-z0-9_.\-]+))")


class PromptConfig(_Section):
    """A template file (`path`, labelled `version`), or a version of MLflow's Prompt Registry (`uri`)."""

    version: str | None = None
    path: str | None = None
    uri: str | None = None  # prompts:/NAME/VERSION or prompts:/NAME@ALIAS, in the run's tracking store

    @model_validator(mode="after")
    def _one_source(self) -> PromptConfig:
        if self.uri is not None and self.path is not None:
            raise ValueError(
                "a prompt is a file (`path`) or a Prompt Registry version (`uri`), not both: "
                "for a registry prompt choose `prompt=registry prompt.uri=prompts:/NAME/VERSION`"
            )
        if self.uri is None and self.path is None:
            raise ValueError(
                "give `path` (a template file) or `uri` (prompts:/NAME/VERSION or prompts:/NAME@ALIAS)"
            )
        if self.uri is not None and not PROMPT_URI.fullmatch(self.uri):
            raise ValueError(
                f"{self.uri!r} is not a prompt URI: prompts:/NAME/VERSION or prompts:/NAME@ALIAS"
            )
        if self.path is not None and not self.version:
            raise ValueError("a prompt file needs its `version` label")
        return self

    @property
    def label(self) -> str:
        """The prompt's version label: `version`, else one from its URI (`NAME-v3`, `NAME@prod`)."""
        if self.version:
            return self.version
        m = PROMPT_URI.fullmatch(self.uri or "")
        assert m is not None  # validated
        return f"{m['name']}-v{m['version']}" if m["version"] else f"{m['name']}@{m['alias']}"


class EvalSetConfig(_Section):
    name: str
    files: list[str] = Field(min_length=1)


class GeneratorConfig(_Section):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class StagesConfig(_Section):
    enabled: bool = False
    dev_n: int = 100
    dev_seed: int = 0
    dev_gate: str = "dev100"


class TrackingConfig(_Section):
    enabled: bool = True
    uri: str | None = None
    experiment: str = "ragtrack"
    run_name: str | None = None
    traces_max_cases: int = Field(default=2000, ge=0)  # per-case traces only up to this many cases (0: never)
    force: bool = False  # a sweep re-runs jobs that match a finished run (see ragtrack.run.jobkey)
    # ranks a sweep's jobs; None: eval_json_v2/eval_score_avg, else the first metric
    headline_metric: str | None = None
    bootstrap_seed: int = 0
    bootstrap_resamples: int = Field(default=10_000, ge=1)


_HASHED_WHEN_SET = (("prompt", "uri"),)


class RunConfig(_Section):
    model: ModelConfig
    adapter: AdapterConfig
    index: IndexConfig
    prompt: PromptConfig
    eval_set: EvalSetConfig
    generator: GeneratorConfig
    scorers: dict[str, dict[str, Any] | None]
    gates: dict[str, list[str]] = Field(default_factory=dict)
    stages: StagesConfig = Field(default_factory=StagesConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    @classmethod
    def from_container(cls, data: dict[str, Any]) -> RunConfig:
        """Validate a plain (resolved) config; the first problem names its key."""
        data = {k: v for k, v in data.items() if k != "hydra"}
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            raise InputError("config", err["msg"].removeprefix("Value error, "), field=key) from None

    def hashed(self) -> dict[str, Any]:
        """Everything that shapes the scores, as hashed into `sha256`.

        `tracking` (where and under which names the run is logged) is left out: logging
        the same evaluation to another store or experiment must not change its hash. Keys
        added later are left out while unset, so configs from before them keep their hash.
        """
        data = self.model_dump(mode="json", exclude={"tracking"})
        for section, key in _HASHED_WHEN_SET:
            if data[section].get(key) is None:
                del data[section][key]
        return data

    @property
    def sha256(self) -> str:
        """sha256 of the canonical JSON of `hashed()`."""
        return sha256_json(self.hashed())


def read_yaml(path: Path) -> Any:
    """A YAML file's content; unreadable, non-UTF-8 or invalid YAML is bad input naming the file."""
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError.from_os_error(path, e) from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    except yaml.YAMLError as e:
        raise InputError(str(path), f"not valid YAML: {e}") from None


def load_run_config(path: Path) -> RunConfig:
    """A run's archived `config.yaml` (the YAML dump of its `RunConfig`), validated."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise InputError(str(path), "expected a run's config.yaml (a mapping with `scorers` and `gates`)")
    try:
        return RunConfig.from_container(raw)
    except InputError as e:
        raise InputError(str(path), e.problem, where=e.where, field=e.field) from None
