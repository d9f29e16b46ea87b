"""Generator `extractive`: an offline baseline that answers by quoting the configured index.

For each question it retrieves the `top_k` chunks of the index (`retrieval`: `bm25`,
`dense` or `hybrid`, see `ragtrack.index.retriever`), cuts them into sentences and quotes
the `max_sentences` sentences that hold the question's terms best (the sum of the idf of
the question terms a sentence contains; ties keep retrieval rank, then text order). No
model writes anything: the same index and questions give the same answers, byte for byte.

The answer's shape (`answer_format`):
- `text`: the quoted sentences, then a line `citations: [<id>, …]` (the refusal_citation
  convention, SPEC §2); the same ids are the prediction's `citations`.
- `json`: an eval_json_v2 object (SPEC §1): `detailed_description` the quoted sentences,
  `original_evidence` the paragraph holding the best one, `main_topic` its document's
  title, `source_map` one ref per quoted file with its sentences as anchors;
  `target_audience`, `sub_topic` and `predicted_questions` stay empty (quoting cannot
  know them).
- `auto`: `json` for cases with a question_v2 `expected` answer, `text` for the others,
  so each scorer reads the shape it scores. A forced shape is scored as it is: eval_json_v2
  fails the schema of a text answer (0), scorers of free text read the JSON as text.

Citations name paragraphs, `<source_path>#<n>` for the n-th paragraph of the file that is
not a heading: they do not depend on the chunker (two indexes of one corpus cite alike,
and the demo's gold ids use the same numbering). When nothing is retrieved (`bm25` and no
question term occurs in the corpus), or only headings, the answer is `refusal`. The
retrieved chunks are the prediction's `contexts` (`id`, `source_path`, `text`), whatever
the answer.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import Field

from ragtrack.core.types import EvalCase, Generation, Prediction
from ragtrack.generators.base import Generator, GeneratorParams, register_generator
from ragtrack.index.chunker import Span, sentence_spans
from ragtrack.nlp.text import terms

if TYPE_CHECKING:
    from ragtrack.index.build import CorpusFile
    from ragtrack.index.retriever import Hit, Retriever

__all__ = ["ExtractiveGenerator"]


class ExtractiveParams(GeneratorParams):
    top_k: int = Field(default=3, gt=0)
    retrieval: Literal["dense", "bm25", "hybrid"] = "bm25"
    max_sentences: int = Field(default=2, gt=0)
    answer_format: Literal["auto", "json", "text"] = "auto"
    refusal: str = "not in context"


class _Quote(NamedTuple):
    path: str
    start: int
    end: int
    text: str
    paragraph: int | None  # 1-based paragraph number in its file, None for text outside paragraphs


class _File:
    """A corpus file with its paragraph spans, for finding the paragraph of a quote."""

    def __init__(self, f: CorpusFile) -> None:
        self.text = f.text
        self.title = f.title
        self.paragraphs: list[Span] = f.paragraphs
        self._starts = [s for s, _ in self.paragraphs]

    def paragraph_of(self, pos: int) -> int | None:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i + 1 if i >= 0 and pos < self.paragraphs[i][1] else None


@register_generator
class ExtractiveGenerator(Generator):
    name = "extractive"
    version = "1"
    Params = ExtractiveParams
    p: ExtractiveParams
    uses_index = True

    def generate(
        self, cases: Sequence[EvalCase], prompt_template: str, *, keep: set[str] | None = None
    ) -> Generation:
        from ragtrack.index.build import open_index
        from ragtrack.index.retriever import Retriever

        assert self.index is not None, "the runner sets the index of a generator that uses one"
        todo = [c for c in cases if keep is None or c.id in keep]
        retriever = Retriever(open_index(self.index))
        hits = retriever.search([c.question for c in todo], self.p.top_k, self.p.retrieval)
        files = {f.path: _File(f) for f in self.index.files}
        return Generation(
            predictions=[self._answer(c, hs, retriever, files) for c, hs in zip(todo, hits, strict=True)]
        )

    def _answer(
        self, case: EvalCase, hits: list[Hit], retriever: Retriever, files: dict[str, _File]
    ) -> Prediction:
        contexts = [h.context() for h in hits]
        quotes = self._quotes(case.question, hits, retriever, files)
        if not quotes:
            return Prediction(case_id=case.id, answer=self.p.refusal, contexts=contexts, citations=[])
        cites = list(dict.fromkeys(f"{q.path}#{q.paragraph}" for q in quotes if q.paragraph is not None))
        fmt = self.p.answer_format
        if fmt == "auto":
            fmt = "json" if case.expected is not None else "text"
        answer = _json_answer(quotes, files) if fmt == "json" else _text_answer(quotes, cites)
        return Prediction(case_id=case.id, answer=answer, contexts=contexts, citations=cites)

    def _quotes(
        self, question: str, hits: list[Hit], retriever: Retriever, files: dict[str, _File]
    ) -> list[_Quote]:
        wanted = set(terms(question))
        idf = retriever.bm25.idf
        ranked: dict[tuple[str, int], tuple[float, int, int, int]] = {}
        for h in hits:
            text = files[h.chunk.source_path].text
            for s, e in sentence_spans(text, h.chunk.start, h.chunk.end):
                shared = sorted(wanted & set(terms(text[s:e])))
                ranked.setdefault(
                    (h.chunk.source_path, s), (-math.fsum(idf.get(t, 0.0) for t in shared), h.rank, s, e)
                )
        best = sorted(ranked.items(), key=lambda kv: kv[1])[: self.p.max_sentences]
        return [
            _Quote(path, s, e, files[path].text[s:e], files[path].paragraph_of(s))
            for (path, _), (_, _, s, e) in best
        ]


def _text_answer(quotes: list[_Quote], cites: list[str]) -> str:
    return " ".join(q.text for q in quotes) + f"\ncitations: [{', '.join(cites)}]"


def _json_answer(quotes: list[_Quote], files: dict[str, _File]) -> str:
    top = quotes[0]
    f = files[top.path]
    evidence = top.text if top.paragraph is None else f.text[slice(*f.paragraphs[top.paragraph - 1])]
    anchors: dict[str, list[str]] = {}
    for q in quotes:
        anchors.setdefault(q.path, []).append(q.text)
    obj = {
        "target_audience": "",
        "main_topic": f.title,
        "sub_topic": "",
        "detailed_description": [q.text for q in quotes],
        "original_evidence": evidence,
        "predicted_questions": [],
        "source_map": [{"refs": [{"file": path, "anchors": a} for path, a in anchors.items()]}],
    }
    return json.dumps(obj, ensure_ascii=False)
