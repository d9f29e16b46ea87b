"""What a run is given, read and validated: every bad input is one error naming file, item or line, and field.

- `config`: the run's configuration (`RunConfig`), as Hydra composes it from `conf/`.
- `eval_sets`: eval-set files (`question_v2`, `rag`, `judge`, `traces`) to cases.
- `predictions`: predictions JSONL to `Prediction`s.
- `jsonl`: strict JSON Lines reading.
- `prompts`: prompt templates, versioned by sha256.
- `archive`: a run's inputs archived with it, and read back for re-scoring.

May import: `ragtrack.core`.
"""
