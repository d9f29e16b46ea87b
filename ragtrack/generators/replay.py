"""Generator `replay`: answers recorded elsewhere, streamed from a predictions JSONL file."""

from __future__ import annotations

from collections.abc import Sequence

from ragtrack.core.types import EvalCase, Generation
from ragtrack.generators.base import Generator, GeneratorParams, register_generator
from ragtrack.inputs.predictions import match_prediction_file

__all__ = ["ReplayGenerator"]


class ReplayParams(GeneratorParams):
    path: str  # predictions JSONL (SPEC §6)


@register_generator
class ReplayGenerator(Generator):
    name = "replay"
    version = "1"
    Params = ReplayParams
    p: ReplayParams

    def prepare(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        """The recorded answers are the input: read and validated before the run starts.

        Streamed against `cases` (the whole eval set): a dev stage's predictions for cases
        outside its subset are counted as such, not as unmatched. The file's sha1 is
        `provenance["predictions_sha1"]`.
        """
        generation = match_prediction_file(self.p.path, cases, keep=keep)
        return generation.model_copy(update={"source_path": self.p.path})

    def generate(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        return self.prepare(cases, prompt_template, keep=keep)
