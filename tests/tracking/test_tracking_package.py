"""What importing ragtrack's tracking package sets up for MLflow."""

from __future__ import annotations

import subprocess
import sys

from tests.processes import env

PROBE = (
    "import ragtrack.tracking; from mlflow.telemetry.client import get_telemetry_client; "
    "print(get_telemetry_client())"
)
# MLflow turns telemetry off by itself under pytest and in CI (mlflow.telemetry.utils): a user's shell has
# none of these.
CI_MARKERS = (
    "PYTEST_CURRENT_TEST",
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "JENKINS_URL",
    "BUILDKITE",
    "TF_BUILD",
)


def _telemetry_client(**extra: str) -> str:
    """What MLflow's telemetry client is in a fresh process, started as from a user's shell, that imports
    ragtrack.tracking."""
    shell = {k: v for k, v in env(**extra).items() if k not in CI_MARKERS}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=shell, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_mlflow_telemetry_is_off_in_ragtrack_processes():
    # its thread removes an environment variable while others read the environment (KeyError)
    assert _telemetry_client() == "None"


def test_a_user_who_wants_mlflow_telemetry_keeps_it():
    assert _telemetry_client(MLFLOW_DISABLE_TELEMETRY="false") != "None"
