"""Scorer `refusal_citation` (SPEC §2): each rule, then equivalence with seed 004's script.

The reference script is `tests/scorers/seed_score_md.py`, copied verbatim from the seed.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase, Gold, Prediction, ScorerOutput
from ragtrack.scorers.base import Batch
from ragtrack.scorers.refusal_citation import RefusalCitationScorer

N = "refusal_citation"
SEED_SCRIPT = Path(__file__).with_name("seed_score_md.py")


def _load_reference() -> Any:
    spec = importlib.util.spec_from_file_location("seed_score_md", SEED_SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


REF = _load_reference()


# ---------------------------------------------------------------- helpers


def case(
    cid: str, answerable: bool = True, gold_ids: list[str] | None = None, claim: str | None = None
) -> EvalCase:
    gold = Gold(answerable=answerable, gold_ids=gold_ids if gold_ids is not None else [], gold_claim=claim)
    return EvalCase(id=cid, question=f"question {cid}?", gold=gold)


def pred(cid: str, answer: str = "", citations: list[str] | None = None, missing: bool = False) -> Prediction:
    return Prediction(case_id=cid, answer=answer, citations=citations, missing=missing)


def run(
    pairs: list[tuple[EvalCase, Prediction]], n_unmatched: int = 0, duplicates_dropped: int = 0, **params: Any
) -> ScorerOutput:
    batch = Batch(
        cases=[c for c, _ in pairs],
        predictions=[p for _, p in pairs],
        n_unmatched=n_unmatched,
        duplicates_dropped=duplicates_dropped,
    )
    return RefusalCitationScorer(**params).score(batch)


def one(answer: str = "", citations: list[str] | None = None, **case_kw: Any) -> dict[str, Any]:
    """Score a single answerable case (gold id `p1#1` unless given) and return its columns."""
    case_kw.setdefault("gold_ids", ["p1#1"])
    out = run([(case("q1", **case_kw), pred("q1", answer, citations))])
    assert len(out.cases) == 1
    return {k.removeprefix(f"{N}/"): v for k, v in out.cases[0].values.items()}


def metric(out: ScorerOutput, name: str) -> float:
    return out.metrics[f"{N}/{name}"]


# ---------------------------------------------------------------- refusal


def test_refusal_ignores_surrounding_whitespace_and_case() -> None:
    assert one("  Not In Context \n")["refusal"] is True


def test_refusal_with_trailing_period_is_an_answer() -> None:
    assert one("not in context.")["refusal"] is False


def test_refusal_inner_whitespace_must_match_exactly() -> None:
    assert one("not  in context")["refusal"] is False


def test_answered_is_not_refusal() -> None:
    assert one("not in context")["answered"] is False


def test_custom_refusal_token_param_is_used() -> None:
    out = run(
        [(case("q1"), pred("q1", " I Don't Know\n")), (case("q2"), pred("q2", "not in context"))],
        refusal_token="i don't know",
    )
    assert [c.values[f"{N}/refusal"] for c in out.cases] == [True, False]


def test_unknown_param_raises_input_error() -> None:
    with pytest.raises(InputError):
        RefusalCitationScorer(refusal_tokn="x")


def test_refusal_token_that_could_never_match_raises_input_error() -> None:
    with pytest.raises(InputError):
        RefusalCitationScorer(refusal_token="Not in context")


def test_info_logs_name_version_and_params() -> None:
    info = RefusalCitationScorer().info
    assert (info.name, info.version, info.params) == (
        "refusal_citation",
        "2",
        {"refusal_token": "not in context"},
    )


# ---------------------------------------------------------------- citations


def test_citation_field_wins_over_text() -> None:
    row = one("answer. citations: [p1#1]", citations=["p9"])
    assert (row["citations"], row["hit"]) == ("p9", False)


def test_citation_field_items_are_stripped() -> None:
    row = one("answer", citations=["  p1#1 \n"])
    assert (row["citations"], row["hit"]) == ("p1#1", True)


def test_empty_citation_field_ignores_text_citations() -> None:
    row = one("answer. citations: [p1#1]", citations=[])
    assert (row["citations"], row["hit"], row["has_citations"]) == ("", False, True)


def test_citation_field_keeps_empty_items_like_the_reference() -> None:
    # The reference strips but does not drop list items: "" matches a gold id "".
    assert one("answer", citations=[" "], gold_ids=[""])["hit"] is True


def test_text_citations_with_spaces_commas_and_newlines() -> None:
    row = one("claim\nCITATIONS :[ p2#1 ,\n p1#1\t p3 ,, ]")
    assert (row["citations"], row["hit"]) == ("p2#1, p1#1, p3", True)


def test_text_citations_only_first_block_counts() -> None:
    assert one("citations: [p9] and later citations: [p1#1]")["hit"] is False


def test_text_citations_label_needs_colon() -> None:
    row = one("citations [p1#1]")
    assert (row["hit"], row["has_citations"]) == (False, False)


def test_empty_text_citations_give_no_hit() -> None:
    assert one("claim. citations: []")["hit"] is False


def test_empty_text_citations_are_compliant() -> None:
    assert one("claim. citations: [ ]")["has_citations"] is True


def test_answer_without_citations_is_not_compliant() -> None:
    assert one("claim with no list")["has_citations"] is False


def test_refusal_without_citations_is_compliant() -> None:
    out = run([(case("q1"), pred("q1", "not in context")), (case("q2"), pred("q2", "no list"))])
    assert metric(out, "compliance") == 0.5


def test_unclosed_citations_bracket_is_no_list() -> None:
    row = one("citations: [p1#1, p2")
    assert (row["citations"], row["has_citations"]) == ("", False)


def test_hit_needs_exact_id() -> None:
    assert one("citations: [P1#1, p1]")["hit"] is False


# ---------------------------------------------------------------- phrase containment


def test_containment_finds_whole_run_case_insensitively() -> None:
    assert (
        one("Per the doc, X IS A CONSTRAINED MAPPING here.", claim="X is a constrained mapping.")["contain"]
        is True
    )


def test_containment_greedy_run_sub_phrase_does_not_count() -> None:
    # The claim's only run is "x is a constrained mapping"; "constrained mapping" alone
    # would match the answer, but the greedy run is never shortened.
    assert one("it is a constrained mapping", claim="X is a constrained mapping.")["contain"] is False


def test_containment_second_run_after_punctuation_counts() -> None:
    assert one("... gamma ...", claim="alpha-beta, gamma")["contain"] is True


def test_containment_run_shorter_than_five_chars_does_not_count() -> None:
    # "abcd " is a 5-char run, but stripped it is "abcd": too short.
    assert one("abcd", claim="abcd ,x")["contain"] is False


def test_containment_stripped_run_of_five_chars_counts() -> None:
    assert one("say hello", claim="hello ,x")["contain"] is True


def test_containment_gold_claim_none_is_false() -> None:
    assert one("anything at all", claim=None)["contain"] is False


def test_containment_gold_claim_empty_is_false() -> None:
    assert one("anything at all", claim="")["contain"] is False


# ---------------------------------------------------------------- CJK-aware containment


def test_cjk_claim_contained_by_a_five_character_window() -> None:
    # The claim's run 退款将在七个工作日内原路退回 shares the window 退款将在七 with the answer.
    row = one("根据政策，退款将在七个工作日内到账。", claim="退款将在七个工作日内原路退回")
    assert (row["contain"], row["contain_cjk"]) == (False, True)


@pytest.mark.parametrize(
    ("answer", "claim", "expected"),
    [
        # Windows of 月度可用性承诺: 月度可用性, 度可用性承, 可用性承诺.
        pytest.param("月度可用是关键", "月度可用性承诺", False, id="four-shared-characters-are-not-enough"),
        pytest.param("我们提供可用性承诺书", "月度可用性承诺", True, id="window-at-the-end-of-a-run"),
        pytest.param("退款很快", "退款很快", False, id="run-shorter-than-five-is-not-used"),
        # norm drops the spaces and folds the full-width digits: the claim's run is 服务可用性不低于.
        pytest.param(
            "服务可用性不低于99.9%", "服务 可用性 不低于 ９９.９%", True, id="runs-taken-after-norm"
        ),
        # norm("SLA 承诺 99.9% 月度可用性") has the CJK runs 承诺 (too short) and 月度可用性.
        pytest.param(
            "月度可用性为99.9%", "SLA 承诺 99.9% 月度可用性", True, id="mixed-claim-split-at-latin-text"
        ),
        pytest.param("退款将在七个工作日内到账", None, False, id="no-claim"),
    ],
)
def test_cjk_containment_rule(answer: str, claim: str | None, expected: bool) -> None:
    assert one(answer, claim=claim)["contain_cjk"] is expected


def test_english_claim_contained_counts_in_both() -> None:
    row = one("We guarantee 99.9% monthly uptime.", claim="99.9% monthly uptime")
    assert (row["contain"], row["contain_cjk"]) == (True, True)


@pytest.fixture
def bilingual() -> ScorerOutput:
    # Answerable: c1 Chinese claim contained (CJK only), c2 English claim contained (both), c3 refused,
    # c4 answered without the claim. Unanswerable u1 is not in either denominator.
    return run(
        [
            (case("c1", claim="退款将在七个工作日内原路退回"), pred("c1", "退款将在七个工作日内到账")),
            (case("c2", claim="99.9% monthly uptime"), pred("c2", "99.9% monthly uptime")),
            (case("c3", claim="退款将在七个工作日内原路退回"), pred("c3", "not in context")),
            (case("c4", claim="退款将在七个工作日内原路退回"), pred("c4", "请联系客服")),
            (case("u1", False, claim="退款将在七个工作日内原路退回"), pred("u1", "退款将在七个工作日内到账")),
        ]
    )


def test_claim_containment_stays_seed_exact(bilingual: ScorerOutput) -> None:
    assert metric(bilingual, "claim_containment") == 1 / 4


def test_claim_containment_cjk_hand_computed(bilingual: ScorerOutput) -> None:
    assert metric(bilingual, "claim_containment_cjk") == 2 / 4


def test_report_gives_both_containments_and_explains_them(bilingual: ScorerOutput) -> None:
    lines = bilingual.report_md.splitlines()
    assert "- Claim containment (answerable): **25.0%**" in lines
    assert "- Claim containment, CJK-aware (answerable): **50.0%**" in lines
    assert "Claim containment: the share" in bilingual.report_md
    assert "Claim containment, CJK-aware, also counts" in bilingual.report_md


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("answerable", "answer", "expected"),
    [
        (True, "citations: [p1#1]", "OK"),
        (False, "Not in context", "REFUSAL_OK"),
        (True, "not in context", "OVER_REFUSAL"),
        (False, "citations: [p1#1]", "HALLUCINATION"),
        (True, "citations: [p2#1]", "ANS_NO_HIT"),
    ],
)
def test_label(answerable: bool, answer: str, expected: str) -> None:
    assert one(answer, answerable=answerable)["label"] == expected


def test_refused_answerable_with_hitting_citation_field_is_over_refusal() -> None:
    assert one("not in context", citations=["p1#1"])["label"] == "OVER_REFUSAL"


# ---------------------------------------------------------------- rates


@pytest.fixture
def mixed() -> ScorerOutput:
    # q1 OK+contain, q2 ANS_NO_HIT, q3 OVER_REFUSAL, q4 REFUSAL_OK, q5 HALLUCINATION (cites p5).
    return run(
        [
            (case("q1", True, ["p1"], "alpha beta gamma"), pred("q1", "Alpha beta gamma. citations: [p1]")),
            (case("q2", True, ["p2"], "delta epsilon"), pred("q2", "delta epsilon", citations=["p9"])),
            (case("q3", True, ["p3"]), pred("q3", "not in context")),
            (case("q4", False), pred("q4", "NOT IN CONTEXT")),
            (case("q5", False, ["p5"]), pred("q5", "made up citations: [p5]")),
        ]
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("n_scored", 5.0),
        ("precision", 1 / 3),  # answered q1 q2 q5; correct q1
        ("over_refusal", 1 / 3),  # answerable q1 q2 q3; refused q3
        ("under_refusal", 1 / 2),  # unanswerable q4 q5; answered q5
        ("citation_hit_rate", 1 / 3),
        ("claim_containment", 2 / 3),  # q1 and q2 contain their claims; q3 refused
    ],
)
def test_rates_hand_computed(mixed: ScorerOutput, name: str, expected: float) -> None:
    assert metric(mixed, name) == expected


def test_compliance_hand_computed(mixed: ScorerOutput) -> None:
    assert metric(mixed, "compliance") == 1.0  # q1 text list, q2 field, q3 q4 refusals, q5 text list


def test_metrics_are_floats(mixed: ScorerOutput) -> None:
    assert all(type(v) is float for v in mixed.metrics.values())


def test_metric_names(mixed: ScorerOutput) -> None:
    names = {
        "precision",
        "over_refusal",
        "under_refusal",
        "citation_hit_rate",
        "claim_containment",
        "claim_containment_cjk",
        "compliance",
        "n_scored",
        "n_missing",
        "n_unmatched",
        "duplicates_dropped",
    }
    assert set(mixed.metrics) == {f"{N}/{x}" for x in names}


def test_case_columns(mixed: ScorerOutput) -> None:
    cols = {
        "label",
        "answered",
        "refusal",
        "hit",
        "contain",
        "contain_cjk",
        "has_citations",
        "citations",
        "missing",
    }
    assert all(set(c.values) == {f"{N}/{x}" for x in cols} for c in mixed.cases)


def test_precision_zero_when_nothing_answered() -> None:
    out = run([(case("q1"), pred("q1", "not in context")), (case("q2", False), pred("q2", "not in context"))])
    assert metric(out, "precision") == 0.0


@pytest.mark.parametrize("name", ["over_refusal", "citation_hit_rate", "claim_containment"])
def test_answerable_rates_zero_without_answerable_cases(name: str) -> None:
    out = run([(case("q1", False), pred("q1", "x citations: [p1#1]"))])
    assert metric(out, name) == 0.0


def test_under_refusal_zero_without_unanswerable_cases() -> None:
    out = run([(case("q1", True), pred("q1", "citations: [p1#1]"))])
    assert metric(out, "under_refusal") == 0.0


@pytest.mark.parametrize(
    "name",
    ["precision", "over_refusal", "under_refusal", "citation_hit_rate", "claim_containment", "compliance"],
)
def test_every_rate_zero_for_one_missing_answerable_prediction(name: str) -> None:
    out = run([(case("q1", claim="seven days"), pred("q1", missing=True))])
    assert metric(out, name) == 0.0


# ---------------------------------------------------------------- which cases are scored


def test_missing_prediction_is_scored_and_marked() -> None:
    out = run([(case("q1"), pred("q1", missing=True)), (case("q2"), pred("q2", "citations: [p1#1]"))])
    assert [(c.case_id, c.values[f"{N}/missing"]) for c in out.cases] == [("q1", True), ("q2", False)]


def test_missing_prediction_is_scored_as_the_empty_answer() -> None:
    missing = run([(case("q1", False), pred("q1", missing=True))]).cases[0].values
    empty = run([(case("q1", False), pred("q1", ""))]).cases[0].values
    assert {**missing, f"{N}/missing": False} == empty


def test_missing_unanswerable_prediction_is_a_hallucination_like_the_empty_answer() -> None:
    out = run([(case("q1", False), pred("q1", missing=True))])
    assert (out.cases[0].values[f"{N}/label"], metric(out, "under_refusal")) == ("HALLUCINATION", 1.0)


def test_missing_predictions_share_the_denominator() -> None:
    out = run(
        [
            (case("q1"), pred("q1", missing=True)),
            (case("q2", gold_ids=["p1#1"]), pred("q2", "citations: [p1#1]")),
        ]
    )
    assert (metric(out, "n_scored"), metric(out, "n_missing"), metric(out, "citation_hit_rate")) == (
        2.0,
        1.0,
        0.5,
    )


def test_case_without_gold_and_missing_prediction_is_neither_scored_nor_unmatched() -> None:
    out = run(
        [(EvalCase(id="x1", question="no gold?"), pred("x1", missing=True)), (case("q1"), pred("q1", "a"))]
    )
    assert ([c.case_id for c in out.cases], metric(out, "n_unmatched")) == (["q1"], 0.0)


def test_missing_prediction_is_not_unmatched() -> None:
    out = run([(case("q1"), pred("q1", missing=True))])
    assert metric(out, "n_unmatched") == 0.0


def test_case_without_gold_is_not_scored() -> None:
    no_gold = EvalCase(id="x1", question="no gold?")
    out = run([(no_gold, pred("x1", "citations: [p1#1]")), (case("q1"), pred("q1", "a"))])
    assert [c.case_id for c in out.cases] == ["q1"]


def test_case_without_gold_counts_as_unmatched_with_the_batch_count() -> None:
    no_gold = EvalCase(id="x1", question="no gold?")
    out = run([(no_gold, pred("x1", "citations: [p1#1]")), (case("q1"), pred("q1", "a"))], n_unmatched=2)
    assert metric(out, "n_unmatched") == 3.0


def test_duplicates_dropped_passed_through() -> None:
    out = run([(case("q1"), pred("q1", "a"))], duplicates_dropped=4)
    assert metric(out, "duplicates_dropped") == 4.0


def test_cases_keep_batch_order() -> None:
    out = run([(case("b"), pred("b", "x")), (case("a"), pred("a", "y"))])
    assert [c.case_id for c in out.cases] == ["b", "a"]


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "]]]citations: [[[",
        "citations: [\x00, \ud7ff, ,,]",
        "C I T A T I O N S",
        "İSTANBUL not in context",
        "\u212a" * 5,
        "x" * 100_000,
    ],
)
def test_malformed_answers_do_not_raise(answer: str) -> None:
    out = run(
        [(case("q1", claim="K\u212aKKK kelvin, İi stanbul"), pred("q1", answer, citations=["", "]", "None"]))]
    )
    assert len(out.cases) == 1


# ---------------------------------------------------------------- report


def test_report_starts_with_section_heading(mixed: ScorerOutput) -> None:
    assert mixed.report_md.startswith("## refusal_citation\n")


def test_report_has_reference_style_table_row(mixed: ScorerOutput) -> None:
    assert "| q3 | false | false | true | **OVER_REFUSAL** |" in mixed.report_md.splitlines()


def test_report_has_extra_bullets(mixed: ScorerOutput) -> None:
    lines = mixed.report_md.splitlines()
    expected = [
        "- Compliance (citations list or refusal): **100.0%**",
        "- Unmatched traces: **0**",
        "- Duplicates dropped (last trace kept): **0**",
    ]
    assert all(x in lines for x in expected)


# ---------------------------------------------------------------- equivalence with the reference

BULLETS = {
    "n_scored": "Questions scored",
    "precision": "Answer precision (over answered)",
    "over_refusal": "Over-refusal (answerable but refused)",
    "under_refusal": "Under-refusal / Hallucination (unanswerable but answered)",
    "citation_hit_rate": "Citation hit rate (answerable)",
    "claim_containment": "Claim containment (answerable)",
}


def pct(x: float) -> str:  # the reference's own formatting
    return f"{100 * x:.1f}%"


def parse_reference_md(md: str) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """The 6 bullet values and the per-question rows of a report (ours or the reference's)."""
    bullets = {}
    for key, text in BULLETS.items():
        m = re.search(rf"^- {re.escape(text)}: \*\*(.*)\*\*$", md, re.MULTILINE)
        assert m, f"no bullet {text!r} in\n{md}"
        bullets[key] = m.group(1)
    rows = []
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| qid "):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            cells[-1] = cells[-1].strip("*")
            rows.append(tuple(cells))
    return bullets, rows


def our_bullets(out: ScorerOutput) -> dict[str, str]:
    got = {k: pct(metric(out, k)) for k in BULLETS if k != "n_scored"}
    got["n_scored"] = str(int(metric(out, "n_scored")))
    return got


def our_rows(out: ScorerOutput) -> list[tuple[str, ...]]:
    def b(x: Any) -> str:
        return str(x).lower()

    return [
        (
            c.case_id,
            b(c.values[f"{N}/answered"]),
            b(c.values[f"{N}/hit"]),
            b(c.values[f"{N}/refusal"]),
            str(c.values[f"{N}/label"]),
        )
        for c in out.cases
    ]


def batch_like_runner(gold_items: list[dict[str, Any]], traces: list[dict[str, Any]]) -> Batch:
    """Cases from the qaset; traces matched by exact question text (`q` or `question`)."""
    cases = [
        EvalCase(
            id=g["qid"],
            question=g["q"],
            gold=Gold(
                answerable=g["answerable"], gold_ids=g.get("gold_ids", []), gold_claim=g.get("gold_claim")
            ),
        )
        for g in gold_items
    ]
    by_q = {c.question: c for c in cases}
    preds: dict[str, Prediction] = {}
    n_unmatched = 0
    for t in traces:
        q = t.get("q") or t.get("question") or ""
        if q not in by_q:
            n_unmatched += 1
            continue
        cid = by_q[q].id
        assert cid not in preds, "equivalence inputs have at most one trace per question"
        cits = t.get("citations")
        preds[cid] = Prediction(
            case_id=cid,
            answer=t.get("answer") or "",
            citations=[str(x) for x in cits] if isinstance(cits, list) else None,
        )
    predictions = [preds.get(c.id, Prediction(case_id=c.id, missing=True)) for c in cases]
    return Batch(cases=cases, predictions=predictions, n_unmatched=n_unmatched)


def with_empty_traces(gold_items: list[dict[str, Any]], traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The traces plus `{"q": question, "answer": ""}` for each gold question without one: what the
    reference must be given to score missing predictions as the scorer does (SPEC §6)."""
    asked = {t.get("q") or t.get("question") or "" for t in traces}
    return traces + [{"q": g["q"], "answer": ""} for g in gold_items if g["q"] not in asked]


def write_inputs(
    d: Path, gold_items: list[dict[str, Any]], traces: list[dict[str, Any]]
) -> tuple[Path, Path]:
    d.mkdir(parents=True, exist_ok=True)
    qa, tr = d / "qaset.json", d / "trace.jsonl"
    qa.write_text(json.dumps(gold_items), encoding="utf8")
    tr.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf8")
    return qa, tr


# The seed's own qaset, verbatim, and traces written for it (the first is the seed's example).
SEED_QASET = [
    {
        "qid": "q1",
        "q": "What is X?",
        "answerable": True,
        "gold_ids": ["p1#1"],
        "gold_claim": "X is a constrained mapping.",
    },
    {
        "qid": "q2",
        "q": "Explain Y.",
        "answerable": True,
        "gold_ids": ["p2#1"],
        "gold_claim": "Y is unrelated to X.",
    },
    {"qid": "q3", "q": "What is Z?", "answerable": False, "gold_ids": []},
    {"qid": "q4", "q": "Summarize the external link.", "answerable": False, "gold_ids": []},
]
SEED_TRACES = [
    {
        "ts": 1699999999,
        "q": "What is X?",
        "chunks": [{"id": "p1#1"}],
        "answer": "- X is a constrained mapping.\n- citations: [p1#1]",
        "ok": True,
    },
    {"ts": 1700000000, "question": "Explain Y.", "answer": "Y relates to X. citations: [p1#1]"},
    {"ts": 1700000001, "q": "What is Z?", "answer": "  NOT IN CONTEXT\n"},
    {"ts": 1700000002, "q": "Summarize the external link.", "answer": "The link says Z. citations: []"},
    {"ts": 1700000003, "q": "What is W?", "answer": "not in context"},
]


@pytest.fixture(scope="module")
def seed_example(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ScorerOutput]:
    qa, tr = write_inputs(tmp_path_factory.mktemp("seed"), SEED_QASET, SEED_TRACES)
    proc = subprocess.run(
        [sys.executable, str(SEED_SCRIPT), str(qa), str(tr)], capture_output=True, text=True, check=True
    )
    return proc.stdout, RefusalCitationScorer().score(batch_like_runner(SEED_QASET, SEED_TRACES))


def test_seed_example_hand_computed(seed_example: tuple[str, ScorerOutput]) -> None:
    _, out = seed_example
    assert our_bullets(out) == {
        "n_scored": "4",
        "precision": "33.3%",  # answered q1 q2 q4, correct q1
        "over_refusal": "0.0%",
        "under_refusal": "50.0%",  # q4 answered
        "citation_hit_rate": "50.0%",  # q1
        "claim_containment": "50.0%",  # q1; q2's "y relates to x" is not the run "y is unrelated to x"
    }


def test_seed_example_unmatched_and_compliance(seed_example: tuple[str, ScorerOutput]) -> None:
    _, out = seed_example
    assert (metric(out, "n_unmatched"), metric(out, "compliance")) == (1.0, 1.0)


def test_seed_example_bullets_equal_reference(seed_example: tuple[str, ScorerOutput]) -> None:
    md, out = seed_example
    assert our_bullets(out) == parse_reference_md(md)[0]


def test_seed_example_rows_equal_reference(seed_example: tuple[str, ScorerOutput]) -> None:
    md, out = seed_example
    assert sorted(our_rows(out)) == sorted(parse_reference_md(md)[1])


def test_seed_example_report_repeats_reference_lines(seed_example: tuple[str, ScorerOutput]) -> None:
    md, out = seed_example
    ref_lines = [x for x in md.splitlines() if x.startswith(("- ", "| "))]
    assert all(x in out.report_md.splitlines() for x in ref_lines)


# ---- randomized inputs

ID_POOL = ["p1#1", "p2#1", "p3", "doc-4", "7", "a b"]
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "x",
    "is",
    "a",
    "constrained",
    "mapping",
    "unrelated",
    "foo-bar",
    "z9",
    "İş",
    "naïve",
]


def _recase(rng: random.Random, s: str) -> str:
    return "".join(ch.upper() if rng.random() < 0.3 else ch for ch in s)


def _claim(rng: random.Random) -> str:
    parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 6))]
    s = parts[0]
    for w in parts[1:]:
        s += rng.choice([" ", " ", ", ", "-", ". ", "  \n"]) + w
    return _recase(rng, s) + rng.choice(["", ".", " "])


def _cit_block(rng: random.Random, gold_ids: list[str]) -> str:
    ids = [rng.choice(gold_ids + ID_POOL) for _ in range(rng.randint(0, 3))]
    inner = ""
    for i, x in enumerate(ids):
        inner += (rng.choice([",", ", ", " ", "\n", " ,\t", ",,"]) if i else "") + x
    inner = rng.choice(["", " ", "\n"]) + inner + rng.choice(["", " ", ",", "\n"])
    lab = rng.choice(["citations", "Citations", "CITATIONS", "citation"])
    block = f"{lab}{rng.choice(['', ' ', '  '])}:{rng.choice(['', ' ', chr(10)])}[{inner}]"
    return block if rng.random() > 0.1 else block[:-1]  # sometimes unclosed


def _answer(rng: random.Random, claim: str | None, gold_ids: list[str]) -> str | None:
    kind = rng.random()
    if kind < 0.25:
        core = rng.choice(["not in context", "not in context", "not in context.", "not  in context"])
        return rng.choice(["", " ", "\n", "\t "]) + _recase(rng, core) + rng.choice(["", " ", "\n"])
    if kind < 0.3:
        return rng.choice(["", None, " "])
    text = ""
    if claim and rng.random() < 0.6:
        lo = rng.randint(0, len(claim) // 2)
        text = claim[lo : rng.randint(lo, len(claim))]
        text = text.lower() if rng.random() < 0.5 else text
    else:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))
    if rng.random() < 0.7:
        text += rng.choice(["\n- ", " ", ". "]) + _cit_block(rng, gold_ids)
    return text


def random_input(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    gold_items = []
    for i in range(rng.randint(1, 9)):  # denominators <= 9: distinct rates differ by > 0.1%
        g: dict[str, Any] = {
            "qid": f"q{i}",
            "q": f"Question {i} about {rng.choice(WORDS)}?",
            "answerable": rng.random() < 0.6,
        }
        g["gold_ids"] = (
            rng.sample(ID_POOL, rng.randint(0, 3)) if g["answerable"] or rng.random() < 0.3 else []
        )
        r = rng.random()
        if r < 0.6:
            g["gold_claim"] = _claim(rng)
        elif r < 0.75:
            g["gold_claim"] = None
        elif r < 0.85:
            g["gold_claim"] = ""
        gold_items.append(g)
    traces: list[dict[str, Any]] = []
    for g in gold_items:
        if rng.random() < 0.15:
            continue  # no trace: the case is missing
        t: dict[str, Any] = {"ts": rng.randint(0, 10**9)}
        t[rng.choice(["q", "question"])] = g["q"]
        ans = _answer(rng, g.get("gold_claim"), g["gold_ids"])
        if ans is not None or rng.random() < 0.5:
            t["answer"] = ans
        r = rng.random()
        if r < 0.35:
            t["citations"] = [
                rng.choice(
                    [
                        rng.choice(g["gold_ids"] or ID_POOL),
                        rng.choice(g["gold_ids"] + ID_POOL),
                        f" {rng.choice(ID_POOL)} ",
                        7,
                        "",
                        "None",
                    ]
                )
                for _ in range(rng.randint(0, 3))
            ]
        elif r < 0.4:
            t["citations"] = rng.choice(ID_POOL)  # not a list: the text is parsed instead
        traces.append(t)
    for k in range(rng.randint(0, 2)):
        traces.append({rng.choice(["q", "question"]): f"Unknown {k}?", "answer": "not in context"})
    rng.shuffle(traces)
    return gold_items, traces


SEEDS = range(100)
DRIVER = """
import contextlib, importlib.util, io, json, sys
spec = importlib.util.spec_from_file_location("seed_score_md", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = []
for qa, tr in json.load(open(sys.argv[2], encoding="utf8")):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mod.main(qa, tr)
    out.append(buf.getvalue())
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def random_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]], str, ScorerOutput]]:
    """For every seed: gold, traces, the reference's Markdown (one subprocess for all) and our output.

    Some gold questions get no trace: the scorer sees a missing prediction, and the reference
    is given an empty-answer trace for it instead (`with_empty_traces`)."""
    root = tmp_path_factory.mktemp("random")
    inputs = [random_input(s) for s in SEEDS]
    filled = [with_empty_traces(g, t) for g, t in inputs]
    pairs = [
        [str(p) for p in write_inputs(root / f"s{s}", g, f)]
        for s, (g, _), f in zip(SEEDS, inputs, filled, strict=True)
    ]
    (root / "manifest.json").write_text(json.dumps(pairs), encoding="utf8")
    (root / "driver.py").write_text(DRIVER, encoding="utf8")
    proc = subprocess.run(
        [sys.executable, str(root / "driver.py"), str(SEED_SCRIPT), str(root / "manifest.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    mds = json.loads(proc.stdout)
    scorer = RefusalCitationScorer()
    return [
        (g, f, md, scorer.score(batch_like_runner(g, t)))
        for (g, t), f, md in zip(inputs, filled, mds, strict=True)
    ]


def test_random_inputs_cover_every_label(random_runs: list[Any]) -> None:
    labels = {c.values[f"{N}/label"] for *_, out in random_runs for c in out.cases}
    assert labels == {"OK", "REFUSAL_OK", "OVER_REFUSAL", "HALLUCINATION", "ANS_NO_HIT"}


def test_random_inputs_cover_hits_containment_unmatched_and_missing(random_runs: list[Any]) -> None:
    vals = [c.values for *_, out in random_runs for c in out.cases]
    seen = (
        any(v[f"{N}/contain"] for v in vals),
        any(v[f"{N}/hit"] for v in vals),
        any(metric(out, "n_unmatched") for *_, out in random_runs),
        any(not v[f"{N}/has_citations"] for v in vals),
        any(v[f"{N}/missing"] for v in vals),
    )
    assert seen == (True, True, True, True, True)


def test_random_bullets_equal_reference(random_runs: list[Any]) -> None:
    bad = [
        i for i, (_, _, md, out) in enumerate(random_runs) if our_bullets(out) != parse_reference_md(md)[0]
    ]
    assert bad == []


def test_random_rows_equal_reference(random_runs: list[Any]) -> None:
    bad = [
        i
        for i, (_, _, md, out) in enumerate(random_runs)
        if sorted(our_rows(out)) != sorted(parse_reference_md(md)[1])
    ]
    assert bad == []


def test_random_report_repeats_reference_lines(random_runs: list[Any]) -> None:
    def ref_lines(md: str) -> list[str]:
        return [x for x in md.splitlines() if x.startswith(("- ", "| "))]

    bad = [
        i
        for i, (_, _, md, out) in enumerate(random_runs)
        if not set(ref_lines(md)) <= set(out.report_md.splitlines())
    ]
    assert bad == []


def test_random_rows_match_reference_functions(random_runs: list[Any]) -> None:
    """refusal/hit/contain/citations of every matched trace equal the reference functions' on the raw
    trace."""
    mismatches = []
    for gold_items, traces, _, out in random_runs:
        gold = {g["q"]: g for g in gold_items}
        ours = {c.case_id: c.values for c in out.cases}
        for t in traces:
            q = t.get("q") or t.get("question") or ""
            if q not in gold:
                continue
            g = gold[q]
            ans = t.get("answer", "")
            cits = REF.parse_citations(ans, t.get("citations"))
            ref = (
                REF.is_refusal(ans),
                bool(set(cits) & set(g.get("gold_ids", []))),
                REF.phrase_containment(g.get("gold_claim", ""), ans),
                ", ".join(cits),
            )
            v = ours[g["qid"]]
            got = (v[f"{N}/refusal"], v[f"{N}/hit"], v[f"{N}/contain"], v[f"{N}/citations"])
            if got != ref:
                mismatches.append((g["qid"], t, ref, got))
    assert mismatches == []
