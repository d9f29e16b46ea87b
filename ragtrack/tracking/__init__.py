"""Everything that talks to MLflow lives in this package; no other ragtrack module imports mlflow.

`sink`: one job's stages as MLflow runs (params, metrics, dataset inputs, artifacts).
`session`: connecting a command to a store (and reaping its dead runs), choosing a run's experiment.
`reaper`: runs left RUNNING by processes that are gone.
`store`: opening a store that several processes share (locked migration, WAL) and race-safe dataset inputs.
`remote`: a store over the network: probed once per command (one line naming the URI when it cannot be
used), retries that outlast a server restart.
`reader`: logged runs read back (record, artifacts, an experiment's runs) for compare, audit and rescore.
`traces`: each case of a run as a trace with assessments (MLflow's evaluation view).
`sweep_summary`: a sweep's jobs summarised into its parent run.
`versions`: each configuration as an MLflow LoggedModel (Agent versions), linked to its runs' metrics and
traces.
`prompt_registry`: a run's prompt as a version in MLflow's Prompt Registry, found by its content.
`eval_datasets`: an eval-set version as an MLflow evaluation dataset, its records the cases.
`search`: searches that page to the end, filters that quote any value.
`space`: the disk space a stage needs, checked before it writes.

MLflow's usage telemetry is off in ragtrack's processes unless `MLFLOW_DISABLE_TELEMETRY` says
otherwise: its background thread removes a variable from `os.environ` at a moment of its
choosing, and any thread reading the environment meanwhile fails with KeyError, MLflow's own
HTTP client included (requests looks up proxies there): under bench/bench_server.py that
failed 1 sweep job of 32, twice in four sweeps. Set before the first `import mlflow`.

May import: every package but `app` and `mlflow`.
"""

import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from ragtrack.tracking.sink import (  # noqa: E402 - after the setting above
    MlflowSink,
    default_tracking_uri,
    end_run,
    end_sweep_parent,
    flat_params,
    resolve_tracking_uri,
    start_sweep_parent,
)

__all__ = [
    "MlflowSink",
    "default_tracking_uri",
    "end_run",
    "end_sweep_parent",
    "flat_params",
    "resolve_tracking_uri",
    "start_sweep_parent",
]
