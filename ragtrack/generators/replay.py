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

    def generate(self, cases: Sequence[EvalCase], prompt_template: str) -> Generation:
        generation = match_predictions(cases, load_predictions(self.p.path))
        return generation.model_copy(update={"provenance": {"predictions_sha1": sha1_file(self.p.path)}})
