"""ragtrack's Hydra sweeper plugin: Hydra only instantiates plugins defined under `hydra_plugins`."""

from ragtrack.app.sweep import TrackedSweeper

__all__ = ["RagtrackSweeper"]


class RagtrackSweeper(TrackedSweeper):
    """`hydra/sweeper=ragtrack`: see `ragtrack.app.sweep.TrackedSweeper`."""
