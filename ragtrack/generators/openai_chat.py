"""Generator `openai`: ask an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a hosted API) for each answer.

Each case's prompt is the run's template rendered with its question and, when a retriever
is attached (`retriever`, the seam for `ragtrack/index`), the retrieved chunks; it goes
out as one user message to `model` (by default the adapter's `served_model`, as vLLM
serves each LoRA adapter under its own name, else the base model's id). Answers come
from the generation cache when the same request was answered before, and every new one
is appended to it as it arrives, so a run killed half-way resumes where it stopped.

The predictions carry the raw answer, the contexts shown, latency and token usage, in
the shape a predictions file has (the archive writes them as one), so every scorer
reads them and a run can be re-scored from its artifacts. `Generation.metrics` carries
`generator/cache_hits`, `generator/cache_misses`, requests, retries, token sums and
latency of the calls made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragtrack.gencache import open_cache
from ragtrack.generators.base import Generator, register_generator
from ragtrack.llm import LLMClient, LLMSettings, Message
from ragtrack.prompts import render_prompt
from ragtrack.types import ContextChunk, EvalCase, Generation, Prediction

__all__ = ["OpenAIChatGenerator", "Retriever"]

Retriever = Callable[[EvalCase], list[ContextChunk]]  # a case's retrieved chunks, best first


@register_generator
class OpenAIChatGenerator(Generator):
    name = "openai"
    version = "1"
    Params = LLMSettings
    retriever: Retriever | None = None  # set on an instance once an index can retrieve chunks

    def generate(self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None) -> Generation:
        chosen = [c for c in cases if keep is None or c.id in keep]
        contexts = [self.retriever(c) if self.retriever is not None else [] for c in chosen]
        conversations = [[Message(role="user", content=render_prompt(prompt_template, c, ctx))] for c, ctx in zip(chosen, contexts, strict=True)]
        cache = open_cache(self.p.cache_dir)
        try:
            results, stats = LLMClient(self.p).complete_all(conversations, cache=cache, desc=f"generate {self.p.model}")
        finally:
            cache.close()
        predictions = [
            Prediction(case_id=c.id, answer=r.text, contexts=ctx, latency_ms=r.latency_ms, usage=r.usage or None)
            for c, ctx, r in zip(chosen, contexts, results, strict=True)
        ]
        warnings = []
        if cache.n_skipped:
            warnings.append(f"{cache.path}: {cache.n_skipped} unreadable line(s) skipped (a write cut short)")
        return Generation(predictions=predictions, metrics=stats.metrics("generator"), warnings=warnings)
