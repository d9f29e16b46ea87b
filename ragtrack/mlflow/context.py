"""`mlflow.run_context_provider`: with `RAGTRACK_CONTEXT=1`, runs started by `mlflow.start_run()` carry
ragtrack's version and the git state of the current directory as tags.

MLflow registers this provider in every process that imports it where ragtrack is installed,
so it costs one environment look-up unless it is switched on.
"""

from __future__ import annotations

import os

from mlflow.tracking.context.abstract_context import RunContextProvider

__all__ = ["CONTEXT_ENV", "RagtrackRunContext"]

CONTEXT_ENV = "RAGTRACK_CONTEXT"


class RagtrackRunContext(RunContextProvider):
    """Tags `ragtrack.version`, `ragtrack.git_commit` and `ragtrack.git_dirty` (as ragtrack's own runs log
    them as params)."""

    def in_context(self) -> bool:
        return os.environ.get(CONTEXT_ENV) == "1"

    def tags(self) -> dict[str, str]:
        from ragtrack import __version__
        from ragtrack.core.provenance import git_state

        commit, dirty = git_state()
        return {
            "ragtrack.version": __version__,
            "ragtrack.git_commit": commit,
            "ragtrack.git_dirty": str(dirty).lower(),
        }
