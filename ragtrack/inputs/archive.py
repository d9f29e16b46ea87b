"""The inputs of a run, archived so that it can be re-scored from its artifacts alone.

Each eval-set file and the predictions file are archived byte for byte, under paths that
cannot collide (`inputs/<i>/<file name>`), and each archived file is checked against the
hash the run recorded while scoring: a file that changed during the run is an error, not a
silently different archive. A dev stage archives the subset it scored (the subset file and
the lines of the predictions file that the dev stage saw), so that `ragtrack score` on the
archived files gives the dev stage's numbers. Answers that were generated, not replayed,
are written in the predictions format (SPEC §6).

`ArchivedRun` reads such an archive back once it is downloaded: the manifest, and where
each archived input, the config and the per-case table lie.
"""

from __future__ import annotations

import gzip
import json
import shutil
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file, sha256_file
from ragtrack.core.types import EvalFile, Prediction, RunManifest, RunResult
from ragtrack.inputs.eval_sets import inner

if TYPE_CHECKING:
    import pandas

__all__ = ["ARCHIVED_DIRS", "MANIFEST", "ArchivedRun", "prediction_record", "write_archive"]

MANIFEST = "manifest.json"
CONFIG = "config.yaml"
CASES = "cases.parquet"
ARCHIVED_DIRS = (
    "inputs",
    "prompt",
    "predictions",
)  # the folders holding the archived inputs, and nothing else
COMPRESS_ABOVE = 1 << 20  # an archived input larger than this (bytes) is stored gzip-compressed, `<file>.gz`
INFLATED = ".inflated"  # where a downloaded run's compressed inputs are inflated, beside its artifacts
CHUNK = 1 << 20


def _verified_copy(src: str, dst: Path, expected: str, *, algo: str = "sha1") -> None:
    """Copy `src` (its content, for a compressed `.gz` file) to `dst`, which must hash to `expected`."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.endswith(".gz"):
        with gzip.open(src, "rb") as f, dst.open("wb") as out:
            shutil.copyfileobj(f, out, CHUNK)
    else:
        shutil.copyfile(src, dst)
    actual = sha1_file(dst) if algo == "sha1" else sha256_file(dst)
    if actual != expected:
        raise InputError(
            src,
            f"the file changed while the run was scoring it ({algo} {expected[:12]}… is now {actual[:12]}…)",
        )


def eval_place(i: int, f: EvalFile) -> str:
    """Where the run archives its `i`-th eval-set file, relative to the artifact root."""
    return f"inputs/{i}/{f.stem}{inner(Path(f.path)).suffix}"


def prompt_place(prompt_path: str) -> str:
    """Where the run archives its prompt, relative to the artifact root."""
    return f"prompt/{Path(prompt_path).name}"


def _archive_eval_file(i: int, f: EvalFile, root: Path) -> EvalFile:
    rel = eval_place(i, f)
    dst = root / rel
    if f.data is not None:  # a derived subset: its bytes, not the source file's
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.data)
    else:
        _verified_copy(f.path, dst, f.sha1)
    return f.model_copy(update={"artifact_path": rel})


def prediction_record(p: Prediction) -> dict[str, object]:
    """A prediction as a line of a predictions file (SPEC §6), as the loaders read it back."""
    obj: dict[str, object] = {"id": p.case_id, "answer": p.answer}
    if p.contexts:
        obj["contexts"] = [c.model_dump(exclude_none=True) for c in p.contexts]
    for key in ("citations", "latency_ms", "usage"):
        if getattr(p, key) is not None:
            obj[key] = getattr(p, key)
    return obj


def _archive_predictions(result: RunResult, root: Path) -> tuple[str, str]:
    gen = result.generation
    if gen.source_path is not None:
        src = Path(gen.source_path)
        expected = gen.provenance["predictions_sha1"]
        if result.manifest.subset is None:
            rel = f"predictions/{inner(src).name}"
            _verified_copy(str(src), root / rel, expected)
        else:
            from ragtrack.inputs.predictions import filter_prediction_file

            rel = f"predictions/{inner(src).stem}_dev{result.manifest.subset.n}{inner(src).suffix}"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            keep = {c.id for c in result.eval_set.cases}
            filter_prediction_file(src, root / rel, result.all_cases, keep, expected)
    else:
        rel = "predictions/predictions.jsonl"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps(prediction_record(p), ensure_ascii=False) for p in gen.predictions if not p.missing
        ]
        (root / rel).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return rel, sha1_file(root / rel)


def _compressed(root: Path, rel: str, sizes: dict[str, int]) -> str:
    """`rel`, or `rel.gz` when the file is larger than `COMPRESS_ABOVE`: gzip with no timestamp (the same
    bytes give the same archive), the original removed, its size recorded in `sizes` by the new path."""
    path = root / rel
    size = path.stat().st_size
    if size <= COMPRESS_ABOVE:
        return rel
    with path.open("rb") as src, gzip.GzipFile(root / f"{rel}.gz", "wb", compresslevel=6, mtime=0) as dst:
        shutil.copyfileobj(src, dst, CHUNK)
    path.unlink()
    sizes[f"{rel}.gz"] = size
    return f"{rel}.gz"


def write_archive(result: RunResult, root: Path) -> RunManifest:
    """Archive the run's inputs under `root`; the manifest with every archived path and hash."""
    m = result.manifest
    sizes: dict[str, int] = {}
    files = [_archive_eval_file(i, f, root) for i, f in enumerate(m.eval_files)]
    files = [
        f.model_copy(update={"artifact_path": _compressed(root, f.artifact_path, sizes)})
        if f.artifact_path
        else f
        for f in files
    ]
    prompt_rel = prompt_place(m.prompt_path)
    _verified_copy(m.prompt_path, root / prompt_rel, m.prompt_sha256, algo="sha256")
    pred_rel, pred_sha1 = _archive_predictions(result, root)
    return m.model_copy(
        update={
            "eval_files": files,
            "prompt_artifact_path": _compressed(root, prompt_rel, sizes),
            "predictions_artifact_path": _compressed(root, pred_rel, sizes),
            "predictions_sha1": pred_sha1,
            "archived_sizes": sizes,
        }
    )


class ArchivedRun(BaseModel):
    """A run's artifacts downloaded under `root`, read through its manifest."""

    model_config = ConfigDict(frozen=True)

    root: Path
    manifest: RunManifest

    @classmethod
    def read(cls, root: Path, what: str) -> ArchivedRun:
        """The archive under `root`; `what` names the run in errors (e.g. `run 3f2a…`)."""
        path = root / MANIFEST
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError:
            raise InputError(what, f"has no {MANIFEST}: not a run logged by ragtrack") from None
        except (UnicodeDecodeError, ValueError) as e:
            raise InputError(f"{what}: {MANIFEST}", f"not valid JSON ({e})") from None
        try:
            manifest = RunManifest.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise InputError(
                f"{what}: {MANIFEST}", f"not a ragtrack manifest: {err['msg']}", field=field
            ) from None
        return cls(root=root, manifest=manifest)

    def path(self, rel: str | None, what: str, field: str) -> Path:
        """The local path of an archived file. `rel` comes from the manifest (`field` names it there) and
        must lead, once resolved (symbolic links too), to a file inside the downloaded run: the manifest
        never points audit or rescore at a file of this machine."""
        if rel is None:
            raise InputError(str(self.root / what), f"the run's archive has no {what}")
        root = self.root.resolve()
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            raise InputError(
                str(self.root / MANIFEST), f"{rel!r} lies outside the run's artifacts: refused", field=field
            )
        if not path.is_file():
            raise InputError(str(self.root / rel), f"the run's archive has no {what}")
        if rel.endswith(".gz"):
            return self._inflated(
                rel, path, root / INFLATED / path.relative_to(root).as_posix().removesuffix(".gz")
            )
        return path

    def _inflated(self, rel: str, path: Path, out: Path) -> Path:
        """The compressed archived file `path` (`rel` in the manifest), inflated once to `out` (under
        `.inflated/`, by its resolved place); at most the size the manifest records for it (more, or
        damaged, is refused)."""
        if out.is_file():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        limit = self.manifest.archived_sizes.get(rel)
        if limit is None:
            raise InputError(
                str(self.root / MANIFEST),
                f"{rel!r} is compressed but its size is not recorded: refused",
                field="archived_sizes",
            )
        part = out.with_name(f".{out.name}.part")
        written = 0
        try:
            with gzip.open(path, "rb") as src, part.open("wb") as dst:
                while block := src.read(CHUNK):
                    written += len(block)
                    if written > limit:
                        raise InputError(
                            str(path), f"inflates beyond the {limit} bytes the manifest records: refused"
                        )
                    dst.write(block)
        except (OSError, EOFError, zlib.error) as e:
            part.unlink(missing_ok=True)
            raise InputError(str(path), f"not a readable gzip file ({e})") from None
        except InputError:
            part.unlink(missing_ok=True)
            raise
        part.replace(out)
        return out

    def eval_path(self, i: int) -> Path:
        f = self.manifest.eval_files[i]
        return self.path(f.artifact_path, f"eval-set file {f.stem}", f"eval_files[{i}].artifact_path")

    @property
    def eval_paths(self) -> list[Path]:
        return [self.eval_path(i) for i in range(len(self.manifest.eval_files))]

    @property
    def predictions_path(self) -> Path:
        return self.path(
            self.manifest.predictions_artifact_path, "predictions file", "predictions_artifact_path"
        )

    @property
    def prompt_path(self) -> Path:
        return self.path(self.manifest.prompt_artifact_path, "prompt file", "prompt_artifact_path")

    @property
    def config_path(self) -> Path:
        return self.path(CONFIG, CONFIG, CONFIG)

    def places(self) -> dict[str, str | None]:
        """Where each archived input must lie (as `write_archive` puts it), by its manifest field."""
        m = self.manifest
        out: dict[str, str | None] = {
            f"eval_files[{i}].artifact_path": eval_place(i, f) for i, f in enumerate(m.eval_files)
        }
        out["prompt_artifact_path"] = prompt_place(m.prompt_path)
        pred = m.predictions_artifact_path or ""
        out["predictions_artifact_path"] = (
            pred if pred.startswith("predictions/") and pred.count("/") == 1 else None
        )
        return out

    def cases_file(self) -> Any:
        """The per-case table (`cases.parquet`) as a `pyarrow.parquet.ParquetFile`, read a row group at a
        time."""
        import pyarrow.parquet as pq

        path = self.path(CASES, CASES, CASES)
        try:
            return pq.ParquetFile(path)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise InputError(str(path), f"not a readable Parquet table ({type(e).__name__}: {e})") from None

    def cases(self) -> pandas.DataFrame:
        """The per-case table (`cases.parquet`)."""
        import pandas as pd

        path = self.path(CASES, CASES, CASES)
        try:
            return pd.read_parquet(path)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise InputError(str(path), f"not a readable Parquet table ({type(e).__name__}: {e})") from None
