"""The chunker: size bound, nothing lost, boundary preference, overlap, CJK, paragraph numbering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrack.index.chunker import chunk_spans, paragraph_spans, sentence_spans, title
from ragtrack.inputs.config import ChunkerConfig

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo" / "corpus"
DEMO_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(DEMO.rglob("*.md"))]
SETTINGS = [(s, o, b) for s, o in [(40, 0), (160, 60), (600, 150)] for b in ("paragraph", "sentence", "char")]


@pytest.mark.parametrize("size,overlap,boundary", SETTINGS)
def test_no_chunk_is_longer_than_size(size, overlap, boundary):
    cfg = ChunkerConfig(size=size, overlap=overlap, boundary=boundary)
    assert max(e - s for text in DEMO_TEXTS for s, e in chunk_spans(text, cfg)) <= size


@pytest.mark.parametrize("size,overlap,boundary", SETTINGS)
def test_every_non_space_character_is_in_some_chunk(size, overlap, boundary):
    cfg = ChunkerConfig(size=size, overlap=overlap, boundary=boundary)
    for text in DEMO_TEXTS:
        covered = {i for s, e in chunk_spans(text, cfg) for i in range(s, e)}
        assert [i for i, ch in enumerate(text) if not ch.isspace() and i not in covered] == []


def test_paragraphs_that_fit_stay_whole():
    text = DEMO_TEXTS[0]
    blocks = {text[s:e] for s, e in paragraph_spans(text)} | {title(text) and "# " + title(text)}
    for s, e in chunk_spans(text, ChunkerConfig(size=300, boundary="paragraph")):
        assert set(text[s:e].split("\n\n")) <= blocks


def test_a_long_paragraph_is_cut_at_its_sentences_and_never_joined_to_the_next():
    text = "First one here. Second one here. Third one here.\n\nNext paragraph."
    chunks = [text[s:e] for s, e in chunk_spans(text, ChunkerConfig(size=35, boundary="paragraph"))]
    assert chunks == ["First one here. Second one here.", "Third one here.", "Next paragraph."]


def test_sentence_boundary_packs_across_a_paragraph_break():
    text = "First one here. Second one here. Third one here.\n\nNext paragraph."
    chunks = [text[s:e] for s, e in chunk_spans(text, ChunkerConfig(size=35, boundary="sentence"))]
    assert chunks[-1] == "Third one here.\n\nNext paragraph."


def test_chinese_is_cut_after_its_own_punctuation():
    text = "退款审核通过后，款项将在五个工作日内原路退回。域名注册费不支持退款；证书费用也不退还。"
    chunks = [text[s:e] for s, e in chunk_spans(text, ChunkerConfig(size=24))]
    assert chunks == [
        "退款审核通过后，款项将在五个工作日内原路退回。",
        "域名注册费不支持退款；证书费用也不退还。",
    ]


def test_a_long_chinese_sentence_is_cut_at_its_commas():
    text = "退款审核通过后，款项将在五个工作日内原路退回，节假日顺延。"
    chunks = [text[s:e] for s, e in chunk_spans(text, ChunkerConfig(size=20))]
    assert chunks == ["退款审核通过后，", "款项将在五个工作日内原路退回，", "节假日顺延。"]


def test_cjk_without_any_boundary_is_cut_every_size_characters():
    assert [e - s for s, e in chunk_spans("流明云" * 50, ChunkerConfig(size=40))] == [40, 40, 40, 30]


def test_a_decimal_point_does_not_end_a_sentence():
    text = "Compute is guaranteed 99.95% uptime. Credits apply."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Compute is guaranteed 99.95% uptime.",
        "Credits apply.",
    ]


def test_consecutive_chunks_share_whole_trailing_sentences_within_overlap():
    text = " ".join(f"Sentence number {i} ends." for i in range(6))  # 23-character sentences
    spans = chunk_spans(text, ChunkerConfig(size=72, overlap=30, boundary="sentence"))
    shared = [text[b[0] : a[1]] for a, b in zip(spans, spans[1:], strict=False)]
    assert shared == ["Sentence number 2 ends.", "Sentence number 4 ends."]


def test_char_windows_overlap_by_exactly_overlap():
    spans = chunk_spans("x" * 130, ChunkerConfig(size=50, overlap=10, boundary="char"))
    assert spans == [(0, 50), (40, 90), (80, 130)]


def test_paragraph_numbering_is_that_of_the_demo_chunk_ids():
    rows = [json.loads(line) for line in (DEMO / "chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        path, _, n = row["id"].rpartition("#")
        text = (DEMO / path).read_text(encoding="utf-8")
        s, e = paragraph_spans(text)[int(n) - 1]
        assert text[s:e] == row["text"]


def test_headings_are_not_sentences():
    text = "# Title line\n\nBody sentence one. Body two."
    assert [text[s:e] for s, e in sentence_spans(text)] == ["Body sentence one.", "Body two."]
