"""Generator `openai`: ask an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a hosted API) for each
answer.

Each case's prompt is the run's template rendered with its question and, when a built
index is configured (`index=small_chunks`, …), the `top_k` chunks retrieved for the
question (`retrieval`: `bm25`, `dense` or `hybrid`, as the `extractive` generator does,
`ragtrack.index.retriever`); it goes out as one user message to `model` (by default the
adapter's `served_model`, as vLLM serves each LoRA adapter under its own name, else the
base model's id). Without a built index (a recorded one, like the demo's), nothing is
retrieved and the prompt's `{{context}}` is empty. With one, a template without
`{{context}}` is bad input: the chunks would be logged as the answer's contexts without
the model ever seeing them. Answers come from the generation cache when the same request
was answered before, and every new one is appended to it as it arrives, so a run killed
half-way resumes where it stopped.

The predictions carry the raw answer, the chunks shown (`id`, `source_path`, `text` and
the retriever's `score`), latency and token usage, in the shape a predictions file has
(the archive writes them as one), so every scorer reads them and a run can be re-scored
from its artifacts. `Generation.metrics` carries `generator/cache_hits`,
`generator/cache_misses`, requests, retries, token sums and latency of the calls made.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from ragtrack.clients.gencache import open_cache
from ragtrack.clients.llm import LLMClient, LLMSettings, Message
from ragtrack.core.errors import InputError
from ragtrack.core.types import ContextChunk, EvalCase, Generation, Prediction
from ragtrack.generators.base import Generator, register_generator
from ragtrack.inputs.prompts import render_prompt

__all__ = ["OpenAIChatGenerator"]


class OpenAIParams(LLMSettings):
    top_k: int = Field(default=3, gt=0)
    retrieval: Literal["dense", "bm25", "hybrid"] = "bm25"


@register_generator
class OpenAIChatGenerator(Generator):
    name = "openai"
    version = "1"
    Params = OpenAIParams
    p: OpenAIParams
    uses_index = True
    index_optional = True

    def prepare(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation | None:
        if self.index is not None and not re.search(r"\{\{\s*context\s*\}\}", prompt_template):
            raise InputError(
                "config",
                "the prompt template has no {{context}} placeholder, so the chunks retrieved from "
                f"index {self.index.config.name!r} would never reach the model",
                field="prompt.path",
            )
        return None

    def retrieve(self, cases: Sequence[EvalCase]) -> list[list[ContextChunk]]:
        """Each case's `top_k` chunks of the configured index, best first; none without an index."""
        if self.index is None:
            return [[] for _ in cases]
        from ragtrack.index.build import open_index
        from ragtrack.index.retriever import Retriever

        hits = Retriever(open_index(self.index)).search(
            [c.question for c in cases], self.p.top_k, self.p.retrieval
        )
        return [[h.context() for h in hs] for hs in hits]

    def generate(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        chosen = [c for c in cases if keep is None or c.id in keep]
        contexts = self.retrieve(chosen)
        conversations = [
            [Message(role="user", content=render_prompt(prompt_template, c, ctx))]
            for c, ctx in zip(chosen, contexts, strict=True)
        ]
        cache = open_cache(self.p.cache_dir)
        try:
            results, stats = LLMClient(self.p).complete_all(
                conversations, cache=cache, desc=f"generate {self.p.model}"
            )
        finally:
            cache.close()
        predictions = [
            Prediction(
                case_id=c.id, answer=r.text, contexts=ctx, latency_ms=r.latency_ms, usage=r.usage or None
            )
            for c, ctx, r in zip(chosen, contexts, results, strict=True)
        ]
        warnings = []
        if cache.n_skipped:
            warnings.append(f"{cache.path}: {cache.n_skipped} unreadable line(s) skipped (a write cut short)")
        return Generation(predictions=predictions, metrics=stats.metrics("generator"), warnings=warnings)
