"""Generator `replay`: answers recorded elsewhere, read from a predictions JSONL file."""

from __future__ import annotations

from collections.abc import Sequence

from ragtrack.generators.base import Generator, GeneratorParams, register_generator
from ragtrack.hashing import sha1_file
from ragtrack.predictions import load_predictions, match_predictions
from ragtrack.types import EvalCase, Generation

__all__ = ["ReplayGenerator"]


class ReplayParams(GeneratorParams):
    path: str  # predictions JSONL (SPEC §6)


@register_generator
class ReplayGenerator(Generator):
    name = "replay"
    version = "1"
    Params = ReplayParams

    def prepare(self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None) -> Generation:
        """The recorded answers are the input: read and validated before the run starts."""
        kept = [c for c in cases if keep is None or c.id in keep]
        generation = match_predictions(kept, load_predictions(self.p.path))
        return generation.model_copy(
            update={"provenance": {"predictions_sha1": sha1_file(self.p.path)}, "source_path": self.p.path}
        )

    def generate(self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None) -> Generation:
        return self.prepare(cases, prompt_template, keep=keep)
