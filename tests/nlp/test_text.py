"""Shared text helpers (SPEC §0) and the evidence keyword rule (SPEC §1.3).

Every Jaccard value below is computed by hand in a comment: the bigram sets are listed
(or counted, for strings of distinct characters) and `|A ∩ B| / |A ∪ B|` is written out.
"""

from __future__ import annotations

import pytest

from ragtrack.nlp.text import bigrams, evidence_keywords, fuzzy_equal, has_cjk, jaccard, norm

# ---------------------------------------------------------------- norm


def test_norm_nfkc_maps_full_width_letters_and_digits_to_ascii() -> None:
    assert norm("ＡＢＣ１２３") == "abc123"


def test_norm_nfkc_maps_full_width_punctuation() -> None:
    # NFKC: "，" -> ",", "！" -> "!", "（）" -> "()"; the ideographic space is then removed.
    assert norm("Ｈｅｌｌｏ，　ｗｏｒｌｄ！（ｘ）") == "hello,world!(x)"


def test_norm_nfkc_expands_compatibility_characters() -> None:
    # U+FB01 LATIN SMALL LIGATURE FI -> "fi"; U+216B ROMAN NUMERAL TWELVE -> "XII" -> "xii".
    assert norm("\ufb01le \u216b") == "filexii"


def test_norm_removes_ascii_whitespace_newlines_and_tabs() -> None:
    assert norm(" a b\tc\nd\r\ne\x0bf\x0c ") == "abcdef"


def test_norm_removes_ideographic_space_u3000() -> None:
    assert norm("退款\u3000到账") == "退款到账"


def test_norm_removes_other_unicode_spaces() -> None:
    # NO-BREAK SPACE, EM SPACE, LINE SEPARATOR, NARROW NO-BREAK SPACE.
    assert norm("a\u00a0b\u2003c\u2028d\u202fe") == "abcde"


def test_norm_casefolds_sharp_s() -> None:
    assert norm("Straße") == norm("STRASSE") == "strasse"


def test_norm_casefolds_beyond_lower() -> None:
    # str.lower() would keep "ß"; casefold turns it into "ss".
    assert norm("ß") == "ss"


def test_norm_none_is_empty() -> None:
    assert norm(None) == ""


def test_norm_empty_and_whitespace_only_are_empty() -> None:
    assert norm("") == ""
    assert norm(" \t\n\u3000") == ""


def test_norm_keeps_chinese_and_punctuation() -> None:
    assert norm("退款 将在 7 个工作日内。") == "退款将在7个工作日内。"


# ---------------------------------------------------------------- bigrams


def test_bigrams_of_empty_string_is_empty_set() -> None:
    assert bigrams("") == set()


def test_bigrams_of_none_is_empty_set() -> None:
    assert bigrams(None) == set()


def test_bigrams_of_whitespace_only_is_empty_set() -> None:
    assert bigrams("  \u3000\n") == set()


def test_bigrams_of_one_character_is_that_character() -> None:
    assert bigrams("a") == {"a"}


def test_bigrams_of_two_characters_is_one_bigram() -> None:
    assert bigrams("ab") == {"ab"}


def test_bigrams_of_longer_string_are_consecutive_pairs() -> None:
    assert bigrams("abcd") == {"ab", "bc", "cd"}


def test_bigrams_is_a_set_without_duplicates() -> None:
    assert bigrams("aaaa") == {"aa"}


def test_bigrams_normalises_first_whitespace_and_case() -> None:
    # norm("A B") == "ab": one bigram, not {"a ", " b"} or {"A", "B"}.
    assert bigrams("A B") == {"ab"}


def test_bigrams_normalises_first_full_width() -> None:
    assert bigrams("Ｘ") == {"x"}
    assert bigrams(" Ｘｙ ") == {"xy"}


def test_bigrams_of_chinese() -> None:
    assert bigrams("退款到账") == {"退款", "款到", "到账"}


# ---------------------------------------------------------------- jaccard


def test_jaccard_of_two_empty_sets_is_zero() -> None:
    assert jaccard(set(), set()) == 0.0


def test_jaccard_with_one_empty_set_is_zero() -> None:
    assert jaccard({"ab"}, set()) == 0.0


def test_jaccard_of_equal_sets_is_one() -> None:
    assert jaccard({"ab", "bc"}, {"bc", "ab"}) == 1.0


def test_jaccard_is_intersection_over_union() -> None:
    # {ab, bc} vs {ab}: 1 / 2
    assert jaccard({"ab", "bc"}, {"ab"}) == 0.5


def test_jaccard_repeating_fraction() -> None:
    # {a, b} vs {b, c}: |{b}| / |{a, b, c}| = 1/3
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)


def test_jaccard_accepts_frozensets_from_bigrams() -> None:
    # bigrams("abc") = {ab, bc}, bigrams("bcd") = {bc, cd}: 1/3
    assert jaccard(bigrams("abc"), bigrams("bcd")) == pytest.approx(1 / 3)


# ---------------------------------------------------------------- fuzzy_equal

# 19 distinct characters -> 18 bigrams; 24 distinct characters -> 23 bigrams.
C19 = "abcdefghijklmnopqrs"
C24 = "abcdefghijklmnopqrstuvwx"


def test_fuzzy_equal_both_empty_is_true() -> None:
    assert fuzzy_equal("", "") is True


def test_fuzzy_equal_none_and_whitespace_count_as_empty() -> None:
    assert fuzzy_equal(None, " \u3000\n") is True


def test_fuzzy_equal_one_empty_is_false() -> None:
    assert fuzzy_equal("", "a") is False
    assert fuzzy_equal("退款", None) is False


def test_fuzzy_equal_identical_after_norm() -> None:
    assert fuzzy_equal("ＳＬＡ  Uptime", "sla uptime") is True


def test_fuzzy_equal_containment_two_characters_true() -> None:
    # "退款" (2 chars) in "退款到账时间"; Jaccard alone would be 1/5.
    assert fuzzy_equal("退款", "退款到账时间") is True


def test_fuzzy_equal_containment_either_direction() -> None:
    assert fuzzy_equal("customers in china", "Customers") is True
    assert fuzzy_equal("Customers", "customers in china") is True


def test_fuzzy_equal_containment_after_norm() -> None:
    # norm("refund policy") = "refundpolicy" contains norm("ＰＯＬＩＣＹ") = "policy".
    assert fuzzy_equal("refund policy", "ＰＯＬＩＣＹ") is True


def test_fuzzy_equal_one_character_answer_does_not_match_longer_label() -> None:
    # Decision: containment needs the shorter side >= 2 chars. Jaccard of
    # {退} vs {退款, 款到, 到账} = 0 / 4 = 0.
    assert fuzzy_equal("退", "退款到账") is False
    assert fuzzy_equal("a", "abc") is False


def test_fuzzy_equal_min_containment_chars_1_restores_seed_rule() -> None:
    assert fuzzy_equal("退", "退款到账", min_containment_chars=1) is True
    assert fuzzy_equal("a", "abc", min_containment_chars=1) is True


def test_fuzzy_equal_min_containment_chars_3_rejects_two_char_containment() -> None:
    # "ab" in "abcdef" no longer counts; Jaccard {ab} vs {ab,bc,cd,de,ef} = 1/5.
    assert fuzzy_equal("ab", "abcdef", min_containment_chars=3) is False


def test_fuzzy_equal_identical_single_characters_match_by_jaccard() -> None:
    # Containment is not counted (shorter side 1 char), but {a} vs {a} = 1/1 >= 0.72.
    assert fuzzy_equal("A", "a") is True


def test_fuzzy_equal_jaccard_exactly_at_threshold_is_true() -> None:
    # x = C19 + "1": 18 core bigrams + "s1" = 19 bigrams.
    # y = C19 + "234567": 18 core bigrams + "s2","23","34","45","56","67" = 24 bigrams.
    # ∩ = 18, ∪ = 18 + 1 + 6 = 25 -> 18/25 = 0.72 (no containment either way).
    x, y = C19 + "1", C19 + "234567"
    assert jaccard(bigrams(x), bigrams(y)) == 0.72
    assert fuzzy_equal(x, y) is True


def test_fuzzy_equal_jaccard_just_under_threshold_is_false() -> None:
    # x = C24 + "1": 23 core bigrams + "x1" = 24.
    # y = C24 + "23456789": 23 core bigrams + "x2","23",...,"89" (8) = 31.
    # ∩ = 23, ∪ = 23 + 1 + 8 = 32 -> 23/32 = 0.71875 < 0.72.
    x, y = C24 + "1", C24 + "23456789"
    assert jaccard(bigrams(x), bigrams(y)) == 0.71875
    assert fuzzy_equal(x, y) is False


def test_fuzzy_equal_one_more_differing_bigram_drops_below_threshold() -> None:
    # As the exact-threshold case with one more tail char: ∪ = 26 -> 18/26 ≈ 0.6923.
    x, y = C19 + "1", C19 + "2345678"
    assert jaccard(bigrams(x), bigrams(y)) == pytest.approx(18 / 26)
    assert fuzzy_equal(x, y) is False


def test_fuzzy_equal_chinese_jaccard_above_threshold() -> None:
    # 七个工作日内到账: 七个 个工 工作 作日 日内 内到 到账 (7)
    # 七个工作日内到帐: 七个 个工 工作 作日 日内 内到 到帐 (7)
    # ∩ = 6, ∪ = 8 -> 0.75 >= 0.72; neither contains the other.
    assert jaccard(bigrams("七个工作日内到账"), bigrams("七个工作日内到帐")) == 0.75
    assert fuzzy_equal("七个工作日内到账", "七个工作日内到帐") is True


def test_fuzzy_equal_chinese_jaccard_below_threshold() -> None:
    # 退款到账时间: 退款 款到 到账 账时 时间 (5)
    # 退款到账的时间: 退款 款到 到账 账的 的时 时间 (6)
    # ∩ = 4, ∪ = 7 -> 4/7 ≈ 0.571 < 0.72; no containment.
    assert fuzzy_equal("退款到账时间", "退款到账的时间") is False


def test_fuzzy_equal_custom_threshold() -> None:
    # Same pair as above-threshold case: 0.75 < 0.8.
    assert fuzzy_equal("七个工作日内到账", "七个工作日内到帐", threshold=0.8) is False


# ---------------------------------------------------------------- evidence_keywords


def test_keywords_english_tokens_keep_dots_and_hyphens() -> None:
    # The final "." is not followed by [a-z0-9], so it is not part of "e-mail".
    assert evidence_keywords("Version v2.1 uses e-mail.") == ["version", "v2.1", "uses", "e-mail"]


def test_keywords_english_tokens_split_on_other_punctuation() -> None:
    assert evidence_keywords("foo_bar/baz:qux") == ["foo", "bar", "baz", "qux"]


def test_keywords_numeric_token_with_dot() -> None:
    assert evidence_keywords("uptime 99.9% guaranteed") == ["uptime", "99.9", "guaranteed"]


def test_keywords_drop_one_char_non_numeric_tokens() -> None:
    assert evidence_keywords("a b cd I x") == ["cd"]


def test_keywords_keep_one_char_numeric_tokens() -> None:
    assert evidence_keywords("within 5 days") == ["within", "5", "days"]


def test_keywords_are_casefolded() -> None:
    assert evidence_keywords("HTTP Straße") == ["http", "strasse"]


def test_keywords_are_taken_from_nfkc_text() -> None:
    # "ＡＰＩ　Ｖ２．１" -> NFKC "API V2.1" -> casefold.
    assert evidence_keywords("ＡＰＩ　Ｖ２．１") == ["api", "v2.1"]


def test_keywords_cjk_run_gives_consecutive_bigrams() -> None:
    assert evidence_keywords("退款到账") == ["退款", "款到", "到账"]


def test_keywords_single_ideograph_run_gives_the_character() -> None:
    assert evidence_keywords("退") == ["退"]


def test_keywords_cjk_runs_broken_by_punctuation() -> None:
    # "退款" | "，" | "到账": the pair "款到" crosses the break and is not a keyword.
    assert evidence_keywords("退款，到账") == ["退款", "到账"]


def test_keywords_cjk_runs_broken_by_space() -> None:
    assert evidence_keywords("退款 到账") == ["退款", "到账"]


def test_keywords_cjk_runs_broken_by_latin_and_digits() -> None:
    # 第 | 3 | 条: two one-character runs around the number.
    assert evidence_keywords("第3条") == ["第", "3", "条"]


def test_keywords_order_of_first_appearance_interleaves_english_and_chinese() -> None:
    assert evidence_keywords("SLA保证99.9%可用 uptime") == ["sla", "保证", "99.9", "可用", "uptime"]


def test_keywords_deduplicated_keeping_first_position() -> None:
    # 退款退款 -> 退款, 款退, (退款 again); "api"/"API" once; "款退" stays second.
    assert evidence_keywords("退款退款 api API 款退") == ["退款", "款退", "api"]


def test_keywords_limited_to_30() -> None:
    text = " ".join(f"w{i:02d}" for i in range(40))
    assert evidence_keywords(text) == [f"w{i:02d}" for i in range(30)]


def test_keywords_limit_counts_distinct_keywords_only() -> None:
    # 50 repetitions of "dup" take one slot; 29 more distinct tokens fill the 30.
    text = "dup " * 50 + " ".join(f"w{i:02d}" for i in range(40))
    assert evidence_keywords(text) == ["dup"] + [f"w{i:02d}" for i in range(29)]


def test_keywords_limit_applies_inside_a_long_cjk_run() -> None:
    # 35 distinct ideographs in one run -> 34 distinct bigrams, cut to 30.
    run = "".join(chr(0x4E00 + i) for i in range(35))
    expected = [run[i : i + 2] for i in range(30)]
    assert evidence_keywords(run) == expected


def test_keywords_custom_limit() -> None:
    assert evidence_keywords("aa bb cc dd", limit=2) == ["aa", "bb"]


def test_keywords_cjk_extension_a_counted() -> None:
    # U+3400 and U+3401 form a run; U+4DBF alone is a one-character run.
    assert evidence_keywords("\u3400\u3401") == ["\u3400\u3401"]
    assert evidence_keywords("\u4dbf") == ["\u4dbf"]


def test_keywords_cjk_range_edges_u4e00_and_u9fff_counted() -> None:
    assert evidence_keywords("\u4e00\u9fff") == ["\u4e00\u9fff"]


def test_keywords_just_outside_cjk_ranges_not_counted() -> None:
    # U+3007 IDEOGRAPHIC NUMBER ZERO (below U+3400), U+4DC0 Yijing hexagram (just above
    # U+4DBF), U+A000 Yi syllable (just above U+9FFF); NFKC leaves all three unchanged.
    assert evidence_keywords("\u3007\u4dc0\ua000") == []


def test_keywords_kana_not_counted() -> None:
    assert evidence_keywords("ひらがな カタカナ") == []


def test_keywords_hangul_not_counted() -> None:
    assert evidence_keywords("한국어") == []


def test_keywords_kana_breaks_an_ideograph_run() -> None:
    # 日本 | の | 語
    assert evidence_keywords("日本の語") == ["日本", "語"]


def test_keywords_of_empty_and_none() -> None:
    assert evidence_keywords("") == []
    assert evidence_keywords(None) == []


def test_keywords_of_punctuation_only_is_empty() -> None:
    assert evidence_keywords("。，！——…… - . ?") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("退款", True), ("GDPR 第5条", True), ("£20 — café", False), ("ｆｕｌｌ-width", False), ("", False)],
)
def test_has_cjk_is_true_only_for_text_with_a_cjk_ideograph(text: str, expected: bool) -> None:
    assert has_cjk(text) is expected
