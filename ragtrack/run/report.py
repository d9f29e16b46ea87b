"""Markdown reports of a run: `report.md` and one section per scorer."""

from __future__ import annotations

import math

from ragtrack.core.types import GateResult, RunManifest, RunResult, ScorerOutput

__all__ = ["REPORT_TABLE_ROWS", "capped_tables", "render_report", "render_scorer_report", "run_label"]

# rows a report's per-case table shows (a 100,000-case table would be 5 MB of Markdown)
REPORT_TABLE_ROWS = 500


def _gates_table(gates: list[GateResult]) -> list[str]:
    if not gates:
        return []
    lines = ["| gate | verdict | detail |", "|---|---|---|"]
    for g in gates:
        verdict = "skipped" if g.skipped else ("**pass**" if g.passed else "**FAIL**")
        lines.append(f"| {g.name} | {verdict} | {g.detail} |")
    return lines


def _fmt(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:.6g}"


def run_label(m: RunManifest) -> str:
    """`<adapter id> · prompt <version>`, or `<model id> (no adapter) · …` for the base model."""
    who = f"{m.model_id} (no adapter)" if m.adapter_id in ("", "none") else m.adapter_id
    return f"{who} · prompt {m.prompt_version}"


def _index_rows(m: RunManifest) -> list[str]:
    """A built index's chunks, chunker and embedder, as one table row (none for a recorded index)."""
    if m.index is None:
        return []
    ix, ch = m.index, m.index.chunker
    return [
        f"| index | {ix.n_chunks} chunks of {ix.n_files} files; chunker size {ch['size']}, "
        f"overlap {ch['overlap']}, boundary {ch['boundary']}; embedder `{ix.embedder_model}` "
        f"(weights sha256 `{ix.embedder_sha256[:12]}…`) |"
    ]


def _list(ids: list[str], total: int, limit: int = 50) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    more = total - min(len(ids), limit)
    return shown + (f" … and {more} more" if more > 0 else "")


def capped_tables(md: str, limit: int = REPORT_TABLE_ROWS) -> str:
    """`md` with each Markdown table cut after `limit` rows, and a line saying how many more there are and
    where."""
    out: list[str] = []
    rows = hidden = 0
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            rows += 1
            if rows > limit + 2:  # the header and its separator, then `limit` rows
                hidden += 1
                continue
        else:
            if hidden:
                out += [
                    "",
                    f"… and {hidden:,} more rows, not shown here: every case's row is in `cases.parquet`.",
                ]
            rows = hidden = 0
        out.append(line)
    return "\n".join(out[:-1])


def render_report(result: RunResult) -> str:
    """The run's report: where it was logged, version stamps, gates, every metric, then each scorer's
    section."""
    m = result.manifest
    g = result.generation
    lines = [f"# ragtrack report: {run_label(m)} · {m.stage}", "", "| stamp | value |", "|---|---|"]
    if m.tracking is not None:
        t = m.tracking
        lines += [
            f"| mlflow run | `{t.run_id}` ({t.run_name}) |",
            f"| experiment | {t.experiment_name} (id {t.experiment_id}) |",
            f"| started | {t.start_time} |",
        ]
    lines += [
        f"| model_id | `{m.model_id}` |",
        f"| adapter_id | `{m.adapter_id}` |",
        f"| index_version | `{m.index_version}` |",
        *_index_rows(m),
        f"| prompt_version | `{m.prompt_version}` |",
        f"| prompt_sha256 | `{m.prompt_sha256}` |",
        *([f"| prompt_uri | `{m.prompt_uri}` |"] if m.prompt_uri else []),
        f"| eval_set_version | `{m.eval_set_version}` |",
        f"| cases | {m.n_cases} (missing predictions: {m.n_missing}, unmatched predictions: {m.n_unmatched}, "
        f"duplicates dropped: {m.duplicates_dropped}) |",
        f"| scorers | {', '.join(f'{s.name} v{s.version}' for s in m.scorers)} |",
        f"| generator | {m.generator.name} v{m.generator.version} |",
        f"| config_sha256 | `{m.config_sha256}` |",
        f"| git | `{m.git_commit}`{' (dirty)' if m.git_dirty else ''} |",
        f"| ragtrack / python | {m.ragtrack_version} / {m.python_version} |",
        f"| packages | {', '.join(f'{k} {v}' for k, v in m.packages.items())} |",
    ]
    if m.subset is not None:
        lines.append(f"| subset | {m.subset.n} cases of `{m.subset.parent_version}`, seed {m.subset.seed} |")
    if g.missing_ids or g.unmatched_keys or g.warnings or g.n_outside_subset:
        lines += ["", "## Predictions", ""]
        lines += [f"- Warning: {w}" for w in g.warnings]
        if g.n_outside_subset:
            lines.append(
                "- Predictions for cases outside this dev subset (not scored, not unmatched): "
                f"{g.n_outside_subset}"
            )
        if g.missing_ids:
            lines.append(
                f"- Cases without a prediction (scored as empty answers): {_list(g.missing_ids, g.n_missing)}"
            )
        if g.unmatched_keys:
            lines.append(f"- Predictions that match no case: {_list(g.unmatched_keys, g.n_unmatched)}")
    if result.gates or m.dropped_gates:
        lines += ["", "## Gates", "", *_gates_table(result.gates)]
    if m.dropped_gates:
        lines += [
            "",
            "Not applicable (they read only metrics of scorers that did not run): "
            f"{', '.join(m.dropped_gates)}",
        ]
    lines += ["", "## Metrics", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in sorted(result.metrics.items())]
    for out in result.outputs:
        lines += ["", capped_tables(out.report_md.rstrip())]
    return "\n".join(lines) + "\n"


def render_scorer_report(result: RunResult, out: ScorerOutput) -> str:
    """One scorer's report with the gates that read its metrics."""
    prefix = f"{out.info.name}/"
    mine = [
        g
        for g, spec in zip(result.gates, result.manifest.gates, strict=True)
        if any(c.metric.startswith(prefix) for c in spec.conditions)
    ]
    lines = [capped_tables(out.report_md.rstrip())]
    if mine:
        lines += ["", "### Gates", "", *_gates_table(mine)]
    return "\n".join(lines) + "\n"
