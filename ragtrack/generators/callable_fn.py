"""Generator `callable`: a user's Python function `module:function` answers each case.

The function is called as `fn(case, prompt)` with the `EvalCase` and the rendered prompt
text, and returns either the answer text or a dict in the predictions-file shape
(`answer`, optional `contexts`, `citations`, `latency_ms`, `usage`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase, Generation, Prediction
from ragtrack.generators.base import Generator, GeneratorParams, register_generator
from ragtrack.inputs.predictions import parse_prediction
from ragtrack.inputs.prompts import render_prompt

__all__ = ["CallableGenerator", "resolve_target"]


class CallableParams(GeneratorParams):
    target: str  # "package.module:function"


def resolve_target(target: str) -> Callable[..., Any]:
    """Import `module:function`; errors name the target."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise InputError("generator.target", f"expected 'module:function', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise InputError("generator.target", f"cannot import module {module_name!r}: {e}") from None
    fn: Any = module  # then each attribute along `attr`
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise InputError("generator.target", f"module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise InputError("generator.target", f"{target!r} is not callable")
    return fn


@register_generator
class CallableGenerator(Generator):
    name = "callable"
    version = "1"
    Params = CallableParams
    p: CallableParams

    def prepare(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> None:
        resolve_target(self.p.target)  # an unimportable target is bad input, found before the run starts

    def generate(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        fn = resolve_target(self.p.target)
        preds = [self._one(fn, case, prompt_template) for case in cases if keep is None or case.id in keep]
        return Generation(predictions=preds)

    def _one(self, fn: Callable[..., Any], case: EvalCase, template: str) -> Prediction:
        where = f"case {case.id!r}"
        t0 = time.perf_counter()
        try:
            out = fn(case, render_prompt(template, case))
        except Exception as e:
            raise RuntimeError(f"{self.p.target} failed on {where}: {type(e).__name__}: {e}") from e
        elapsed_ms = (time.perf_counter() - t0) * 1000.0
        if isinstance(out, str):
            return Prediction(case_id=case.id, answer=out, latency_ms=elapsed_ms)
        if isinstance(out, dict):
            rec = parse_prediction({"id": case.id, "latency_ms": elapsed_ms, **out}, self.p.target, where)
            return rec.prediction.model_copy(update={"case_id": case.id})
        raise InputError(self.p.target, f"returned {type(out).__name__}; expected str or dict", where=where)
