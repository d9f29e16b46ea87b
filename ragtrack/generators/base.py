"""The generator interface and registry.

A generator turns a batch of cases into one `Prediction` per case (a `Generation`). It
is registered under a name and a version; its parameters are validated and logged.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from ragtrack.core.registry import Component, Params, Registry
from ragtrack.core.types import EvalCase, Generation

if TYPE_CHECKING:
    from ragtrack.index.build import IndexSpec

__all__ = [
    "GENERATORS",
    "Generator",
    "GeneratorParams",
    "build_generator",
    "get_generator_class",
    "generator_names",
    "register_generator",
]


GeneratorParams = Params  # every generator's parameter model derives from this


class Generator(Component):
    """Base class: subclasses set `name`, `version`, `Params` and implement `generate`."""

    kind: ClassVar[str] = "generator"
    # retrieves from the configured index: the runner sets `index` before `prepare`
    uses_index: ClassVar[bool] = False
    # with uses_index: a recorded (not built) index is no error, `index` stays None
    index_optional: ClassVar[bool] = False
    index: IndexSpec | None = None

    def prepare(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation | None:
        """Check this generator's own inputs before any run is created (bad input fails early).

        A generator whose answers are already recorded (replay) returns them here; one that
        must produce them (a model, a function) returns None and `generate` runs in the run.
        """
        return None

    @abstractmethod
    def generate(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        """One prediction per case of `cases` whose id is in `keep` (all when None), in case order.

        `cases` is the whole eval set even when a dev stage scores a subset (`keep`), so that
        recorded answers for the other cases are told apart from answers matching no case.
        """


GENERATORS: Registry[Generator] = Registry(
    "generator",
    {
        "callable": "ragtrack.generators.callable_fn",
        "extractive": "ragtrack.generators.extractive",
        "openai": "ragtrack.generators.openai_chat",
        "replay": "ragtrack.generators.replay",
    },
)
register_generator = GENERATORS.register
generator_names = GENERATORS.names
get_generator_class = GENERATORS.get
build_generator = GENERATORS.build
