"""Prove a logged run: re-derive every hash it recorded and re-score its archived answers.

`audit` takes what the store recorded (status, params, metrics) and the run's downloaded
artifacts, and returns one `Check` per claim:

- every archived input lies where the run put it, under a path that stays inside the
  downloaded run, with the hash the manifest records, and nothing else is archived beside them;
- each archived eval-set file's sha1 gives the logged `eval_set_version` (`<stem>@<sha1>`);
- the archived prompt's sha256 equals `prompt_sha256`, and so does the text of the Prompt Registry
  version it was fetched from (`prompt_uri`), read again from the audited store;
- `index_version` re-derives from the index when its inputs are here (`runner.index_version`,
  the same function the run used; a configured version is a label and is compared as such);
  with `deep`, the cached vectors of a built index equal its chunks embedded afresh;
- the archived `config.yaml` hashes to `config_sha256`;
- each scorer the run used is installed here with the same name, version and code hash;
- the archived predictions file's sha1 equals the recorded one;
- re-scoring the archived predictions against the archived eval files, with the scorers and
  gates of the archived config (exactly `ragtrack score --config`), gives every logged
  metric bit for bit, and the per-case table `cases.parquet` row for row.

A check that cannot be made (e.g. the index file is neither archived nor present) is
`skip`, never `pass`. The archived config came from whoever logged the run: the servers,
key variables, paths and models it names are used only as the auditor gives them
(`ragtrack.run.trust`), otherwise the checks that need them are skipped, naming them.
`case_detail` shows one case with the versions behind its scores.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file, sha256_bytes, sha256_file
from ragtrack.core.redact import MASK
from ragtrack.core.types import ContextChunk, ScoreValue
from ragtrack.inputs.archive import ARCHIVED_DIRS, ArchivedRun
from ragtrack.inputs.config import RunConfig, load_run_config
from ragtrack.run.trust import Refused

if TYPE_CHECKING:
    from collections.abc import Callable

    from ragtrack.run.runner import FileScores
    from ragtrack.run.trust import Caller
    from ragtrack.tracking.reader import LoggedRun

__all__ = ["AuditReport", "CaseDetail", "Check", "audit", "case_detail", "rescore_archive"]

CASES_COMPARED = 10_000  # rows of cases.parquet compared at a time

Status = Literal["pass", "fail", "skip"]


class Check(BaseModel):
    """One claim of the run and whether it holds."""

    model_config = ConfigDict(frozen=True)

    name: str
    status: Status
    detail: str


class AuditReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    checks: list[Check]
    notes: list[str] = []  # settings of the archived config replaced by the caller's

    @property
    def passed(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


def _short(h: str | None) -> str:
    return "(none)" if not h else f"{h[:12]}…"


def _check(name: str, ok: bool, good: str, bad: str) -> Check:
    return Check(name=name, status="pass" if ok else "fail", detail=good if ok else bad)


# ------------------------------------------------------------------ the checks


def _status(run: LoggedRun) -> Check:
    return _check(
        "run status", run.status == "FINISHED", "FINISHED", f"{run.status}: its numbers are not final"
    )


def _eval_files(run: LoggedRun, archive: ArchivedRun) -> list[Check]:
    logged = run.params.get("eval_set_version", "").split("+")
    files = archive.manifest.eval_files
    if len(logged) != len(files):
        detail = (
            f"logged eval_set_version {run.params.get('eval_set_version')!r} names {len(logged)} file(s); "
            f"the archive has {len(files)}"
        )
        return [Check(name="eval files", status="fail", detail=detail)]
    out = []
    for i, (f, version) in enumerate(zip(files, logged, strict=True)):  # equal lengths: checked above
        name = f"eval file {f.artifact_path}"
        try:
            actual = sha1_file(archive.eval_path(i))
        except InputError as e:
            out.append(Check(name=name, status="fail", detail=str(e)))
            continue
        derived = f"{f.stem}@{actual}"
        out.append(
            _check(
                name,
                derived == version,
                f"sha1 {_short(actual)} gives the logged {f.stem}@{_short(actual)}",
                f"sha1 is {_short(actual)}, logged {version}",
            )
        )
    return out


def _prompt(run: LoggedRun, archive: ArchivedRun) -> Check:
    logged = run.params.get("prompt_sha256")
    try:
        path = archive.prompt_path
    except InputError as e:
        return Check(name="prompt", status="fail", detail=str(e))
    actual = sha256_file(path)
    name = f"prompt {archive.manifest.prompt_artifact_path}"
    return _check(
        name,
        actual == logged,
        f"sha256 {_short(actual)} = prompt_sha256",
        f"sha256 is {_short(actual)}, logged prompt_sha256 {_short(logged)}",
    )


def index_check(cfg: RunConfig, logged: str | None) -> Check:
    """`index_version` as the run derived it (`runner.index_version`), when its inputs are here.

    An index is a file (`index.path`, hashed), a configured label (`index.version`), or built
    from a corpus folder, a chunker and an embedder (`ragtrack.index.build`): whatever
    `runner.index_version` derives from, an input it cannot find is a skipped check, not a failed one.
    """
    from ragtrack.run.runner import index_version

    if (
        cfg.index.version
    ):  # a label proves nothing: not applicable when it matches, a failure when it does not
        if cfg.index.version == logged:
            return Check(
                name="index",
                status="skip",
                detail=f"configured version {logged!r} is a label: nothing to re-derive from content",
            )
        return Check(
            name="index", status="fail", detail=f"configured version {cfg.index.version!r}, logged {logged!r}"
        )
    source = f"corpus {cfg.index.corpus.dir}" if cfg.index.corpus else cfg.index.path
    try:
        derived = index_version(cfg)
    except InputError:
        return Check(
            name="index",
            status="skip",
            detail=f"{source}: neither archived nor present here, so {logged} is not re-derived",
        )
    return _check(
        "index",
        derived == logged,
        f"{source} re-derives {derived}",
        f"{source} gives {derived}, logged {logged}",
    )


def _archive(archive: ArchivedRun) -> Check:
    """The archived inputs lie where the run put them, hash as the manifest recorded, and nothing else is
    archived."""
    m = archive.manifest
    problems = []
    named = {f"eval_files[{i}].artifact_path": f.artifact_path for i, f in enumerate(m.eval_files)}
    named |= {
        "prompt_artifact_path": m.prompt_artifact_path,
        "predictions_artifact_path": m.predictions_artifact_path,
    }
    for field, place in archive.places().items():
        if place is None or named[field] not in (place, f"{place}.gz"):
            problems.append(
                f"{field} is {named[field]!r}, where the run archives it at {place or 'predictions/<file>'!r}"
            )
    recorded: dict[str | None, tuple[str, str | None]] = {
        f.artifact_path: ("sha1", f.sha1) for f in m.eval_files
    }
    recorded |= {
        m.prompt_artifact_path: ("sha256", m.prompt_sha256),
        m.predictions_artifact_path: ("sha1", m.predictions_sha1),
    }
    root = archive.root.resolve()
    found = sorted(
        p.relative_to(root).as_posix() for d in ARCHIVED_DIRS for p in (root / d).rglob("*") if not p.is_dir()
    )
    for rel in found:
        if rel not in recorded:
            problems.append(f"{rel} is archived but named by no manifest field")
            continue
        algo, expected = recorded[rel]
        try:
            content = archive.path(rel, rel, rel)  # a compressed input: its content, inflated
        except InputError as e:
            problems.append(str(e))
            continue
        actual = (sha1_file if algo == "sha1" else sha256_file)(content)
        if actual != expected:
            problems.append(f"{rel}: {algo} is {_short(actual)}, the manifest records {_short(expected)}")
    ok = not problems
    return _check(
        "archive",
        ok,
        f"{len(found)} archived inputs at their places, each with the hash the manifest records",
        "; ".join(problems[:3]) + (f" … and {len(problems) - 3} more" if len(problems) > 3 else ""),
    )


def _config(
    run: LoggedRun, archive: ArchivedRun, caller: Caller, deep: bool
) -> tuple[list[Check], RunConfig | None]:
    logged = run.params.get("config_sha256")
    try:
        path = archive.config_path
        cfg = load_run_config(path)
    except InputError as e:
        return [Check(name="config", status="fail", detail=str(e))], None
    actual = cfg.sha256
    bad = f"sha256 of the resolved config is {_short(actual)}, logged config_sha256 {_short(logged)}"
    if actual != logged and MASK in path.read_text(encoding="utf-8"):
        bad += f" (the archived config has masked values {MASK!r}: a secret reached the config)"
    checks = [_check("config.yaml", actual == logged, f"sha256 {_short(actual)} = config_sha256", bad)]
    logged_index = run.params.get("index_version")
    check, settled = _index(path, caller, logged_index)
    checks.append(check)
    if deep:
        checks.append(
            vectors_check(settled, logged_index)
            if settled is not None and check.status == "pass"
            else Check(
                name="index vectors", status="skip", detail="not compared: index_version was not re-derived"
            )
        )
    return checks, cfg


def _index(path: Path, caller: Caller, logged: str | None) -> tuple[Check, RunConfig | None]:
    """`index_check` on the archived config's index, whose folders, files and model are the caller's to
    give."""
    from ragtrack.inputs.config import read_yaml
    from ragtrack.run.trust import apply_overrides, settle

    raw = apply_overrides(
        read_yaml(path), caller.overrides, sections=AUDIT_SECTIONS
    )  # checked by check_caller
    try:
        settled = settle(raw, "index", caller, where=str(path))
    except Refused as e:
        keys = ", ".join(f"--set {s.key}=…" for s in e.settings)
        shown = "; ".join(s.show() for s in e.settings)
        return Check(
            name="index",
            status="skip",
            detail=f"{logged} not re-derived: the run's config names {shown}; "
            f"to re-derive it from inputs of yours, give {keys}",
        ), None
    cfg = RunConfig.from_container(settled.config)
    return index_check(cfg, logged), cfg


def vectors_check(cfg: RunConfig, version: str | None) -> Check:
    """`--deep`: the cached vectors of a built index against a fresh embedding of its chunks.

    The index cache is shared and verified by checksums (`ragtrack.index.build`); this also
    catches vectors whose checksums were rewritten to match, and an embedding cache that
    gave wrong vectors: the fresh embedding uses neither cache.
    """
    from ragtrack.index.build import DEEP_TOLERANCE, index_spec, open_index, verify_vectors

    if not cfg.index.built:
        return Check(
            name="index vectors",
            status="skip",
            detail="the run's index is a file or a label: no vectors to compare",
        )
    spec = index_spec(cfg.index)
    index = open_index(spec)
    delta = verify_vectors(spec, index.vectors)
    return _check(
        "index vectors",
        delta <= DEEP_TOLERANCE,
        f"the {len(spec.chunks)} cached vectors of {version} equal a fresh embedding of its chunks "
        f"(max |Δ| {delta:.1e})",
        f"the cached vectors of {version} in {index.path} differ from a fresh embedding of its chunks "
        f"(max |Δ| {delta:.2g}): the cache was damaged or tampered with; delete that folder to rebuild it",
    )


def _scorers(run: LoggedRun, archive: ArchivedRun) -> list[Check]:
    from ragtrack.core.registry import bytes_code_sha256, code_sha256, module_sha256
    from ragtrack.scorers.base import get_scorer_class

    out = []
    for s in archive.manifest.scorers:
        version = run.params.get(f"scorer/{s.name}/version", s.version)
        code = run.params.get(f"scorer/{s.name}/code_sha256", s.code_sha256)
        name = f"scorer {s.name}"
        try:
            cls = get_scorer_class(s.name)
        except InputError:
            out.append(Check(name=name, status="fail", detail=f"v{version} is not installed here"))
            continue
        installed = code_sha256(cls)
        problems = []
        if cls.version != version:
            problems.append(f"logged v{version}, installed v{cls.version}")
        code_note = (
            f"code sha256 {_short(installed)}" if code is not None else "code hash not logged by this run"
        )
        if code is not None and code != installed:
            if code == bytes_code_sha256(cls):  # logged before the hash read syntax trees
                code_note = (
                    f"code sha256 {_short(code)} of its files' bytes (this run predates hashes of syntax "
                    "trees), equal to the installed files'"
                )
            elif code == module_sha256(cls):  # logged before the hash covered imported modules
                code_note = (
                    f"code sha256 {_short(code)} of its module alone (this run predates hashes of the "
                    "modules it imports: those are proven only by the re-score)"
                )
            else:
                problems.append(f"logged code sha256 {_short(code)}, installed {_short(installed)}")
        out.append(_check(name, not problems, f"v{version} installed, {code_note}", "; ".join(problems)))
    return out


def _predictions(run: LoggedRun, archive: ArchivedRun) -> Check:
    m = archive.manifest
    name = f"predictions {m.predictions_artifact_path}"
    try:
        actual = sha1_file(archive.predictions_path)
    except InputError as e:
        return Check(name=name, status="fail", detail=str(e))
    # A full stage replaying a file archives it whole: its sha1 is also a param (in the store, not the
    # archive).
    param = run.params.get(f"generator/{m.generator.name}/predictions_sha1") if m.subset is None else None
    expected = param or m.predictions_sha1
    return _check(
        name,
        actual == expected,
        f"sha1 {_short(actual)} = recorded",
        f"sha1 is {_short(actual)}, recorded {_short(expected)}",
    )


AUDIT_SECTIONS = (
    "scorers",
    "index",
)  # where an auditor's --set may name servers, key variables, paths and models


def check_caller(archive: ArchivedRun, caller: Caller) -> None:
    """An auditor's `--set` names only where to reach (servers, key variables, paths, models): bad input
    otherwise."""
    from ragtrack.inputs.config import read_yaml
    from ragtrack.run.trust import apply_overrides, reach_keys

    if not caller.overrides:
        return
    raw = read_yaml(archive.config_path)
    if isinstance(raw, dict):
        keys = set().union(*(reach_keys(raw, s) for s in AUDIT_SECTIONS))
        apply_overrides(
            raw,
            caller.overrides,
            sections=AUDIT_SECTIONS,
            only=keys,
            why=": an audit proves the run's own scoring (a scoring change is `ragtrack rescore`)",
        )


def rescore_archive(
    archive: ArchivedRun, caller: Caller | None = None, *, with_rows: bool = False
) -> tuple[FileScores, list[str]]:
    """The archived predictions scored against the archived eval files with the archived config's scorers
    and gates, settled for the caller (`ragtrack.run.trust`; its `--set` checked by `check_caller`); the notes
    of what was replaced. `with_rows`: build the per-case rows too (`FileScores.rows`)."""
    from ragtrack.run.runner import config_scoring, score_files
    from ragtrack.run.trust import Caller

    caller = caller or Caller()
    scoring = config_scoring(archive.config_path, caller, sections=AUDIT_SECTIONS)
    return score_files(
        archive.eval_paths, archive.predictions_path, scoring.scorers, scoring.gates, with_rows=with_rows
    ), scoring.notes


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b or (math.isnan(a) and math.isnan(b))


def _metrics(run: LoggedRun, scored: FileScores) -> Check:
    logged = {k: v for k, v in run.metrics.items() if not k.startswith("timing/")}
    derived = {k: v for k, v in scored.metrics.items() if not math.isnan(v)}  # NaN is not logged
    wrong = [k for k in sorted(set(logged) | set(derived)) if not _same(logged.get(k), derived.get(k))]
    shown = "; ".join(f"{k}: logged {logged.get(k)!r}, re-scored {derived.get(k)!r}" for k in wrong[:3])
    more = f" … and {len(wrong) - 3} more" if len(wrong) > 3 else ""
    return _check(
        "re-score: metrics",
        not wrong,
        f"all {len(logged)} logged metrics re-derived bit for bit",
        f"{len(wrong)} metric(s) differ: {shown}{more}",
    )


def _cases(archive: ArchivedRun, scored: FileScores) -> Check:
    """The logged `cases.parquet` against the re-scored table written as the run writes it (so that types
    compare like for like), `CASES_COMPARED` rows at a time."""
    import pyarrow.parquet as pq

    from ragtrack.run.results import case_columns, write_parquet

    name = "re-score: cases.parquet"
    try:
        logged = archive.cases_file()
    except InputError as e:
        return Check(name=name, status="fail", detail=str(e))
    with tempfile.TemporaryDirectory(prefix="ragtrack-audit-") as tmp:
        columns = case_columns(scored.eval_set.cases, scored.generation.predictions, scored.outputs)
        write_parquet(columns, Path(tmp) / "cases.parquet")
        del columns
        derived = pq.ParquetFile(Path(tmp) / "cases.parquet")
        shape = {"logged": logged.metadata.num_rows, "re-scored": derived.metadata.num_rows}
        if logged.schema_arrow.names != derived.schema_arrow.names or len(set(shape.values())) > 1:
            n = {"logged": len(logged.schema_arrow.names), "re-scored": len(derived.schema_arrow.names)}
            return Check(
                name=name,
                status="fail",
                detail=(
                    f"logged table has {shape['logged']} rows × {n['logged']} columns, "
                    f"re-scored {shape['re-scored']} × {n['re-scored']}"
                ),
            )
        differing: list[str] = []
        for a, b in zip(_frames(logged), _frames(derived), strict=True):
            differing += [c for c in a.columns if c not in differing and not a[c].equals(b[c])]
    return _check(
        name,
        not differing,
        f"all {shape['logged']} rows × {len(logged.schema_arrow.names)} columns equal",
        f"column(s) differ: {', '.join(differing[:5])}",
    )


def _frames(table: Any) -> Iterator[Any]:
    """A Parquet file's rows as DataFrames of `CASES_COMPARED` rows, converted as `pandas.read_parquet`
    converts the whole table (its schema's pandas metadata)."""
    import pyarrow as pa

    for batch in table.iter_batches(batch_size=CASES_COMPARED):
        yield pa.Table.from_batches([batch], schema=table.schema_arrow).to_pandas()


def _registry_prompt(archive: ArchivedRun, registry: Callable[[str], str] | None) -> list[Check]:
    """A prompt fetched from the Prompt Registry (`prompt_uri`): that version, read again, hashes to
    prompt_sha256."""
    uri, logged = archive.manifest.prompt_uri, archive.manifest.prompt_sha256
    if uri is None:
        return []
    name = f"prompt {uri}"
    if registry is None:
        return [
            Check(
                name=name, status="skip", detail="not compared: no tracking store to read the registry from"
            )
        ]
    try:
        actual = sha256_bytes(registry(uri).encode("utf-8"))
    except InputError as e:
        return [Check(name=name, status="fail", detail=str(e))]
    return [
        _check(
            name,
            actual == logged,
            f"the registry's text hashes to prompt_sha256 {_short(actual)}",
            f"the registry's text hashes to {_short(actual)}, logged prompt_sha256 {_short(logged)}",
        )
    ]


def audit(
    run: LoggedRun,
    archive: ArchivedRun,
    caller: Caller | None = None,
    *,
    deep: bool = False,
    registry: Callable[[str], str] | None = None,
) -> AuditReport:
    """Every check of the run (see the module docstring), in a fixed order.

    The archived config is someone else's: its servers, key variables, paths and models
    are used only as `caller` settles them (`ragtrack.run.trust`); a check they would be
    needed for is skipped, naming them, when the caller gave none. `deep` adds
    `vectors_check`: the index embedded afresh. `registry` gives the text of a Prompt Registry version of the
    audited store, for a prompt the run fetched from there.
    """
    from ragtrack.run.trust import Caller

    caller = caller or Caller()
    check_caller(archive, caller)
    checks = [
        _status(run),
        _archive(archive),
        *_eval_files(run, archive),
        _prompt(run, archive),
        *_registry_prompt(archive, registry),
    ]
    config_checks, _ = _config(run, archive, caller, deep)
    checks += config_checks + _scorers(run, archive) + [_predictions(run, archive)]
    notes: list[str] = []
    try:
        scored, notes = rescore_archive(archive, caller)
    except Refused as e:
        checks.append(Check(name="re-score", status="skip", detail=f"not made: {e.problem}"))
    except InputError as e:
        checks.append(Check(name="re-score", status="fail", detail=f"cannot re-score: {e}"))
    else:
        checks += [_metrics(run, scored), _cases(archive, scored)]
    return AuditReport(run_id=run.run_id, checks=checks, notes=notes)


# ------------------------------------------------------------------ one case


class CaseDetail(BaseModel):
    """One case of a run: what was asked, what the model saw and said, every score and what produced it."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    question: str
    contexts: list[ContextChunk]
    answer: str
    missing: bool
    scores: dict[str, ScoreValue]  # as logged in cases.parquet
    rescored: dict[str, ScoreValue]  # re-scored from the archive
    versions: dict[str, str]


def case_detail(
    run: LoggedRun, archive: ArchivedRun, case_id: str, caller: Caller | None = None
) -> CaseDetail:
    from ragtrack.run.trust import Caller

    caller = caller or Caller()
    check_caller(archive, caller)
    scored, _ = rescore_archive(archive, caller, with_rows=True)
    ids = [c.id for c in scored.eval_set.cases]
    if case_id not in ids:
        sample = ", ".join(ids[:5])
        raise InputError(
            f"run {run.run_id}", f"no case {case_id!r} ({len(ids)} cases, e.g. {sample})", field="--case"
        )
    i = ids.index(case_id)
    case, pred = scored.eval_set.cases[i], scored.generation.predictions[i]
    frame = archive.cases()
    row = frame[frame["id"].astype(str) == case_id]
    logged = {k: _plain(v) for k, v in row.iloc[0].items()} if len(row) else {}
    m = archive.manifest
    versions = {
        "model_id": m.model_id,
        "adapter_id": m.adapter_id,
        "prompt": f"{m.prompt_version} (sha256 {m.prompt_sha256})",
        "eval_set_version": m.eval_set_version,
        "index_version": m.index_version,
        "config_sha256": m.config_sha256,
        f"generator {m.generator.name}": f"v{m.generator.version}",
        **{
            f"scorer {s.name}": (
                f"v{s.version}, code sha256 {s.code_sha256 or '(not logged)'}, params {s.params}"
            )
            for s in m.scorers
        },
    }
    keep = [k for k in scored.rows[i] if "/" in k]
    return CaseDetail(
        case_id=case_id,
        question=case.question,
        contexts=pred.contexts,
        answer=pred.answer,
        missing=pred.missing,
        scores={k: logged.get(k) for k in keep},
        rescored={k: scored.rows[i][k] for k in keep},
        versions=versions,
    )


def _plain(v: object) -> ScoreValue:
    """A pandas cell as a plain value (NaN from a missing string or number: None)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    return cast("ScoreValue", v)  # a cell of a score column: a plain value now
