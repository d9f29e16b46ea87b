"""The offline entity extractor of earag (SPEC §4): what counts as an entity, and when one occurs in a
text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtrack.nlp.entities import Entity, extract, focus, occurs
from ragtrack.nlp.text import norm


def _texts(text: str) -> list[str]:
    return [e.text for e in extract(text)]


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        ("What is the minimum down payment for an FHA loan?", ["FHA"]),
        ("Which war did the Peace of Westphalia end?", ["Peace of Westphalia"]),
        ("When did Voyager 1 enter interstellar space?", ["Voyager 1"]),
        ("NASA's probe", ["NASA"]),
        ("Amoxicillin for strep throat. Ask the State Department.", ["State Department"]),
        ("Neil Armstrong walked first. Lumen Compute instances run.", ["Neil Armstrong", "Lumen Compute"]),
        ("It ended on August 25, 2012.", ["2012-08-25"]),  # a month is a date, not a name
        ("Pay 95 dollars within 10 days, under Article 33.", ["article 33", "95usd", "10d"]),
    ],
)
def test_english_entities(text: str, entities: list[str]) -> None:
    assert _texts(text) == entities


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        ("中小企业税收优惠政策有哪些？", ["中小企业", "税收优惠政策"]),
        ("华侨投资审批流程是什么？", ["华侨投资"]),
        ("郑和第一次下西洋是在哪一年？", ["郑和", "西洋"]),
        ("嫦娥五号从月球带回了多少月壤？", ["嫦娥五号"]),
        ("根据《劳动合同法》第十九条，财政部规定", ["第19条", "《劳动合同法》", "财政部"]),
        ("注册资本最低100万元", ["1000000cny"]),
        ("澜州市游泳教练员资格考核", ["澜州市", "游泳教练员资格考核"]),  # jieba: 澜/ns 州市/n
    ],
)
def test_chinese_entities(text: str, entities: list[str]) -> None:
    assert _texts(text) == entities


def test_a_name_occurs_by_normalised_containment() -> None:
    (fha,) = extract("an FHA loan")
    assert occurs(fha, "fha   loans") and not occurs(fha, "this kind of loan")


def test_a_name_occurs_after_a_possessive() -> None:
    (plan,) = extract("Does Calder Mutual's Brightwell Dental Plus cover braces?")
    assert occurs(plan, "Calder Mutual's Brightwell Dental Plus pays for orthodontics")


def test_a_name_occurs_when_each_of_its_words_is_in_a_name_of_the_text() -> None:
    (battery,) = extract("What does the Solvane HomeCell 10 warranty guarantee?")
    assert occurs(battery, "Solvane promises that the HomeCell 10 keeps 70% of its capacity")
    assert not occurs(battery, "Solvane promises that the battery keeps 70% of its capacity")


def test_a_term_occurs_when_half_its_pieces_do() -> None:
    term = extract("中小企业税收优惠政策有哪些？")[1]
    assert term.pieces == ("税收", "优惠", "政策", "优惠政策")
    assert occurs(term, "享受所得税减免、增值税优惠等政策支持")  # 优惠, 政策: 2 of 4
    assert not occurs(term, "享受所得税减免")


def test_a_fact_occurs_when_the_text_provides_it() -> None:
    (money,) = extract("最低100万元")
    assert occurs(money, "注册资本不少于1000000元") and not occurs(money, "注册资本不少于50万元")


def test_jieba_caches_under_the_ragtrack_cache_dir_and_logs_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "RAGTRACK_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    code = "from ragtrack.nlp.entities import extract; print(len(extract('财政部发布公告')))"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "1", "")
    assert [p.name for p in (tmp_path / "cache" / "jieba").iterdir()] == ["jieba.cache"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "tmp"] and not any(
        (tmp_path / "tmp").iterdir()
    )


def _llm_name(name: str) -> Entity:
    """A name as the llm backend makes it from an extracted string."""
    return Entity(text=name, key=norm(name).strip('《》"'), kind="name", parts=tuple(extract(name)))


@pytest.mark.parametrize(
    ("name", "text"),
    [("第十九条", "根据第19条规定"), ("《劳动合同法》第十九条", "《劳动合同法》规定，见第19条")],
)
def test_a_name_from_elsewhere_occurs_when_each_entity_in_it_does(name: str, text: str) -> None:
    assert occurs(_llm_name(name), text)


def test_a_name_from_elsewhere_does_not_occur_when_one_entity_in_it_is_missing() -> None:
    assert not occurs(_llm_name("北京市住房公积金管理中心"), "上海市住房公积金管理中心")


# ------------------------------------------------------------------ a question's focus


def test_focus_drops_the_names_a_question_is_about() -> None:
    assert focus("How long may the Heritage Export Licensing Office keep a licence open?").split() == [
        "How",
        "long",
        "may",
        "the",
        "keep",
        "a",
        "licence",
        "open?",
    ]


def test_focus_drops_a_chinese_title_whole() -> None:
    assert "《" not in focus("《机动车驾驶证申领和使用规定》对补考有什么限制？")


def test_focus_keeps_the_numbers_a_question_asks_about() -> None:
    assert "30" in focus("Is a refund paid within 30 days by Northgate Bank?")


def test_a_question_that_is_only_names_stays_whole() -> None:
    assert focus("Northgate Bank Bonus Saver") == "Northgate Bank Bonus Saver"
