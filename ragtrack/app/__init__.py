"""The commands people run: the `ragtrack` CLI, the Hydra app and its sweeper, audit, the dev server.

- `cli`: `ragtrack run|score|compare|audit|rescore|…` (entry point `ragtrack.app.cli:main`); `cli_runs` the
  commands on logged runs.
- `hydra_app`: `ragtrack run` and multirun through Hydra; `sweep` the sweeper (`hydra/sweeper=ragtrack`).
- `audit`: a logged run proved from what it logged.
- `devserver`: `make server` (MLflow server with PostgreSQL and S3), not imported by the rest.

May import: everything.
"""
