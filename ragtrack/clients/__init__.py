"""The models and servers ragtrack calls, each behind one module.

- `embeddings`: the one sentence-transformers import: model, its identity (name, weights sha256),
  vector cache.
- `llm`: the one OpenAI-compatible client (retries, deadline, concurrency, redaction).
- `gencache`: the on-disk cache of LLM answers, keyed by everything that decides them.

May import: `ragtrack.core`.
"""
