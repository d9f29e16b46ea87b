"""A `Comparison` as a person reads it: a terminal table (rich), Markdown, JSON and a PNG chart."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragtrack.analysis.compare import NO_TERMS, Comparison, LoggedDiff, MetricDiff
from ragtrack.analysis.summary import DEFAULT_HEADLINE

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "output_stem",
    "render_markdown",
    "render_overview",
    "render_png",
    "render_terminal",
    "write_outputs",
]


_COLORS = {"worse": "red", "better": "green"}


def _f(v: float | str | None, signed: bool = False) -> str:
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if math.isnan(v):
        return "n/a"
    return f"{v:+.4g}" if signed else f"{v:.4g}"


def _ci(m: MetricDiff) -> str:
    return f"[{_f(m.ci_low, True)}, {_f(m.ci_high, True)}]"


def _mcnemar(m: MetricDiff) -> str:
    t = m.mcnemar
    return "–" if t is None else f"{t.pass_to_fail} pass→fail, {t.fail_to_pass} fail→pass, p={t.p_value:.3g}"


def _direction(m: MetricDiff) -> str:
    return "higher" if m.higher_is_better else "lower"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _method(c: Comparison) -> str:
    return (
        f"{c.n_shared} cases paired by id. Interval: paired bootstrap, {c.n_resamples} resamples of the "
        f"cases, seed {c.seed}, {100 * c.confidence:g}% percentile interval of B − A. McNemar: exact "
        "two-sided binomial test of the discordant pass/fail pairs. Significant: the whole interval lies "
        "on one side of 0 (and, for a pass/fail metric, McNemar's p is below 1 − confidence)."
    )


def output_stem(c: Comparison) -> str:
    """`compare_<A id>_vs_<B id>`: the file name (without suffix) of this comparison's outputs."""
    return f"compare_{c.run_a.run_id}_vs_{c.run_b.run_id}"


# ------------------------------------------------------------------ Markdown


def _md_cell(text: str, limit: int = 300) -> str:
    return _one_line(text, limit).replace("|", "\\|")


def _diffs_table(title: str, rows: list[LoggedDiff]) -> list[str]:
    if not rows:
        return []
    lines = ["", f"## {title}", "", "| name | A | B |", "|---|---|---|"]
    lines += [f"| {r.name} | {_md_cell(_f(r.a), 120)} | {_md_cell(_f(r.b), 120)} |" for r in rows]
    return lines


def render_markdown(c: Comparison) -> str:
    a, b = c.run_a, c.run_b
    lines = [
        f"# ragtrack compare: {b.run_name} (B) against {a.run_name} (A)",
        "",
        "| | run | what | eval set |",
        "|---|---|---|---|",
        f"| A | `{a.run_id}` ({a.run_name}) | {a.label} | `{a.eval_set_version}` |",
        f"| B | `{b.run_id}` ({b.run_name}) | {b.label} | `{b.eval_set_version}` |",
        "",
        _method(c),
    ]
    lines += ["", *(f"- **Note**: {n}" for n in c.notes)] if c.notes else []
    lines += [
        "",
        "## Metrics",
        "",
        "| metric | better | A | B | B − A | 95% CI | McNemar | cases moved (worse / better) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in c.metrics:
        verdict = f"**{m.verdict}**" if m.verdict in _COLORS else m.verdict
        lines.append(
            f"| {m.metric} | {_direction(m)} | {_f(m.mean_a)} | {_f(m.mean_b)} | {_f(m.diff, True)} | "
            f"{_ci(m)} | {_mcnemar(m)} | {m.n_worse} / {m.n_better} | {verdict} |"
        )
    lines += _diffs_table("Run-level metrics that differ", c.run_level)
    lines += _diffs_table("What differs between the runs (params)", c.stamps)
    moved = [m for m in c.metrics if m.moved]
    if moved:
        lines += ["", "## Cases that moved most", ""]
    for m in moved:
        lines += [
            f"### {m.metric} ({m.n_worse} worse, {m.n_better} better; {_direction(m)} is better)",
            "",
            "| case | question | A | B | answer A | answer B |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {_md_cell(x.case_id)} | {_md_cell(x.question, 120)} | {_f(x.value_a)} | {_f(x.value_b)} | "
            f"{_md_cell(x.answer_a)} | {_md_cell(x.answer_b)} |"
            for x in m.moved
        ]
        lines.append("")
    if c.not_compared:
        lines += ["", "## Not compared case by case", "", *(f"- {n}" for n in c.not_compared)]
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------ terminal


def _short_name(metric: str) -> str:
    return metric.split("/", 1)[-1]


def render_overview(comparisons: Sequence[Comparison], console: Console) -> None:
    """One row per run B against the common baseline A: how many metrics moved each way, and the
    headline's change."""
    from rich.table import Table

    if not comparisons:
        return
    a = comparisons[0].run_a
    table = Table(
        title=f"every run against the baseline {a.run_id} ({a.run_name}) · {a.label}", title_justify="left"
    )
    for col in ("run", "name", "label", "better", "worse", "n.s.", "headline: B − A [CI]"):
        table.add_column(
            col, no_wrap=col != "label", justify="right" if col in ("better", "worse", "n.s.") else "left"
        )
    for c in comparisons:
        verdicts = [m.verdict for m in c.metrics]
        head = next(
            (m for m in c.metrics if m.metric == DEFAULT_HEADLINE), c.metrics[0] if c.metrics else None
        )
        change = f"{head.metric} {_f(head.diff, True)} {_ci(head)}" if head is not None else "–"
        table.add_row(
            c.run_b.run_id[:12],
            c.run_b.run_name,
            c.run_b.label,
            f"[green]{verdicts.count('better')}[/]",
            f"[red]{verdicts.count('worse')}[/]",
            str(verdicts.count("no significant difference")),
            change,
        )
    console.print(table)


def render_terminal(c: Comparison, console: Console, top: int = 5) -> None:
    """The metrics table, then the cases that moved most (each once, with all its changes and both
    answers)."""
    from rich.table import Table

    a, b = c.run_a, c.run_b
    console.print(f"[bold]A[/] {a.run_id} ({a.run_name}) · {a.label} · {a.eval_set_version}", highlight=False)
    console.print(f"[bold]B[/] {b.run_id} ({b.run_name}) · {b.label} · {b.eval_set_version}", highlight=False)
    for n in c.notes:
        console.print(f"[yellow]note:[/] {n}", highlight=False)
    table = Table(
        title=f"B − A over {c.n_shared} paired cases (↑ higher is better, ↓ lower)", title_justify="left"
    )
    table.add_column("metric", no_wrap=True)
    for col in ("A", "B", "B − A", f"{100 * c.confidence:g}% CI", "McNemar pass→fail/fail→pass", "verdict"):
        table.add_column(col, justify="left" if col in ("verdict",) else "right", no_wrap=True)
    for m in c.metrics:
        color = _COLORS.get(m.verdict)
        verdict = (
            f"[{color}]{m.verdict}[/]" if color else ("n.s." if m.verdict.startswith("no ") else m.verdict)
        )
        t = m.mcnemar
        mcnemar = "" if t is None else f"{t.pass_to_fail}/{t.fail_to_pass} p={t.p_value:.2g}"
        arrow = "↑" if m.higher_is_better else "↓"
        table.add_row(
            f"{m.metric} {arrow}", _f(m.mean_a), _f(m.mean_b), _f(m.diff, True), _ci(m), mcnemar, verdict
        )
    if c.metrics:
        console.print(table)
    else:
        console.print("no metric compared case by case", highlight=False)
    by_reason: dict[str, list[str]] = {}  # counts without terms show below when they differ
    for n in c.not_compared:
        if not n.endswith(NO_TERMS):
            metric, _, why = n.partition(": ")
            by_reason.setdefault(why, []).append(metric)
    if by_reason:
        console.print("[yellow]not compared:[/]", highlight=False)
    for why, metrics in by_reason.items():
        console.print(f"  {', '.join(metrics)}: {why}", highlight=False)
    for title, rows in (("run-level metrics that differ", c.run_level), ("params that differ", c.stamps)):
        if rows:
            console.print(f"{title}:", highlight=False)
        for d in rows:
            console.print(f"  {d.name}: {_one_line(_f(d.a), 60)} → {_one_line(_f(d.b), 60)}", highlight=False)
    cases = _moved_cases(c, top)
    if cases:
        moved = Table(
            title="cases that moved most (all of them: --out DIR, --json, --log)",
            title_justify="left",
            show_lines=True,
        )
        for col, ratio in (("case", 1), ("changes", 3), ("answer A", 4), ("answer B", 4)):
            moved.add_column(col, ratio=ratio, overflow="fold")
        for case_id, changes, answer_a, answer_b in cases:
            moved.add_row(case_id, "\n".join(changes), _one_line(answer_a, 200), _one_line(answer_b, 200))
        console.print(moved)
    console.print(_method(c), style="dim", highlight=False)


def _moved_cases(c: Comparison, top: int) -> list[tuple[str, list[str], str, str]]:
    """Up to `top` cases, taken from the metrics' biggest moves (significant metrics first), each with
    every change it had."""
    order = sorted(c.metrics, key=lambda m: m.verdict not in _COLORS)
    picked: dict[str, tuple[str, str]] = {}
    for m in order:
        for x in m.moved:
            if len(picked) < top:
                picked.setdefault(x.case_id, (x.answer_a, x.answer_b))
    out = []
    for case_id, (answer_a, answer_b) in picked.items():
        changes = [
            f"[{'red' if x.regression else 'green'}]{_short_name(m.metric)} "
            f"{_f(x.value_a)}→{_f(x.value_b)}[/]"
            for m in c.metrics
            for x in m.moved
            if x.case_id == case_id
        ]
        out.append((case_id, changes, answer_a, answer_b))
    return out


# ------------------------------------------------------------------ PNG


def render_png(c: Comparison, path: Path) -> None:
    """One row per metric: `B − A` with its interval, red when significantly worse, green when better."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = c.metrics or []
    n = max(1, len(metrics))
    fig, axes = plt.subplots(n, 1, figsize=(8, 0.6 * n + 1.2), squeeze=False)
    for ax, m in zip(axes[:, 0], metrics, strict=False):  # no metric: one empty row of axes
        color = {"worse": "tab:red", "better": "tab:green"}.get(m.verdict, "tab:gray")
        if not math.isnan(m.ci_low):
            ax.errorbar(
                [m.diff],
                [0],
                xerr=[[m.diff - m.ci_low], [m.ci_high - m.diff]],
                fmt="o",
                color=color,
                capsize=4,
            )
        ax.axvline(0, color="black", linewidth=0.8)
        span = 0.0 if math.isnan(m.ci_low) else max(abs(m.ci_low), abs(m.ci_high), abs(m.diff))
        span = span or 1.0  # no difference at all: a plain axis around 0
        ax.set_xlim(-1.15 * span, 1.15 * span)
        ax.set_yticks([])
        ax.set_ylabel(
            f"{m.metric} {'↑' if m.higher_is_better else '↓'}",
            rotation=0,
            ha="right",
            va="center",
            fontsize=8,
        )
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle(
        f"B − A, {100 * c.confidence:g}% paired bootstrap CI\nA {c.run_a.run_name} · B {c.run_b.run_name}",
        fontsize=9,
    )
    height = 0.6 * n + 1.2
    fig.subplots_adjust(
        left=0.4, right=0.97, top=1 - 0.75 / height, bottom=0.4 / height, hspace=1.2
    )  # tight_layout: 2x slower
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_outputs(c: Comparison, out_dir: Path) -> list[Path]:
    """`<stem>.md`, `<stem>.json` and `<stem>.png` in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(c)
    md, js, png = (out_dir / f"{stem}{s}" for s in (".md", ".json", ".png"))
    md.write_text(render_markdown(c), encoding="utf-8")
    js.write_text(c.model_dump_json(indent=2) + "\n", encoding="utf-8")
    render_png(c, png)
    return [md, js, png]
