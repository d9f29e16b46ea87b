"""`eval_json_v2`'s fast private helpers equal the shared `ragtrack.nlp.text` helpers they stand in for.

And a case scores exactly as the straightforward form of SPEC §1 scores it (`_reference_values`: every
string normalised and every bigram set built up front, the shared helpers throughout), bit for bit,
under varied parameters.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

import pytest

from ragtrack.core.types import AnswerExample, ContextChunk, EvalCase, ExpectedV2, Prediction, ScoreValue
from ragtrack.nlp.text import bigrams_normed, evidence_keywords, fuzzy_equal_normed, norm, terms
from ragtrack.scorers.eval_json_v2 import (
    SUBSCORES,
    EvalJsonV2Scorer,
    _bigrams,
    _Fuzzy,
    parse_answer,
)

N = "eval_json_v2"
# Whitespace of several kinds, full-width and compatibility forms (NFKC), case pairs (casefold), CJK
# ideographs of both blocks, digits, keyword punctuation, an astral character.
PIECES = [
    " ",
    "\t",
    "\n",
    "\u3000",
    "\u00a0",
    "\u2028",
    "\x1c",
    "a",
    "A",
    "b",
    "ab",
    "ß",
    "SS",
    "ﬁ",
    "Ａ",
    "７",
    "7",
    "-",
    ".",
    "v1.2",
    "e-mail",
    "退",
    "款",
    "退款",
    "审核",
    "㐀",
    "䶿",
    "①",
    "Ⅻ",
    "İ",
    "😀",
    "x",
]


def _text(rng: random.Random, lo: int = 0, hi: int = 8) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(lo, hi)))


# ---------------------------------------------------------------- helpers


def test_whitespace_of_str_split_is_exactly_regex_whitespace() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert re.findall(r"\s", every) == [c for c in every if c.isspace()]
    assert "".join(every.split()) == re.sub(r"\s+", "", every)


def _regex_norm(s: str | None) -> str:
    """SPEC §0's `norm` as written: NFKC, every `\\s` removed, casefold."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", s or "")).casefold()


def test_norm_equals_its_regex_definition_on_every_code_point() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    for i in range(0, len(every), 512):
        chunk = every[i : i + 512]
        assert norm(chunk) == _regex_norm(chunk)
        assert norm(" x ".join(chunk)) == _regex_norm(" x ".join(chunk))


def test_norm_equals_its_regex_definition_on_random_text() -> None:
    rng = random.Random(1)
    for _ in range(3000):
        s = _text(rng, 0, 12)
        assert norm(s) == _regex_norm(s)
    assert norm(None) == _regex_norm(None) == ""


def test_bigram_stand_ins_give_the_same_intersections_and_unions() -> None:
    rng = random.Random(2)
    strings = [norm(_text(rng, 0, 6)) for _ in range(300)] + ["", "a", "aa", "aaa", "ab", "ba", "abab"]
    for x in strings:
        for y in rng.sample(strings, 40) + [x]:
            a, b = bigrams_normed(x), bigrams_normed(y)
            fa, fb = _bigrams(x), _bigrams(y)
            assert (len(fa), len(fa & fb), len(fa | fb)) == (len(a), len(a & b), len(a | b)), (x, y)


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.72, 0.9, 1.0, 1.5])
@pytest.mark.parametrize("min_chars", [-1, 0, 1, 2, 3, 6])
def test_fuzzy_equal_equals_shared_helper(threshold: float, min_chars: int) -> None:
    rng = random.Random(f"{threshold}/{min_chars}")
    strings = [norm(_text(rng, 0, 6)) for _ in range(120)] + ["", "a", "ab", "abc", "abcd", "bcd"]
    for x in strings:
        fuzzy = _Fuzzy(threshold, min_chars)
        for y in rng.sample(strings, 30) + [x, x[1:], x[:-1]]:
            want = fuzzy_equal_normed(
                x,
                y,
                bigrams_normed(x),
                bigrams_normed(y),
                threshold=threshold,
                min_containment_chars=min_chars,
            )
            assert fuzzy.equal(x, y) is want, (x, y)
            assert bool(fuzzy.contained(x, y) or (x and y and fuzzy.similar(x, y))) is want, (x, y)


def test_keywords_stop_early_as_the_whole_list_cut_at_every_limit() -> None:
    rng = random.Random(3)
    texts = [_text(rng, 0, 40) for _ in range(400)]
    texts += ["", "a", "7", "退", "退款审核通过", "v1.2 e-mail A7 ７"]
    for text in texts:
        for limit in (-3, -1, 0, 1, 2, 3, 5, 8, 30, 100):
            assert evidence_keywords(text, limit) == list(dict.fromkeys(terms(text)))[:limit], (text, limit)


# ---------------------------------------------------------------- whole cases


class _Normed:
    """As the scorer had it: a string normalised once, with its bigram set."""

    def __init__(self, raw: str) -> None:
        self.text = norm(raw)
        self.grams = bigrams_normed(self.text)


def _reference_values(p: Any, case: EvalCase, pred: Prediction) -> dict[str, ScoreValue]:
    """SPEC §1 per case, straightforwardly, with the shared helpers (the scorer's form before it was fast)."""
    assert case.expected is not None

    def eq(a: _Normed, b: _Normed) -> bool:
        return fuzzy_equal_normed(
            a.text,
            b.text,
            a.grams,
            b.grams,
            threshold=p.jaccard_threshold,
            min_containment_chars=p.min_containment_chars,
        )

    def list_f1(expected: Sequence[str], got: Sequence[str]) -> float:
        if not expected or not got:
            return 1.0 if not expected and not got else 0.0
        e, g = [_Normed(x) for x in expected], [_Normed(x) for x in got]
        adj = [[j for j, gj in enumerate(g) if eq(ei, gj)] for ei in e]
        match_right = [-1] * len(g)

        def augment(i: int, seen: list[bool]) -> bool:
            for j in adj[i]:
                if not seen[j]:
                    seen[j] = True
                    if match_right[j] == -1 or augment(match_right[j], seen):
                        match_right[j] = i
                        return True
            return False

        m = sum(1 for i in range(len(adj)) if adj[i] and augment(i, [False] * len(g)))
        if m == 0:
            return 0.0
        recall, precision = m / len(e), m / len(g)
        return 2 * precision * recall / (precision + recall)

    def evidence(expected: str, got: str) -> float:
        keywords = evidence_keywords(expected, p.max_keywords)
        stripped = got.strip()
        if keywords:
            target = norm(got)
            hit = sum(1 for k in keywords if k in target)
            kw_score = min(1.0, hit / min(p.keyword_hits_for_full, len(keywords)))
        else:
            kw_score = 1.0 if stripped else 0.0
        n = len(stripped)
        return kw_score * (1.0 if n >= p.min_evidence_chars else n / p.min_evidence_chars)

    def grounding(source_map: list[Any], contexts: Sequence[ContextChunk]) -> float:
        paths = {c.source_path for c in contexts if c.source_path is not None}
        context_text = norm("\n".join(c.text for c in contexts))
        total = ok = 0
        for entry in source_map[: p.max_source_map_entries]:
            refs = entry.get("refs") if isinstance(entry, dict) else None
            if not isinstance(refs, list):
                continue
            for ref in refs[: p.max_refs_per_entry]:
                total += 1
                if not isinstance(ref, dict) or not isinstance(ref.get("file"), str):
                    continue
                if ref["file"] not in paths:
                    continue
                anchors = ref.get("anchors")
                if not isinstance(anchors, list):
                    continue
                for a in anchors[: p.max_anchors_per_ref]:
                    if isinstance(a, str) and (na := norm(a)) and na in context_text:
                        ok += 1
                        break
        return ok / total if total else 0.0

    got, error = parse_answer(pred.answer)
    subs = dict.fromkeys(SUBSCORES, 0.0)
    if got is not None:
        exp = case.expected.answer_example
        for key in ("target_audience", "main_topic", "sub_topic"):
            subs[key] = 1.0 if eq(_Normed(getattr(exp, key)), _Normed(got[key])) else 0.0
        subs["detailed_description_f1"] = list_f1(
            exp.detailed_description, got["detailed_description"][: p.max_description_items]
        )
        subs["predicted_questions_f1"] = list_f1(
            exp.predicted_questions, got["predicted_questions"][: p.max_question_items]
        )
        subs["original_evidence"] = evidence(exp.original_evidence, got["original_evidence"])
        subs["grounding"] = grounding(got["source_map"], pred.contexts)
    total = math.fsum(p.weights.get(k, 0.0) * subs[k] for k in SUBSCORES)
    out: dict[str, ScoreValue] = {f"{N}/score": 100.0 * min(1.0, max(0.0, total))}
    out[f"{N}/schema_ok"] = got is not None
    out.update({f"{N}/{k}": v for k, v in subs.items()})
    out[f"{N}/error"] = error
    return out


def _mutated(rng: random.Random, s: str) -> str:
    """What a model might give for `s`: itself, re-spaced and re-cased, cut, extended, reversed, or other."""
    kind = rng.randrange(7)
    if kind == 0:
        return s
    if kind == 1:
        return " ".join(s).upper()
    if kind == 2:
        return s[: max(0, len(s) - rng.randint(0, 3))]
    if kind == 3:
        return s + _text(rng, 0, 2)
    if kind == 4:
        return s[::-1]
    if kind == 5:
        return s[1:]
    return _text(rng)


def _random_pair(rng: random.Random, i: int) -> tuple[EvalCase, Prediction]:
    ex: dict[str, Any] = {
        "target_audience": _text(rng, 0, 3),
        "main_topic": _text(rng, 0, 4),
        "sub_topic": _text(rng, 0, 5),
        "detailed_description": [_text(rng, 0, 10) for _ in range(rng.randint(0, 6))],
        "original_evidence": _text(rng, 0, 30),
        "predicted_questions": [_text(rng, 0, 8) for _ in range(rng.randint(0, 5))],
    }
    labels = ("target_audience", "main_topic", "sub_topic", "original_evidence")
    got: dict[str, Any] = {k: _mutated(rng, ex[k]) for k in labels}
    for key in ("detailed_description", "predicted_questions"):
        items = [_mutated(rng, s) for s in ex[key]] + [_text(rng) for _ in range(rng.randint(0, 12))]
        rng.shuffle(items)
        got[key] = items + items[: rng.randint(0, 3)]
    anchors = ["退款", "ab", "", " ", "x", 5, None]

    def ref() -> Any:
        anchor_list = [rng.choice(anchors) for _ in range(rng.randint(0, 8))]
        file = rng.choice(["p0", "p1", "zz"])
        options = [None, {"file": 3}, {"file": file, "anchors": anchor_list}, {"file": file, "anchors": "a"}]
        return rng.choice(options)

    got["source_map"] = [
        rng.choice([None, "x", {"refs": "no"}, {"refs": [ref() for _ in range(rng.randint(0, 8))]}])
        for _ in range(rng.randint(0, 14))
    ]
    answer = json.dumps(got, ensure_ascii=False)
    answer = rng.choice([answer, answer, f"```json\n{answer}\n```", answer[:-3], "", "[]"])
    contexts = [
        ContextChunk(
            text=_text(rng, 0, 12) + rng.choice(["退款", "ab", ""]),
            source_path=rng.choice([None, "p0", "p1"]),
        )
        for _ in range(rng.randint(0, 3))
    ]
    case = EvalCase(id=f"c{i}", question="q", expected=ExpectedV2(answer_example=AnswerExample(**ex)))
    return case, Prediction(case_id=f"c{i}", answer=answer, contexts=contexts)


PARAMS: list[dict[str, Any]] = [
    {},
    {"jaccard_threshold": 0.3, "min_containment_chars": 1},
    {"jaccard_threshold": 0.0, "min_containment_chars": 0},
    {"jaccard_threshold": 1.0, "min_containment_chars": 4},
    {"max_description_items": 2, "max_question_items": 0, "max_keywords": 3, "keyword_hits_for_full": 1},
    {"max_keywords": -2, "max_source_map_entries": 2, "max_refs_per_entry": -1, "max_anchors_per_ref": 1},
    {"max_keywords": 0, "min_evidence_chars": 1, "weights": {"grounding": 0.7, "main_topic": 0.25}},
]


@pytest.mark.parametrize("params", PARAMS)
def test_cases_score_bit_for_bit_as_the_reference(params: dict[str, Any]) -> None:
    rng = random.Random(json.dumps(params, sort_keys=True))
    scorer = EvalJsonV2Scorer(**params)
    for i in range(400):
        case, pred = _random_pair(rng, i)
        got, want = scorer.score_case(case, pred), _reference_values(scorer.p, case, pred)
        assert repr(got) == repr(want), (case, pred)
