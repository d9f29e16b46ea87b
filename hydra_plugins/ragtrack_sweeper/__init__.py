"""ragtrack's Hydra sweeper plugin: Hydra only instantiates plugins defined under `hydra_plugins`."""

from ragtrack.sweep import TrackedSweeper

__all__ = ["RagtrackSweeper"]


class RagtrackSweeper(TrackedSweeper):
    """`hydra/sweeper=ragtrack`: see `ragtrack.sweep.TrackedSweeper`."""
