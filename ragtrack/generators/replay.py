"""Generator `replay`: answers recorded elsewhere, streamed from a predictions JSONL file."""

from __future__ import annotations

from collections.abc import Sequence

from ragtrack.generators.base import Generator, GeneratorParams, register_generator
from ragtrack.predictions import match_prediction_file
from ragtrack.types import EvalCase, Generation

__all__ = ["ReplayGenerator"]


class ReplayParams(GeneratorParams):
    path: str  # predictions JSONL (SPEC §6)


@register_generator
class ReplayGenerator(Generator):
    name = "replay"
    version = "1"
    Params = ReplayParams

    def generate(self, cases: Sequence[EvalCase], prompt_template: str) -> Generation:
        """Match the file's predictions to `cases`; its sha1 is `provenance["predictions_sha1"]`."""
        return match_prediction_file(self.p.path, cases)
