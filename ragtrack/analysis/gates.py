"""Gates: pure threshold checks over a run's metrics.

A gate is written in config as a list of conditions, each `"<metric> <op> <threshold>"`,
e.g. `dev100: ["eval_json_v2/eval_score_avg >= 95", "eval_json_v2/schema_pass_rate >= 0.98"]`.
It passes when every condition holds; it is *skipped* (reported, never counted as a
pass) when a metric it reads was not computed in this run.

Before that, a gate whose metrics all belong to registered scorers that are not part of
the run is *not applicable* and is dropped (`applicable_gates`): the shipped G1–G5 when
only `eval_json_v2` runs. Metrics `predictions/...` are always available; a metric whose
prefix names no registered scorer (a typo) keeps its gate, which is then skipped, so
that it is seen.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Literal, cast

from ragtrack.core.errors import InputError
from ragtrack.core.types import GateCondition, GateResult, GateSpec
from ragtrack.scorers.base import SCORERS

__all__ = ["applicable_gates", "evaluate_gates", "failed_conditions", "gate_metrics", "parse_gates"]

_Op = Literal[">=", "<=", ">", "<", "=="]  # `GateCondition.op`
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_CONDITION = re.compile(r"^\s*(\S+)\s*(>=|<=|==|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


def parse_gates(raw: Mapping[str, Sequence[str]], where: str = "gates") -> list[GateSpec]:
    """Gates from config: `{name: ["metric op threshold", ...]}`."""
    gates = []
    for name, conditions in raw.items():
        if isinstance(conditions, str):
            conditions = [conditions]
        parsed = []
        for i, text in enumerate(conditions):
            m = _CONDITION.match(str(text))
            if not m:
                raise InputError(
                    where,
                    f"cannot parse {text!r}; expected '<metric> <op> <number>' with op one of >= <= > < ==",
                    field=f"{name}[{i}]",
                )
            op = cast(_Op, m.group(2))  # `_CONDITION` matches only these
            parsed.append(GateCondition(metric=m.group(1), op=op, threshold=float(m.group(3))))
        if not parsed:
            raise InputError(where, "a gate needs at least one condition", field=name)
        gates.append(GateSpec(name=name, conditions=parsed))
    return gates


def applicable_gates(
    gates: Sequence[GateSpec], scorer_names: Collection[str]
) -> tuple[list[GateSpec], list[GateSpec]]:
    """`(kept, dropped)`: a gate is dropped when every metric it reads belongs to a
    registered scorer not in `scorer_names`."""
    absent = set(SCORERS.names()) - set(scorer_names)
    kept: list[GateSpec] = []
    dropped: list[GateSpec] = []
    for g in gates:
        foreign = all(c.metric.partition("/")[0] in absent for c in g.conditions)
        (dropped if foreign else kept).append(g)
    return kept, dropped


def evaluate_gates(gates: Sequence[GateSpec], metrics: Mapping[str, float]) -> list[GateResult]:
    """Each gate's verdict; a NaN or absent metric makes the gate skipped."""
    results = []
    for g in gates:
        absent = [c.metric for c in g.conditions if c.metric not in metrics or math.isnan(metrics[c.metric])]
        if absent:
            results.append(
                GateResult(
                    name=g.name, passed=False, skipped=True, detail=f"not computed: {', '.join(absent)}"
                )
            )
            continue
        parts, ok = [], True
        for c in g.conditions:
            value = metrics[c.metric]
            holds = _OPS[c.op](value, c.threshold)
            ok = ok and holds
            parts.append(f"{c.metric} = {value:.4g} {c.op} {c.threshold:g}: {'ok' if holds else 'FAIL'}")
        results.append(GateResult(name=g.name, passed=ok, detail="; ".join(parts)))
    return results


def gate_metrics(results: Sequence[GateResult]) -> dict[str, float]:
    """`gate/<name>` = 1 or 0 for every evaluated gate, and `gate/all` over them."""
    evaluated = [r for r in results if not r.skipped]
    out = {f"gate/{r.name}": 1.0 if r.passed else 0.0 for r in evaluated}
    if evaluated:
        out["gate/all"] = 1.0 if all(r.passed for r in evaluated) else 0.0
    return out


_NEGATED = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "==": "!="}


def failed_conditions(gate: GateSpec, metrics: Mapping[str, float]) -> list[str]:
    """Each condition of `gate` that does not hold, as `metric value <negated op> threshold`.

    E.g. `eval_json_v2/eval_score_avg 74.2 < 95`; an absent or NaN metric reads `metric not computed`.
    """
    out = []
    for c in gate.conditions:
        value = metrics.get(c.metric, math.nan)
        if math.isnan(value):
            out.append(f"{c.metric} not computed")
        elif not _OPS[c.op](value, c.threshold):
            out.append(f"{c.metric} {value:.4g} {_NEGATED[c.op]} {c.threshold:g}")
    return out
