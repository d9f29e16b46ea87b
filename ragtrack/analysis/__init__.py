"""Pure statistics over scored runs: which configuration is better, by how much, and how sure.

- `stats`: seeded bootstrap intervals.
- `compare`: two runs case by case (paired bootstrap, McNemar, moved cases); `compare_report` renders it.
- `summary`: a sweep's verdict (a winner only when it beats every other job significantly).
- `gates`: pass/fail thresholds on metrics.
- `calibration`: a judge's scores against human labels.

May import: `ragtrack.core`, `ragtrack.scorers` (per-case terms of each metric).
"""
