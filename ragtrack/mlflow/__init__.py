"""ragtrack reached from MLflow's own APIs. MLflow loads these modules (the entry points in
pyproject.toml) or a user imports them; ragtrack's core never does.

`context`: `mlflow.run_context_provider`, ragtrack's version and git state on `mlflow.start_run()` runs.
`scorers`: ragtrack's scorers as MLflow GenAI scorers (`mlflow.genai.evaluate`).
`evaluator`: `mlflow.model_evaluator` "ragtrack" (`mlflow.models.evaluate(..., evaluators="ragtrack")`).

May import: everything (nothing of ragtrack imports it).
"""

# MLflow loads the entry points above while it is first imported. Importing it here, before any
# of these modules, keeps that load from meeting a half-imported `context` (a circular import).
import mlflow  # noqa: E402, F401
