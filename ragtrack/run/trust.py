"""Someone else's config: take what it says about scoring, never where it says to reach.

`ragtrack audit`, `rescore` and `score --config` read a `config.yaml` that came from a
run's artifacts, that is from whoever logged the run. A parameter declared with
`ragtrack.core.registry.reaching` makes the process touch something outside itself, so its
value in such a config is used only when the person running the command gives it:

- `host` (a server to call): `--llm-base-url URL` (every LLM block) or `--set KEY=URL`;
  otherwise refused.
- `env` (a variable whose value is sent): `--llm-api-key-env VAR` or `--set`; otherwise
  none at all: no key is read, no `Authorization` header is sent.
- `cache` (a folder written): `--set`; otherwise the caller's own default cache folder.
- `path`, `model` (a file or folder read, a model loaded or downloaded): the config's value
  only when it is ragtrack's default; another value needs `--set`, otherwise refused.

`settle` applies those rules to one section of the config (`scorers` or `index`) and
returns the config to use with a note for every value it replaced; what is left unsettled
raises `Refused`, which lists each setting, its value and the option that settles it.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.registry import Params, Reach

__all__ = [
    "SCORING_KEYS",
    "Caller",
    "Refused",
    "Setting",
    "Settled",
    "apply_overrides",
    "reach_keys",
    "settings",
    "settle",
]

SCORING_KEYS = ("scorers", "gates")  # what a caller's overrides may change in someone else's config

_WHAT = {
    "host": "a server to call",
    "env": "an environment variable whose value is sent",
    "cache": "a folder to write",
    "path": "a file or folder to read",
    "model": "a model to load (a folder, or a hub name to download)",
}


class Caller(BaseModel):
    """What the person running the command gave on its command line."""

    model_config = ConfigDict(frozen=True)

    llm_base_url: str | None = None  # --llm-base-url: the server every LLM block calls
    llm_api_key_env: str | None = None  # --llm-api-key-env: the variable holding that server's key
    overrides: list[str] = []  # KEY=VALUE (`--set`, or rescore's positional overrides)

    def given(self, key: str) -> bool:
        """Whether an override sets `key` (or a block around it)."""
        return any(key == k or key.startswith(k + ".") for k in self.override_keys if "." in k)

    @property
    def override_keys(self) -> list[str]:
        return [o.partition("=")[0].strip() for o in self.overrides]


class Setting(BaseModel):
    """A parameter of the config that reaches outside the process."""

    model_config = ConfigDict(frozen=True)

    key: str  # dotted, e.g. scorers.rubric_judge.base_url
    kind: Reach
    value: Any  # in the config (the default when the config leaves it out)
    default: Any  # ragtrack's default (None when the parameter has none)
    present: bool  # the config writes it

    def show(self) -> str:
        return f"{self.key} = {self.value!r} ({_WHAT[self.kind]})"


class Settled(BaseModel):
    """A config section made safe to use: the config, and what was replaced in it."""

    model_config = ConfigDict(frozen=True)

    config: dict[str, Any]
    notes: list[str]


class Refused(InputError):
    """Settings of someone else's config that reach outside the process and that the caller did not give."""

    def __init__(self, where: str, settings: Sequence[Setting]) -> None:
        self.settings = list(settings)
        lines = [f"  {s.show()}: {_fix(s)}" for s in settings]
        problem = (
            "the config comes from the run's artifacts; these settings reach outside this process and are "
            "not used without your word:\n" + "\n".join(lines)
        )
        super().__init__(where, problem)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Refused, (self.file, self.settings), self.__dict__)


def _fix(s: Setting) -> str:
    if s.kind == "host":
        return f"give --llm-base-url URL (a server of yours) or --set {s.key}=URL"
    return f"give --set {s.key}=VALUE" + (" (or =null for ragtrack's default)" if s.default is None else "")


# ------------------------------------------------------------------ the walk


def _model_class(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model in a field's annotation (`JudgeLLMSettings | None` -> JudgeLLMSettings)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if (cls := _model_class(arg)) is not None:
                return cls
    return None


def _walk(cls: type[BaseModel], raw: Mapping[str, Any], prefix: str) -> Iterator[Setting]:
    for name, f in cls.model_fields.items():
        key = f"{prefix}.{name}"
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        default = None if f.is_required() else f.default
        present = name in raw
        value = raw[name] if present else default
        if (kind := extra.get("reach")) is not None:
            yield Setting(key=key, kind=kind, value=value, default=default, present=present)  # type: ignore[arg-type]
        sub = _model_class(f.annotation)
        if sub is not None and isinstance(value, Mapping):
            yield from _walk(sub, value, key)


def _section(
    config: Mapping[str, Any], section: str
) -> Iterator[tuple[type[BaseModel], Mapping[str, Any], str]]:
    """Each (parameter model, raw values, key prefix) of `section`: one per scorer, or the index."""
    raw = config.get(section)
    if section == "index":
        from ragtrack.inputs.config import IndexConfig

        if isinstance(raw, Mapping):
            yield IndexConfig, raw, "index"
        return
    from ragtrack.scorers.base import get_scorer_class

    for name, params in (raw or {}).items() if isinstance(raw, Mapping) else ():
        try:
            cls = get_scorer_class(str(name))
        except InputError:  # building it names the unknown scorer
            continue
        yield cls.Params, params if isinstance(params, Mapping) else {}, f"{section}.{name}"


def settings(config: Mapping[str, Any], section: str) -> list[Setting]:
    """Every setting of `section` that reaches outside the process, as the config has it, but those of fields
    the component so configured never reads (`Params.idle`: the llm block of an offline scorer)."""
    return [
        s
        for cls, raw, prefix in _section(config, section)
        for s in _walk(cls, raw, prefix)
        if s.key.removeprefix(f"{prefix}.").partition(".")[0] not in _idle(cls, raw)
    ]


def _idle(cls: type[BaseModel], raw: Mapping[str, Any]) -> frozenset[str]:
    return cls.idle(raw) if issubclass(cls, Params) else frozenset()


def reach_keys(config: Mapping[str, Any], section: str) -> set[str]:
    """The keys of `section` that may reach outside the process, whether the config writes them or not."""

    def keys(cls: type[BaseModel], prefix: str) -> Iterator[str]:
        for name, f in cls.model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            if "reach" in extra:
                yield f"{prefix}.{name}"
            if (sub := _model_class(f.annotation)) is not None:
                yield from keys(sub, f"{prefix}.{name}")

    return {k for cls, _, prefix in _section(config, section) for k in keys(cls, prefix)}


def _set(config: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = config
    for p in parents:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[last] = value


# ------------------------------------------------------------------ the rules


def settle(config: Mapping[str, Any], section: str, caller: Caller, *, where: str) -> Settled:
    """`config` with `section`'s outward settings replaced by the caller's (see the module docstring).

    `caller.overrides` must already be applied to `config`; `where` names the config in errors.
    """
    out = copy.deepcopy(dict(config))
    for cls, raw, _ in list(_section(out, section)):
        for name in _idle(cls, raw) & raw.keys():
            del raw[name]  # type: ignore[attr-defined]  # never read: not carried into the run either
    notes, refused = [], []
    for s in settings(out, section):
        if caller.given(s.key):
            continue
        if s.kind == "host":
            if caller.llm_base_url is None:
                refused.append(s)
                continue
            _set(out, s.key, caller.llm_base_url)
            if s.value != caller.llm_base_url:
                notes.append(f"{s.key}: the run's {s.value!r} replaced by yours (--llm-base-url)")
        elif s.kind in ("env", "cache"):
            _set(out, s.key, caller.llm_api_key_env if s.kind == "env" else None)
            if s.present and s.value is not None and s.value != caller.llm_api_key_env:
                yours = (
                    f"${caller.llm_api_key_env} (--llm-api-key-env)" if caller.llm_api_key_env else "no key"
                )
                mine = "your own default cache folder" if s.kind == "cache" else yours
                notes.append(f"{s.key}: the run's {s.value!r} not used; {mine}")
        elif s.value != s.default:
            refused.append(s)
    if refused:
        raise Refused(where, refused)
    return Settled(config=out, notes=notes)


# ------------------------------------------------------------------ the caller's overrides


def _value(text: str, override: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as e:
        raise InputError(
            "overrides", f"value is not YAML: {str(e).splitlines()[0]}", field=override
        ) from None


def apply_overrides(
    config: dict[str, Any],
    overrides: Sequence[str],
    *,
    sections: Sequence[str] = SCORING_KEYS,
    only: set[str] | None = None,
    why: str = "",
) -> dict[str, Any]:
    """`config` with the caller's `KEY=VALUE` overrides applied in order (Hydra-style, with OmegaConf).

    A key must lie in one of `sections` (and be one of `only`, when given); `why` ends the
    error for a key that does not. `scorers=A,B` keeps only those scorers (a new one starts
    from its defaults); VALUE is YAML (`0.8`, `true`, `[a, b]`, `null`).
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    conf = OmegaConf.create(config)
    for o in overrides:
        key, sep, text = o.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(
                "overrides", "expected KEY=VALUE, e.g. scorers.eval_json_v2.jaccard_threshold=0.8", field=o
            )
        if key.split(".")[0] not in sections or (only is not None and key not in only):
            allowed = (
                ", ".join(f"{s}.…" for s in sections) if only is None else ", ".join(sorted(only)) or "(none)"
            )
            raise InputError(
                "overrides", f"`{key}` cannot be changed here (allowed: {allowed}){why}", field=o
            )
        value = _value(text, o)
        try:
            if key == "scorers":
                names = (
                    value
                    if isinstance(value, list)
                    else [n.strip() for n in str(value or "").split(",") if n.strip()]
                )
                if not names:
                    raise InputError(
                        "overrides", "name at least one scorer, e.g. scorers=refusal_citation", field=o
                    )
                logged = OmegaConf.to_container(conf.scorers) if "scorers" in conf else {}
                conf.scorers = {str(n): logged.get(str(n)) for n in names}  # type: ignore[union-attr]
            else:
                OmegaConf.update(conf, key, {} if key == "gates" and value is None else value, merge=False)
        except OmegaConfBaseException as e:
            raise InputError("overrides", str(e).splitlines()[0], field=o) from None
    out = OmegaConf.to_container(conf)
    assert isinstance(out, dict)
    return out  # type: ignore[return-value]
