"""Scorer `eval_json_v2` (SPEC §1): parsing, schema, each subscore, total and aggregates.

Every expected number is computed by hand from the SPEC text; the arithmetic is in a
comment next to the assertion.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import AnswerExample, ContextChunk, EvalCase, ExpectedV2, Prediction, ScorerOutput
from ragtrack.scorers.base import Batch
from ragtrack.scorers.eval_json_v2 import SUBSCORES, EvalJsonV2Scorer, parse_answer

N = "eval_json_v2"

REFUND = "policies/refund.md"
SLA = "policies/sla.md"
CTX_REFUND = "退款将在审核通过后7个工作日内原路退回至付款账户。"
CTX_SLA = "Lumen Cloud guarantees 99.9% monthly uptime."
CONTEXTS = [ContextChunk(text=CTX_REFUND, source_path=REFUND), ContextChunk(text=CTX_SLA, source_path=SLA)]

EXPECTED: dict[str, Any] = {
    "target_audience": "customers",
    "main_topic": "refund policy",
    "sub_topic": "processing time",
    "detailed_description": [
        "refunds arrive within 7 business days",
        "money returns to the original payment account",
    ],
    # 14 keywords: refunds are returned to the original payment account within 7
    # business days after approval; 91 code points.
    "original_evidence": "Refunds are returned to the original payment account within 7 business days "
    "after approval.",
    "predicted_questions": ["where does the refund go?", "how long does a refund take?"],
}
GOOD_REF = {"file": REFUND, "anchors": ["7个工作日"]}
BAD_REF = {"file": REFUND, "anchors": ["not in any context"]}
SEVEN_KEYS = (
    "target_audience",
    "main_topic",
    "sub_topic",
    "detailed_description",
    "original_evidence",
    "predicted_questions",
    "source_map",
)


# ---------------------------------------------------------------- helpers


def perfect(**overrides: Any) -> dict[str, Any]:
    """The expected answer itself, with one grounded ref; fields replaced by `overrides`."""
    ans = dict(EXPECTED, source_map=[{"refs": [GOOD_REF]}])
    ans.update(overrides)
    return ans


def case(cid: str = "c1", **exp_overrides: Any) -> EvalCase:
    fields = dict(EXPECTED)
    fields.update(exp_overrides)
    return EvalCase(
        id=cid,
        question="退款多久到账？",
        expected=ExpectedV2(answer_example=AnswerExample(**fields), source_map=[{"refs": [GOOD_REF]}]),
    )


def pred(
    answer: str | dict[str, Any], cid: str = "c1", contexts: list[ContextChunk] | None = None
) -> Prediction:
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return Prediction(
        case_id=cid, answer=text, contexts=CONTEXTS if contexts is None else contexts, missing=False
    )


def run(pairs: list[tuple[EvalCase, Prediction]], **params: Any) -> ScorerOutput:
    return EvalJsonV2Scorer(**params).score(
        Batch(cases=[c for c, _ in pairs], predictions=[p for _, p in pairs])
    )


def values(
    answer: str | dict[str, Any],
    *,
    contexts: list[ContextChunk] | None = None,
    params: dict[str, Any] | None = None,
    **exp_overrides: Any,
) -> dict[str, Any]:
    """Score one case and return its `eval_json_v2/<col>` values with the prefix removed."""
    out = run([(case(**exp_overrides), pred(answer, contexts=contexts))], **(params or {}))
    assert len(out.cases) == 1
    return {k.removeprefix(f"{N}/"): v for k, v in out.cases[0].values.items()}


def grounding(source_map: Any, contexts: list[ContextChunk] | None = None) -> float:
    return values(perfect(source_map=source_map), contexts=contexts)["grounding"]


def assert_schema_failure(v: dict[str, Any]) -> None:
    assert v["schema_ok"] is False
    assert v["score"] == 0.0
    assert all(v[k] == 0.0 for k in SUBSCORES)


# ---------------------------------------------------------------- baseline


def test_fully_correct_answer_scores_exactly_100() -> None:
    # Every subscore 1; Σw = 0.1+0.1+0.1+0.3+0.2+0.1+0.1 = 1 -> 100 · 1 = 100.0.
    v = values(perfect())
    assert v["score"] == 100.0


def test_fully_correct_answer_has_every_subscore_one() -> None:
    v = values(perfect())
    assert {k: v[k] for k in SUBSCORES} == dict.fromkeys(SUBSCORES, 1.0)


def test_valid_answer_has_schema_ok_true_and_no_error() -> None:
    v = values(perfect())
    assert v["schema_ok"] is True
    assert v["error"] is None


def test_per_case_columns_are_named_per_spec() -> None:
    out = run([(case(), pred(perfect()))])
    expected = {f"{N}/score", f"{N}/schema_ok", f"{N}/error"} | {f"{N}/{k}" for k in SUBSCORES}
    assert set(out.cases[0].values) == expected


def test_subscores_constant_lists_the_seven_subscores() -> None:
    assert SUBSCORES == (
        "target_audience",
        "main_topic",
        "sub_topic",
        "detailed_description_f1",
        "original_evidence",
        "predicted_questions_f1",
        "grounding",
    )


# ---------------------------------------------------------------- parsing

VALID_JSON = json.dumps(perfect(), ensure_ascii=False)


def test_parse_plain_object() -> None:
    obj, err = parse_answer(VALID_JSON)
    assert err is None and obj == perfect()


def test_parse_strips_surrounding_whitespace() -> None:
    assert values("\n \t " + VALID_JSON + " \n\u3000")["schema_ok"] is True


@pytest.mark.parametrize(
    "fenced",
    [
        "```json\n" + VALID_JSON + "\n```",
        "```\n" + VALID_JSON + "\n```",
        "```json5\n" + VALID_JSON + "\n```",
        "```my-lang_1\n" + VALID_JSON + "\n```",
        "```JSON\n" + VALID_JSON + "\n```",
        "```json" + VALID_JSON + "```",  # no newlines around the body
        "  \n```json\n\n  " + VALID_JSON + "  \n\n```\n ",  # whitespace outside and inside
    ],
    ids=["json", "no-tag", "json5", "my-lang_1", "JSON", "no-newlines", "padded"],
)
def test_parse_code_fence_with_optional_tag_is_tolerated(fenced: str) -> None:
    v = values(fenced)
    assert v["schema_ok"] is True and v["score"] == 100.0


def test_parse_fenced_answer_gives_same_object() -> None:
    assert parse_answer("```json\n" + VALID_JSON + "\n```") == parse_answer(VALID_JSON)


@pytest.mark.parametrize(
    "text",
    [
        "Here is the JSON: " + VALID_JSON,
        VALID_JSON + "\nHope this helps!",
        "Sure!\n```json\n" + VALID_JSON + "\n```",
        "```json\n" + VALID_JSON + "\n```\nThanks.",
    ],
    ids=["prose-before", "prose-after", "prose-before-fence", "prose-after-fence"],
)
def test_parse_prose_around_json_is_schema_failure(text: str) -> None:
    assert_schema_failure(values(text))


def test_parse_fence_tag_with_other_characters_is_not_a_tag() -> None:
    # "." is not a tag character: the tag is "json" and the body ".x\n{...}" is not JSON.
    assert_schema_failure(values("```json.x\n" + VALID_JSON + "\n```"))


def test_parse_unclosed_fence_is_schema_failure() -> None:
    assert_schema_failure(values("```json\n" + VALID_JSON))


def test_parse_json_array_is_schema_failure() -> None:
    obj, err = parse_answer("[" + VALID_JSON + "]")
    assert obj is None and err is not None and "object" in err


def test_parse_json_string_is_schema_failure() -> None:
    obj, err = parse_answer(json.dumps(VALID_JSON))
    assert obj is None and err is not None


@pytest.mark.parametrize("text", ["0", "null", "true", '"x"'])
def test_parse_json_scalar_is_schema_failure(text: str) -> None:
    assert_schema_failure(values(text))


@pytest.mark.parametrize("text", ["", "   ", "\n\t\u3000"])
def test_parse_empty_answer_is_schema_failure(text: str) -> None:
    v = values(text)
    assert_schema_failure(v)
    assert v["error"] == "empty answer"


@pytest.mark.parametrize(
    "text",
    ["{'target_audience': 'customers'}", VALID_JSON[:-1], "{", "```json\n```", "``````", "```"],
    ids=["single-quotes", "truncated", "brace", "empty-fence", "six-backticks", "three-backticks"],
)
def test_parse_invalid_json_is_schema_failure(text: str) -> None:
    v = values(text)
    assert_schema_failure(v)
    assert isinstance(v["error"], str) and v["error"]


# ---------------------------------------------------------------- schema


@pytest.mark.parametrize("key", SEVEN_KEYS)
def test_schema_missing_key_fails_and_names_it(key: str) -> None:
    ans = perfect()
    del ans[key]
    v = values(ans)
    assert_schema_failure(v)
    assert key in v["error"]


@pytest.mark.parametrize("key", SEVEN_KEYS)
def test_schema_null_value_fails_and_names_it(key: str) -> None:
    v = values(perfect(**{key: None}))
    assert_schema_failure(v)
    assert key in v["error"]


@pytest.mark.parametrize("key", ["detailed_description", "predicted_questions"])
def test_schema_string_instead_of_list_fails(key: str) -> None:
    v = values(perfect(**{key: "refunds arrive within 7 business days"}))
    assert_schema_failure(v)
    assert key in v["error"]


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("detailed_description", ["ok", 1]),
        ("detailed_description", [None]),
        ("predicted_questions", ["ok", ["nested"]]),
        ("predicted_questions", [{"q": "x"}]),
        ("predicted_questions", [True]),
    ],
)
def test_schema_list_with_non_string_item_fails(key: str, bad: list[Any]) -> None:
    v = values(perfect(**{key: bad}))
    assert_schema_failure(v)
    assert key in v["error"]


@pytest.mark.parametrize("bad", [{"refs": [GOOD_REF]}, "policies/refund.md", 0])
def test_schema_source_map_not_a_list_fails(bad: Any) -> None:
    v = values(perfect(source_map=bad))
    assert_schema_failure(v)
    assert "source_map" in v["error"]


@pytest.mark.parametrize("key", ["target_audience", "main_topic", "sub_topic", "original_evidence"])
def test_schema_bool_for_string_fails(key: str) -> None:
    v = values(perfect(**{key: True}))
    assert_schema_failure(v)
    assert key in v["error"]


@pytest.mark.parametrize("bad", [1, 1.5, ["customers"], {"a": "b"}])
def test_schema_other_non_string_for_string_fails(bad: Any) -> None:
    v = values(perfect(target_audience=bad))
    assert_schema_failure(v)
    assert "target_audience" in v["error"]


def test_schema_extra_keys_allowed() -> None:
    v = values(perfect(confidence=0.9, notes=None, extra={"x": [1, 2]}))
    assert v["schema_ok"] is True and v["score"] == 100.0


def test_schema_source_map_items_of_any_type_allowed() -> None:
    # A list of junk is still a list: schema_ok, but no ref is considered -> grounding 0.
    v = values(perfect(source_map=[1, "x", None]))
    assert v["schema_ok"] is True and v["grounding"] == 0.0


def test_schema_lists_longer_than_prompt_limits_still_ok() -> None:
    # 9 descriptions (> 8) and 6 questions (> 5).
    v = values(
        perfect(
            detailed_description=[f"d{i}" for i in range(9)], predicted_questions=[f"q{i}" for i in range(6)]
        )
    )
    assert v["schema_ok"] is True


def test_schema_empty_strings_and_lists_are_valid_types() -> None:
    v = values(perfect(target_audience="", detailed_description=[], predicted_questions=[], source_map=[]))
    assert v["schema_ok"] is True


# ---------------------------------------------------------------- categorical fields


def test_categorical_exact_match_after_norm() -> None:
    assert values(perfect(target_audience="ＣＵＳＴＯＭＥＲＳ "))["target_audience"] == 1.0


def test_categorical_containment_match() -> None:
    # "refund" (6 chars) in "refundpolicy".
    assert values(perfect(main_topic="Refund"))["main_topic"] == 1.0


def test_categorical_mismatch_is_zero() -> None:
    assert values(perfect(sub_topic="shipping"))["sub_topic"] == 0.0


def test_categorical_one_character_answer_does_not_match() -> None:
    # Decision: "c" is in "customers" but the shorter side has 1 char; Jaccard {c} vs 8 bigrams = 0.
    assert values(perfect(target_audience="c"))["target_audience"] == 0.0


def test_categorical_min_containment_chars_1_restores_seed_rule() -> None:
    v = values(perfect(target_audience="c"), params={"min_containment_chars": 1})
    assert v["target_audience"] == 1.0


def test_categorical_chinese_jaccard_match() -> None:
    # 七个工作日内到账 vs 七个工作日内到帐: ∩ 6, ∪ 8 -> 0.75 >= 0.72.
    v = values(perfect(sub_topic="七个工作日内到帐"), sub_topic="七个工作日内到账")
    assert v["sub_topic"] == 1.0


def test_categorical_empty_expected_and_empty_got_match() -> None:
    assert values(perfect(target_audience=" "), target_audience="")["target_audience"] == 1.0


def test_categorical_empty_got_does_not_match() -> None:
    assert values(perfect(target_audience=""))["target_audience"] == 0.0


# ---------------------------------------------------------------- list F1

D1, D2 = EXPECTED["detailed_description"]
Q1, Q2 = EXPECTED["predicted_questions"]


def junk(n: int) -> list[str]:
    return [f"zzz filler {i:02d}" for i in range(n)]


def test_list_f1_exact_lists_is_one() -> None:
    assert values(perfect())["detailed_description_f1"] == 1.0


def test_list_f1_order_does_not_matter() -> None:
    assert values(perfect(detailed_description=[D2, D1]))["detailed_description_f1"] == 1.0


def test_list_f1_partial_recall() -> None:
    # m = 1, R = 1/2, P = 1/1 -> F1 = 2·1·0.5/1.5 = 2/3.
    assert values(perfect(detailed_description=[D1]))["detailed_description_f1"] == pytest.approx(2 / 3)


def test_list_f1_partial_precision() -> None:
    # got [D1, D2, junk, junk]: m = 2, R = 1, P = 2/4 -> F1 = 2·0.5·1/1.5 = 2/3.
    v = values(perfect(detailed_description=[D1, D2, *junk(2)]))
    assert v["detailed_description_f1"] == pytest.approx(2 / 3)


def test_list_f1_fuzzy_items_match() -> None:
    # Items equal after norm (case, spaces, full width) match.
    v = values(
        perfect(
            detailed_description=[
                "REFUNDS ARRIVE WITHIN ７ BUSINESS DAYS",
                "money returns to the original payment account",
            ]
        )
    )
    assert v["detailed_description_f1"] == 1.0


def test_list_f1_no_match_is_zero() -> None:
    assert values(perfect(detailed_description=junk(3)))["detailed_description_f1"] == 0.0


def test_list_f1_descriptions_cut_to_12_before_precision() -> None:
    # got = [D1, D2] + 11 junk = 13 items, cut to 12: m = 2, R = 1, P = 2/12
    # -> F1 = 2·(1/6)·1/(7/6) = 2/7  (with 13 items it would be 2·(2/13)/(15/13) = 4/15).
    v = values(perfect(detailed_description=[D1, D2, *junk(11)]))
    assert v["schema_ok"] is True
    assert v["detailed_description_f1"] == pytest.approx(2 / 7)


def test_list_f1_description_items_beyond_12_do_not_match() -> None:
    # got = 10 junk + D1 + junk + D2 (13th, cut): m = 1, R = 1/2, P = 1/12
    # -> F1 = 2·(1/12)·(1/2)/(7/12) = 1/7  (uncut: m = 2 -> 4/15).
    got = [*junk(10), D1, "zzz other", D2]
    assert values(perfect(detailed_description=got))["detailed_description_f1"] == pytest.approx(1 / 7)


def test_list_f1_questions_cut_to_10_before_precision() -> None:
    # got = [Q1, Q2] + 9 junk = 11 items, cut to 10: m = 2, R = 1, P = 2/10
    # -> F1 = 2·0.2·1/1.2 = 1/3  (uncut: P = 2/11 -> 4/13).
    v = values(perfect(predicted_questions=[Q1, Q2, *junk(9)]))
    assert v["predicted_questions_f1"] == pytest.approx(1 / 3)


def test_list_f1_question_items_beyond_10_do_not_match() -> None:
    # got = 10 junk + [Q1, Q2]: after the cut only junk -> m = 0 -> F1 = 0.
    assert values(perfect(predicted_questions=[*junk(10), Q1, Q2]))["predicted_questions_f1"] == 0.0


def test_list_f1_is_one_to_one_concatenated_item_matches_once() -> None:
    # One got item containing both expected items matches only one of them:
    # m = 1, R = 1/2, P = 1/1 -> F1 = 2/3 (many-to-one counting would give 1).
    v = values(perfect(detailed_description=[D1 + " and " + D2]))
    assert v["detailed_description_f1"] == pytest.approx(2 / 3)


def test_list_f1_uses_maximum_matching_not_greedy() -> None:
    # expected [A, B]; got0 = A+B matches both A and B (containment), got1 = A matches only A.
    # Greedy (A takes got0 first) gives m = 1; maximum matching A-got1, B-got0 gives m = 2
    # -> R = P = 1 -> F1 = 1.
    a, b = "refund policy", "payment account"
    v = values(perfect(detailed_description=[a + " " + b, a]), detailed_description=[a, b])
    assert v["detailed_description_f1"] == 1.0


def test_list_f1_duplicate_got_items_match_once() -> None:
    # got [D1, D1]: m = 1, R = 1/2, P = 1/2 -> F1 = 0.5.
    assert values(perfect(detailed_description=[D1, D1]))["detailed_description_f1"] == 0.5


def test_list_f1_both_empty_is_one() -> None:
    assert values(perfect(predicted_questions=[]), predicted_questions=[])["predicted_questions_f1"] == 1.0


def test_list_f1_expected_empty_got_nonempty_is_zero() -> None:
    assert values(perfect(predicted_questions=[Q1]), predicted_questions=[])["predicted_questions_f1"] == 0.0


def test_list_f1_got_empty_expected_nonempty_is_zero() -> None:
    assert values(perfect(predicted_questions=[]))["predicted_questions_f1"] == 0.0


# ---------------------------------------------------------------- original_evidence

LONG_PAD = " — as stated in the policy document."  # 36 code points, contains none of the keywords below


def evidence(expected: str, got: str) -> float:
    return values(perfect(original_evidence=got), original_evidence=expected)["original_evidence"]


def test_evidence_identical_is_one() -> None:
    assert values(perfect())["original_evidence"] == 1.0


def test_evidence_fewer_than_8_keywords_can_reach_full_score() -> None:
    # Decision: keywords refunds take seven business days (5); all hit -> min(1, 5/min(8, 5)) = 1;
    # L = 33 + 36 = 69 >= 40 -> 1. (The seed's hit/8 would give 5/8.)
    assert (
        evidence("Refunds take seven business days.", "Refunds take seven business days." + LONG_PAD) == 1.0
    )


def test_evidence_fewer_than_8_keywords_partial_hits() -> None:
    # keywords refund within seven days (4); got hits refund, within -> 2/min(8, 4) = 0.5; L >= 40.
    assert evidence("refund within seven days", "refund within a week at most" + LONG_PAD) == 0.5


def test_evidence_8_or_more_keywords_need_8_hits() -> None:
    # 10 keywords; got hits alpha..foxtrot = 6 -> 6/min(8, 10) = 0.75; L = 62 >= 40.
    exp = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    assert evidence(exp, "alpha bravo charlie delta echo foxtrot and nothing more to add") == 0.75


def test_evidence_8_hits_of_more_keywords_is_full() -> None:
    # 10 keywords, 8 hits -> min(1, 8/8) = 1; L >= 40.
    exp = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    assert evidence(exp, "alpha bravo charlie delta echo foxtrot golf hotel") == 1.0


def test_evidence_keyword_hits_use_normalised_got() -> None:
    # Full-width, upper case and spaces in got still hit: 4/4; L >= 40.
    got = "ＲＥＦＵＮＤ ＷＩＴＨＩＮ ｓｅｖｅｎ d a y s" + LONG_PAD
    assert evidence("refund within seven days", got) == 1.0


def test_evidence_only_first_30_keywords_count() -> None:
    # 40 tokens w00..w39; keywords are w00..w29; got has only w30..w39 -> 0 hits -> 0.
    exp = " ".join(f"w{i:02d}" for i in range(40))
    got = " ".join(f"w{i:02d}" for i in range(30, 40))
    assert evidence(exp, got) == 0.0


def test_evidence_length_penalty_counts_chinese_code_points() -> None:
    # keywords 退款 款七 七个 个工 工作 作日 日到 到账 (8), all hit -> 1;
    # got is 20 code points (60 UTF-8 bytes) -> L/40 = 0.5.
    got = "退款七个工作日到账，节假日顺延请耐心等待"
    assert len(got) == 20
    assert evidence("退款七个工作日到账", got) == 0.5


def test_evidence_length_uses_stripped_got() -> None:
    # Same as above with surrounding whitespace (incl. U+3000): L is still 20 -> 0.5.
    assert evidence("退款七个工作日到账", "  \u3000退款七个工作日到账，节假日顺延请耐心等待\n\t") == 0.5


def test_evidence_length_counts_inner_whitespace() -> None:
    # "refund" + 34 spaces + "x" stripped = 41 code points >= 40 -> penalty 1; keyword hit 1/1.
    assert evidence("refund", "refund" + " " * 34 + "x") == 1.0


def test_evidence_length_exactly_40_has_no_penalty() -> None:
    got = "refund" + "x" * 34
    assert len(got) == 40
    assert evidence("refund", got) == 1.0


def test_evidence_length_39_is_penalised() -> None:
    # 1 · 39/40 = 0.975
    assert evidence("refund", "refund" + "x" * 33) == pytest.approx(0.975)


def test_evidence_without_keywords_and_nonempty_got_is_one() -> None:
    # Expected evidence of punctuation only: no keywords -> kw 1; L = 40 -> 1.
    assert evidence("。，！——……", "x" * 40) == 1.0


def test_evidence_without_keywords_and_empty_got_is_zero() -> None:
    assert evidence("。，！——……", "") == 0.0


def test_evidence_without_keywords_short_got_is_length_penalised() -> None:
    # kw 1 · 10/40 = 0.25
    assert evidence("。，！", "x" * 10) == 0.25


def test_evidence_empty_got_is_zero() -> None:
    assert evidence("refund within seven days", "") == 0.0


# ---------------------------------------------------------------- grounding


def test_grounding_all_refs_ok_is_one() -> None:
    assert grounding([{"refs": [GOOD_REF, {"file": SLA, "anchors": ["monthly uptime"]}]}]) == 1.0


def test_grounding_is_ok_refs_over_total_refs() -> None:
    # entry 1: ok, bad; entry 2: ok, ok -> 3/4.
    assert grounding([{"refs": [GOOD_REF, BAD_REF]}, {"refs": [GOOD_REF, GOOD_REF]}]) == 0.75


def test_grounding_file_must_match_exactly_no_normalisation() -> None:
    assert grounding([{"refs": [{"file": "./" + REFUND, "anchors": ["7个工作日"]}]}]) == 0.0


def test_grounding_file_match_is_case_sensitive() -> None:
    assert grounding([{"refs": [{"file": REFUND.upper(), "anchors": ["7个工作日"]}]}]) == 0.0


def test_grounding_unknown_file_not_ok() -> None:
    assert grounding([{"refs": [{"file": "policies/other.md", "anchors": ["7个工作日"]}]}]) == 0.0


def test_grounding_missing_or_non_string_file_not_ok() -> None:
    # Both refs count in the total; neither is ok -> 0/2.
    assert (
        grounding([{"refs": [{"anchors": ["7个工作日"]}, {"file": None, "anchors": ["7个工作日"]}]}]) == 0.0
    )


def test_grounding_anchor_not_in_context_not_ok() -> None:
    assert grounding([{"refs": [BAD_REF]}]) == 0.0


def test_grounding_anchor_found_despite_full_width_and_whitespace() -> None:
    # norm("７ 个 工 作 日") = "7个工作日", a substring of norm(context).
    assert grounding([{"refs": [{"file": REFUND, "anchors": ["７ 个 工 作 日"]}]}]) == 1.0


def test_grounding_anchor_found_despite_case() -> None:
    assert grounding([{"refs": [{"file": SLA, "anchors": ["LUMEN  CLOUD"]}]}]) == 1.0


def test_grounding_anchor_may_span_joined_chunks() -> None:
    # norm(CTX_REFUND + "\n" + CTX_SLA) contains "付款账户。lumencloud".
    assert grounding([{"refs": [{"file": SLA, "anchors": ["付款账户。Lumen Cloud"]}]}]) == 1.0


def test_grounding_anchor_may_come_from_another_files_chunk() -> None:
    # The anchor is searched in the joined context, not only in the ref's file.
    assert grounding([{"refs": [{"file": REFUND, "anchors": ["monthly uptime"]}]}]) == 1.0


def test_grounding_one_matching_anchor_suffices() -> None:
    assert grounding([{"refs": [{"file": REFUND, "anchors": ["nope", 3, None, "7个工作日"]}]}]) == 1.0


@pytest.mark.parametrize("anchor", ["", " ", "\u3000\n\t"])
def test_grounding_empty_or_whitespace_anchor_never_counts(anchor: str) -> None:
    assert grounding([{"refs": [{"file": REFUND, "anchors": [anchor]}]}]) == 0.0


@pytest.mark.parametrize("anchors", ["7个工作日", {"a": "7个工作日"}, None, 7])
def test_grounding_anchors_not_a_list_means_no_anchors(anchors: Any) -> None:
    assert grounding([{"refs": [{"file": REFUND, "anchors": anchors}]}]) == 0.0


def test_grounding_missing_anchors_not_ok() -> None:
    assert grounding([{"refs": [{"file": REFUND}]}]) == 0.0


def test_grounding_only_first_6_anchors_considered() -> None:
    # 6 misses, then a hit at index 6 (ignored) -> not ok.
    assert grounding([{"refs": [{"file": REFUND, "anchors": ["nope"] * 6 + ["7个工作日"]}]}]) == 0.0


def test_grounding_refs_beyond_6_per_entry_not_counted() -> None:
    # 6 ok refs + a 7th bad one: total 6, ok 6 -> 1 (counting the 7th would give 6/7).
    assert grounding([{"refs": [GOOD_REF] * 6 + [BAD_REF]}]) == 1.0


def test_grounding_refs_beyond_6_per_entry_cannot_be_ok() -> None:
    # 6 bad refs + a 7th good one -> 0/6.
    assert grounding([{"refs": [BAD_REF] * 6 + [GOOD_REF]}]) == 0.0


def test_grounding_entries_beyond_12_not_counted() -> None:
    # 12 entries with one ok ref each + a 13th with a bad ref: 12/12 = 1 (else 12/13).
    assert grounding([{"refs": [GOOD_REF]}] * 12 + [{"refs": [BAD_REF]}]) == 1.0


def test_grounding_skipped_entries_still_use_up_the_12() -> None:
    # source_map[:12] holds only junk entries; the 13th entry is never considered -> total 0 -> 0.
    assert grounding(["junk"] * 12 + [{"refs": [GOOD_REF]}]) == 0.0


def test_grounding_non_dict_ref_counts_in_total_but_not_ok() -> None:
    # [ok, "policies/refund.md"] -> 1/2.
    assert grounding([{"refs": [GOOD_REF, REFUND]}]) == 0.5


def test_grounding_entry_without_list_refs_is_skipped() -> None:
    # Only the first entry has a list of refs: 1/1.
    sm = [
        {"refs": [GOOD_REF]},
        {"refs": GOOD_REF},
        {"refs": None},
        {"file": REFUND},
        "x",
        5,
        None,
        [GOOD_REF],
    ]
    assert grounding(sm) == 1.0


def test_grounding_entry_with_empty_refs_adds_nothing() -> None:
    assert grounding([{"refs": []}, {"refs": [GOOD_REF, BAD_REF]}]) == 0.5


def test_grounding_bare_string_context_gives_text_but_no_path() -> None:
    # Text from the bare chunk, path from another chunk: ok.
    contexts = [ContextChunk(text="退款七个工作日到账"), ContextChunk(text="", source_path="a.md")]
    assert grounding([{"refs": [{"file": "a.md", "anchors": ["七个工作日"]}]}], contexts) == 1.0


def test_grounding_bare_string_context_path_cannot_be_matched() -> None:
    contexts = [ContextChunk(text="退款七个工作日到账")]
    sm = [{"refs": [{"file": None, "anchors": ["七个工作日"]}, {"file": "", "anchors": ["七个工作日"]}]}]
    assert grounding(sm, contexts) == 0.0


def test_grounding_no_contexts_is_zero() -> None:
    assert grounding([{"refs": [GOOD_REF]}], []) == 0.0


def test_grounding_empty_source_map_is_zero() -> None:
    assert grounding([]) == 0.0


def test_grounding_no_considered_refs_is_zero() -> None:
    assert grounding([{"refs": []}, {"x": 1}]) == 0.0


# ---------------------------------------------------------------- total


def test_partially_correct_answer_weighted_total() -> None:
    # Expected evidence "refunds within seven days" has 4 keywords; the got evidence (the
    # 91-code-point default) hits refunds, within, days but not seven -> 3/4 = 0.75, L >= 40.
    # target_audience 0, main_topic 1, sub_topic 1, detailed_description_f1 1,
    # original_evidence 0.75, predicted_questions_f1 1, grounding 1/2 (ok + bad ref):
    # total = 0.1·0 + 0.1 + 0.1 + 0.3 + 0.2·0.75 + 0.1 + 0.1·0.5 = 0.8 -> score 80.
    ans = perfect(target_audience="shipping partners", source_map=[{"refs": [GOOD_REF, BAD_REF]}])
    v = values(ans, original_evidence="refunds within seven days")
    assert (v["target_audience"], v["original_evidence"], v["grounding"]) == (0.0, 0.75, 0.5)
    assert v["score"] == pytest.approx(80.0)


def test_total_clamped_to_one() -> None:
    # weights {target_audience: 2}: total = 2·1 = 2 -> clamp -> 1 -> 100.
    assert values(perfect(), params={"weights": {"target_audience": 2.0}})["score"] == 100.0


def test_total_clamped_to_zero() -> None:
    # weights {target_audience: -1}: total = -1 -> clamp -> 0.
    assert values(perfect(), params={"weights": {"target_audience": -1.0}})["score"] == 0.0


def test_schema_failure_score_zero_whatever_weights() -> None:
    assert values("not json", params={"weights": {"target_audience": 2.0}})["score"] == 0.0


# ---------------------------------------------------------------- batch, aggregates


def test_aggregates_over_cases() -> None:
    # c1 perfect: 100, all subscores 1.
    # c2 schema failure: 0, all subscores 0.
    # c3: grounding 0.5, rest 1 -> total 1 - 0.1·0.5 = 0.95 -> 95.
    # c4: target_audience 0, rest 1 -> total 0.9 -> 90.
    # eval_score_avg = (100 + 0 + 95 + 90)/4 = 71.25; schema_pass_rate = 3/4 = 0.75;
    # grounding mean = (1 + 0 + 0.5 + 1)/4 = 0.625; target_audience mean = (1+0+1+0)/4 = 0.5;
    # main_topic mean = 3/4 = 0.75.
    out = run(
        [
            (case("c1"), pred(perfect(), "c1")),
            (case("c2"), pred("Sure! here it is", "c2")),
            (case("c3"), pred(perfect(source_map=[{"refs": [GOOD_REF, BAD_REF]}]), "c3")),
            (case("c4"), pred(perfect(target_audience="shipping partners"), "c4")),
        ]
    )
    m = out.metrics
    assert m[f"{N}/eval_score_avg"] == pytest.approx(71.25)
    assert m[f"{N}/schema_pass_rate"] == 0.75
    assert m[f"{N}/grounding"] == 0.625
    assert m[f"{N}/target_audience"] == 0.5
    assert m[f"{N}/main_topic"] == 0.75
    assert m[f"{N}/n_cases"] == 4.0


def test_aggregates_schema_failures_count_as_zero() -> None:
    # (100 + 0)/2 = 50
    out = run([(case("c1"), pred(perfect(), "c1")), (case("c2"), pred("", "c2"))])
    assert out.metrics[f"{N}/eval_score_avg"] == 50.0


def test_aggregates_repeating_fraction() -> None:
    # (100 + 0 + 0)/3 = 33.33…; schema_pass_rate 1/3.
    out = run(
        [(case("c1"), pred(perfect(), "c1")), (case("c2"), pred("[]", "c2")), (case("c3"), pred("x", "c3"))]
    )
    assert out.metrics[f"{N}/eval_score_avg"] == pytest.approx(100 / 3)
    assert out.metrics[f"{N}/schema_pass_rate"] == pytest.approx(1 / 3)


def test_aggregate_names_per_spec() -> None:
    out = run([(case(), pred(perfect()))])
    expected = {f"{N}/eval_score_avg", f"{N}/schema_pass_rate", f"{N}/n_cases"} | {
        f"{N}/{k}" for k in SUBSCORES
    }
    assert set(out.metrics) == expected


def test_cases_without_expected_are_skipped() -> None:
    plain = EvalCase(id="q", question="Who?")
    out = run([(plain, pred(perfect(), "q")), (case("c1"), pred(perfect(), "c1"))])
    assert [c.case_id for c in out.cases] == ["c1"]
    assert out.metrics[f"{N}/n_cases"] == 1.0


def test_missing_prediction_scores_zero_with_schema_failure() -> None:
    out = run([(case("c1"), Prediction(case_id="c1", missing=True))])
    v = out.cases[0].values
    assert v[f"{N}/score"] == 0.0
    assert v[f"{N}/schema_ok"] is False


def test_empty_batch_has_nan_means_and_zero_cases() -> None:
    out = run([])
    assert out.cases == []
    assert math.isnan(out.metrics[f"{N}/eval_score_avg"])
    assert out.metrics[f"{N}/n_cases"] == 0.0


def test_scoring_is_deterministic() -> None:
    pairs = [
        (case("c1"), pred(perfect(), "c1")),
        (
            case("c2"),
            pred(
                perfect(detailed_description=[D1, *junk(5)], source_map=[{"refs": [GOOD_REF, BAD_REF]}]), "c2"
            ),
        ),
        (case("c3"), pred("garbage", "c3")),
    ]
    first, second = run(pairs), run(pairs)
    assert first.model_dump() == second.model_dump()


def test_info_logs_name_version_and_params() -> None:
    info = EvalJsonV2Scorer(jaccard_threshold=0.8).info
    assert info.name == N and info.version
    assert info.params["jaccard_threshold"] == 0.8
    weights = info.params["weights"]
    assert isinstance(weights, dict)
    assert weights["detailed_description_f1"] == 0.3


# ---------------------------------------------------------------- robustness


def _rand_str(rng: random.Random, n: int) -> str:
    alphabet = 'abcXYZ 019{}[]":,`\\\n\t\u3000退款到账７Ａｂひカ한\u3400-._'
    return "".join(rng.choice(alphabet) for _ in range(n))


def _rand_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 10**20, 1.5, -0.0, 1e308])
    if kind in (2, 3, 4):
        return _rand_str(rng, rng.randrange(0, 30))
    if kind == 5:
        return [_rand_json(rng, depth + 1) for _ in range(rng.randrange(0, 15))]
    if kind == 6:
        keys = ["file", "anchors", "refs", "x", *SEVEN_KEYS]
        return {rng.choice(keys): _rand_json(rng, depth + 1) for _ in range(rng.randrange(0, 6))}
    return {"refs": [_rand_json(rng, depth + 1) for _ in range(rng.randrange(0, 8))]}


def _rand_answer(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return _rand_str(rng, rng.randrange(0, 200))
    if kind == 1:
        return json.dumps(_rand_json(rng), ensure_ascii=rng.random() < 0.5)
    if kind == 2:  # truncated valid answer
        s = json.dumps(perfect(), ensure_ascii=False)
        return s[: rng.randrange(len(s))]
    if kind == 3:  # schema-valid shape with random contents
        ans = {
            "target_audience": _rand_str(rng, rng.randrange(0, 10)),
            "main_topic": _rand_str(rng, rng.randrange(0, 10)),
            "sub_topic": rng.choice([D1, _rand_str(rng, 5)]),
            "original_evidence": _rand_str(rng, rng.randrange(0, 80)),
            "detailed_description": [
                rng.choice([D1, D2, _rand_str(rng, 8)]) for _ in range(rng.randrange(0, 20))
            ],
            "predicted_questions": [rng.choice([Q1, _rand_str(rng, 8)]) for _ in range(rng.randrange(0, 15))],
            "source_map": [_rand_json(rng) for _ in range(rng.randrange(0, 16))],
        }
        return json.dumps(ans, ensure_ascii=False)
    if kind == 4:  # perfect answer with one key replaced by junk
        ans = perfect()
        ans[rng.choice(SEVEN_KEYS)] = _rand_json(rng)
        return json.dumps(ans, ensure_ascii=False)
    inner = _rand_answer(rng)
    return (
        rng.choice(["```json\n", "```", "```x-y_1 ", "``` ", ""])
        + inner
        + rng.choice(["\n```", "```", "", "``"])
    )


def test_scorer_never_raises_on_garbage_answers() -> None:
    rng = random.Random(0)
    pairs = []
    for i in range(300):
        contexts = rng.choice(
            [
                CONTEXTS,
                [],
                [ContextChunk(text=_rand_str(rng, 40))],
                [ContextChunk(text="", source_path=REFUND)],
            ]
        )
        pairs.append((case(f"c{i}"), pred(_rand_answer(rng), f"c{i}", contexts)))
    out = run(pairs)
    assert len(out.cases) == 300
    for row in out.cases:
        v = row.values
        score = v[f"{N}/score"]
        assert isinstance(score, (int, float)) and 0.0 <= score <= 100.0
        assert isinstance(v[f"{N}/schema_ok"], bool)
        subs = [v[f"{N}/{k}"] for k in SUBSCORES]
        assert all(isinstance(s, (int, float)) and 0.0 <= s <= 1.0 for s in subs)


def test_scorer_never_raises_on_deeply_nested_list_in_string_list_field() -> None:
    depth = 700
    ans = json.dumps(perfect(detailed_description=[]))
    text = ans.replace('"detailed_description": []', '"detailed_description": ' + "[" * depth + "]" * depth)
    assert text != ans
    v = values(text)
    assert_schema_failure(v)
    assert "detailed_description" in v["error"]


def test_scorer_never_raises_on_json_nested_beyond_parser_limit() -> None:
    v = values("[" * 100_000 + "]" * 100_000)
    assert_schema_failure(v)


# ---------------------------------------------------------------- params


def test_unknown_param_raises_input_error() -> None:
    with pytest.raises(InputError):
        EvalJsonV2Scorer(no_such_param=1)


def test_unknown_weight_key_raises_input_error() -> None:
    with pytest.raises(InputError):
        EvalJsonV2Scorer(weights={"target_audience": 0.5, "bogus": 0.5})


def test_default_threshold_accepts_borderline_pair() -> None:
    # 七个工作日内到账 vs 七个工作日内到帐: Jaccard 6/8 = 0.75 >= 0.72.
    v = values(perfect(main_topic="七个工作日内到帐"), main_topic="七个工作日内到账")
    assert v["main_topic"] == 1.0


def test_custom_jaccard_threshold_changes_borderline_verdict() -> None:
    # Same pair: 0.75 < 0.8 -> no match.
    v = values(
        perfect(main_topic="七个工作日内到帐"),
        main_topic="七个工作日内到账",
        params={"jaccard_threshold": 0.8},
    )
    assert v["main_topic"] == 0.0
