"""ragtrack: experiment tracking for RAG evaluation.

The packages, lowest layer first; a module imports only from its own package and from
packages of lower layers (`tests/test_architecture.py` checks every import, lazy ones too):

1. `core`: models between packages, errors, hashing, the component registry, secrets, signals.
2. `nlp` (language helpers of the deterministic scorers) and `clients` (embedding model, LLM
   client and its cache): neither imports the other.
3. `inputs`: configs, eval sets, predictions, prompts, archives, read and validated.
4. `index`: the built retrieval index.
5. `generators`: where each case's answer comes from (replay, OpenAI-compatible, extractive).
6. `scorers`: the scoring suites of docs/SPEC.md.
7. `analysis`: comparisons, sweep verdicts, gates, calibration (pure statistics).
8. `run`: one job, config in, scored result out, nothing logged.
9. `tracking`: everything that talks to MLflow.
10. `app` (the CLI, the Hydra app and sweeper, audit, the dev server) and `mlflow` (plugins MLflow
    loads): nothing imports them.

docs/architecture.md walks through the data flow of one run and where to add a scorer, a
generator or a tracking backend.
"""

__version__ = "0.1.0"
