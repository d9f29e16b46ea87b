"""One evaluation job, pure: config in, scored result out, nothing logged.

- `runner`: `prepare(config)` and `run(config) -> RunResult` (generate or replay, score, gate).
- `results`, `report`: the result and its Markdown report.
- `jobkey`: a job's key, to reuse a finished run.
- `trust`: what a value read from someone else's run may reach (hosts, secrets, paths).
- `case_traces`: each case as a trace record.
- `rescore`: a logged run's archived inputs scored again.

May import: every package below `ragtrack.tracking` (core, nlp, clients, inputs, index, generators, scorers,
analysis).
"""
