"""Generators: where each case's answer comes from (see `ragtrack.generators.base`).

May import: `ragtrack.core`, `nlp`, `clients`, `inputs`, `index`.
"""

from ragtrack.generators.base import (
    Generator,
    GeneratorParams,
    build_generator,
    generator_names,
    register_generator,
)

__all__ = ["Generator", "GeneratorParams", "build_generator", "generator_names", "register_generator"]
