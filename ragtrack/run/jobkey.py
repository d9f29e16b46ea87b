"""A job's key: equal keys mean the job would produce the same scores, so a finished run can be reused.

The key is the sha256 of everything that shapes a job's numbers: the resolved config's
sha256 (model, adapter, index, prompt, eval set, generator and scorer parameters,
gates, stages; not `tracking`), the versions of the data read (each eval-set file's
sha1, the prompt's sha256, the index version, the generator's provenance such as the
replayed predictions file's sha1) and each scorer's and the generator's name, version
and parameters. A re-run sweep skips a job whose key matches a FINISHED run of the
experiment (`ragtrack.job_key`), unless `tracking.force=true`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtrack.core.hashing import sha256_json

if TYPE_CHECKING:
    from ragtrack.run.runner import Stage

__all__ = ["JOB_KEY_TAG", "job_key"]

JOB_KEY_TAG = "ragtrack.job_key"


def job_key(stages: Sequence[Stage]) -> str:
    """The key of a prepared job (its stages as `runner.prepare` returns them)."""
    full = stages[-1]  # a staged job's dev subset is drawn from the full set by config (seed, n)
    return sha256_json(
        {
            "config_sha256": full.cfg.sha256,
            "eval_set_version": full.eval_set.version,
            "prompt_sha256": full.prompt.sha256,
            "index_version": full.index_version,
            "generator": full.generator.info.model_dump(mode="json"),
            "generator_provenance": full.generation.provenance if full.generation is not None else {},
            "scorers": [s.info.model_dump(mode="json") for s in full.scorers],
        }
    )
