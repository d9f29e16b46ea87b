"""Scorer `rag` (SPEC §3): every formula by hand, with a fake encoder; NaN handling; bad input."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.types import AnswerExample, ContextChunk, EvalCase, ExpectedV2, Prediction, RagReference
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.inputs.predictions import match_prediction_file
from ragtrack.nlp.contradiction import grounding, word_coverage, words
from ragtrack.nlp.entities import focus
from ragtrack.scorers import Batch, build_scorer, support_model
from ragtrack.scorers.judge import OfflineJudge
from ragtrack.scorers.rag import EmbeddingScorer, average_precision
from ragtrack.scorers.support_model import SupportFeatures
from tests.fake_encoder import FakeEncoder

Case = tuple[EvalCase, Prediction]


def case(
    cid: str,
    *,
    question: str = "Q?",
    answer: str = "",
    contexts: tuple[str, ...] = (),
    gt: str | None = None,
    gt_contexts: list[str] | None = None,
) -> Case:
    ref = RagReference(ground_truth_answer=gt, ground_truth_contexts=gt_contexts)
    return (
        EvalCase(id=cid, question=question, reference=ref),
        Prediction(case_id=cid, answer=answer, contexts=[ContextChunk(text=c) for c in contexts]),
    )


def embedding_scorer(name: str, params: dict[str, Any] | None = None) -> EmbeddingScorer:
    """`build_scorer(name, params)` of a scorer that takes an encoder (`rag`, `earag`)."""
    scorer = build_scorer(name, params)
    assert isinstance(scorer, EmbeddingScorer)
    return scorer


def score(
    *cases: Case, encoder: FakeEncoder | None = None, **params: Any
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    scorer = embedding_scorer("rag", params).use_encoder(encoder or FakeEncoder())
    out = scorer.score(Batch(cases=[c for c, _ in cases], predictions=[p for _, p in cases]))
    return {cs.case_id: cs.values for cs in out.cases}, out.metrics


FEE = "The fee is 20 dollars. Refunds take 5 days."


def measured(statement: str, sources: tuple[str, ...], encoder: FakeEncoder | None = None) -> SupportFeatures:
    """What the offline judge measures of `statement` against `sources`."""
    judge = OfflineJudge(encoder or FakeEncoder(), relevance_cosine_weight=0.5)
    (found,) = judge.measure([statement], list(sources)) or [None]
    assert found is not None
    return found[0]


def graded(statement: str, sources: tuple[str, ...], encoder: FakeEncoder | None = None) -> float:
    """SPEC §3: 1 − the shipped support model's probability that `statement` is not supported."""
    return 1 - support_model.load().unsupported(measured(statement, sources, encoder))


def test_faithfulness_is_the_mean_graded_support_of_the_answer_statements() -> None:
    # the first statement is contained in the context (1); the second matches nothing (its graded support)
    rows, _ = score(case("a", answer="The fee is 20 dollars. Pets are welcome here.", contexts=(FEE,)))
    assert rows["a"]["rag/faithfulness"] == pytest.approx((1.0 + graded("Pets are welcome here", (FEE,))) / 2)
    assert json.loads(rows["a"]["rag/unsupported"]) == [
        {"statement": "Pets are welcome here", "reason": "no_match"}
    ]


def test_a_changed_number_contradicts_its_evidence_and_keeps_half_its_graded_support() -> None:
    rows, _ = score(case("a", answer="The fee is 30 dollars.", contexts=(FEE,)))
    assert rows["a"]["rag/faithfulness"] == pytest.approx(0.5 * graded("The fee is 30 dollars", (FEE,)))
    assert json.loads(rows["a"]["rag/unsupported"]) == [
        {"statement": "The fee is 30 dollars", "reason": "contradicts: quantity 30usd vs 20usd"}
    ]


def test_a_number_the_sources_lack_where_they_have_no_rival_is_a_fact_mismatch() -> None:
    rows, _ = score(
        case("a", answer="The fee applies to 30 guests.", contexts=("The fee applies to guests.",))
    )
    assert json.loads(rows["a"]["rag/unsupported"]) == [
        {"statement": "The fee applies to 30 guests", "reason": "fact_mismatch: 30"}
    ]


def test_the_same_amount_in_another_unit_is_supported() -> None:
    rows, _ = score(case("a", answer="Refunds take three days.", contexts=("Refunds take 72 hours.",)))
    assert json.loads(rows["a"]["rag/unsupported"]) == []


def test_a_negated_copy_of_its_evidence_contradicts_it() -> None:
    rows, _ = score(
        case("a", answer="The deposit is not refundable.", contexts=("The deposit is refundable.",))
    )
    assert (
        json.loads(rows["a"]["rag/unsupported"])[0]["reason"]
        == "contradicts: polarity: more negations in the statement"
    )


def test_a_supported_statement_scores_higher_the_closer_its_evidence() -> None:
    def faithfulness(cos: float) -> float:
        enc = FakeEncoder(
            {
                "Refunds arrive within 5 days": [1, 0],
                "Refunds arrive quickly, in 5 days": [cos, math.sqrt(1 - cos**2)],
            }
        )
        rows, _ = score(
            case(
                "a", answer="Refunds arrive within 5 days.", contexts=("Refunds arrive quickly, in 5 days.",)
            ),
            encoder=enc,
        )
        assert json.loads(rows["a"]["rag/unsupported"]) == []
        return float(rows["a"]["rag/faithfulness"])

    assert 1.0 > faithfulness(0.95) > faithfulness(0.8)


def test_the_judge_measures_a_clause_the_sources_lack_as_less_grounded() -> None:
    said = "Refunds for store credit expire, and refunds take 5 days once the parcel is checked"
    source = "Once the warehouse has checked the parcel, refunds take 5 days"
    assert measured(said, (source,)).grounding == grounding(said, words(source)) < 1


def test_the_judge_measures_a_clause_negated_where_its_source_clause_is_not() -> None:
    said = "A kennel cough vaccine is not required for the stay"
    source = "Dogs must also have received a kennel cough vaccine at least 14 days before the stay"
    assert measured(said, (source,)).reversed_polarity == 1.0
    assert measured("A kennel cough vaccine is required for the stay", (source,)).reversed_polarity == 0.0


def test_the_judge_measures_the_share_of_support_tokens_one_sentence_holds() -> None:
    # {refund, arrive, within, 5 days}: 3 of 4 in the second sentence; no cosine (fake axes)
    f = measured("Refunds arrive within 5 days", ("Fees are waived. Refunds arrive quickly, in 5 days.",))
    assert (f.lexical, f.cosine) == (0.75, 0.0)


def test_the_judge_measures_the_share_of_support_tokens_all_sources_hold() -> None:
    # {apollo, moon, armstrong, collin, aldrin}: at most 2 in one sentence, 4 in the sources
    f = measured(
        "Apollo Moon Armstrong Collins Aldrin", ("Apollo reached the Moon.", "Armstrong and Collins flew it.")
    )
    assert (f.lexical, f.sources_lexical) == (0.4, 0.8)


def test_context_recall_is_the_mean_graded_support_of_the_ground_truth_statements() -> None:
    rows, _ = score(
        case("a", contexts=("The fee is 20 dollars.",), gt="The fee is 20 dollars. Pets are welcome here.")
    )
    unmatched = graded("Pets are welcome here", ("The fee is 20 dollars.",))
    assert rows["a"]["rag/context_recall"] == pytest.approx((1.0 + unmatched) / 2)
    assert json.loads(rows["a"]["rag/not_recalled"]) == [
        {"statement": "Pets are welcome here", "reason": "no_match"}
    ]


@pytest.mark.parametrize(
    ("relevant", "ap"),
    [
        ([], 0.0),
        ([False, False], 0.0),
        ([True], 1.0),
        ([False, True], 0.5),
        ([True, False, True], (1 + 2 / 3) / 2),
    ],
)
def test_average_precision(relevant: list[bool], ap: float) -> None:
    assert average_precision(relevant) == pytest.approx(ap)


def test_context_precision_matches_chunks_by_rapidfuzz_ratio_and_averages_precision_at_k() -> None:
    # ratio("alphabetagammadelta!", "alphabetagammadelta.") = 95 >= 90; the first chunk is no match
    retrieved = ("Something else entirely.", "Alpha beta gamma delta.", "alpha beta  gamma delta!")
    rows, _ = score(case("a", contexts=retrieved, gt_contexts=["Alpha beta gamma delta."]))
    assert rows["a"]["rag/context_precision"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    rows, _ = score(case("a", contexts=retrieved, gt_contexts=["Alpha beta gamma delta."]), match_ratio=96)
    assert rows["a"]["rag/context_precision"] == pytest.approx(1 / 2)


def test_context_precision_with_partial_ratio_matches_a_chunk_cut_from_a_longer_passage() -> None:
    # small chunks of one ground-truth passage: ratio rejects both (lengths differ), partial_ratio finds each
    # inside it
    passage = "Section 2. Compute instances in two zones get 99.95% uptime. A single zone gets 99.9% uptime."
    retrieved = (
        "Weather report for Tuesday.",
        "Compute instances in two zones get 99.95% uptime.",
        "A single zone gets 99.9% uptime.",
    )
    rows, _ = score(case("a", contexts=retrieved, gt_contexts=[passage]))
    assert rows["a"]["rag/context_precision"] == 0.0
    rows, _ = score(case("a", contexts=retrieved, gt_contexts=[passage]), match_scorer="partial_ratio")
    assert rows["a"]["rag/context_precision"] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_context_relevance_is_the_mean_of_best_sentence_cosine_and_question_word_share() -> None:
    # chunk 1: 0.5 · cos 0.6 of its best sentence + 0.5 · {refund} of {refund, fee} = 0.55; chunk 2: 0
    enc = FakeEncoder({"Refund fee?": [1, 0], "The refund takes long": [0.6, 0.8]})
    chunks = ("Offices open at nine. The refund takes long.", "Weather report.")
    rows, _ = score(case("a", question="Refund fee?", contexts=chunks), encoder=enc)
    assert rows["a"]["rag/context_relevance"] == pytest.approx(0.275)


PASS_QUESTION = "What does the pass cost for students?"  # focus words {pass, cost, student}
PASS_ANSWERS = "The pass costs 20 dollars for students."  # all three
PASS_HISTORY = "The pass was launched in 1990."  # {pass} only


def test_a_focus_word_every_retrieved_chunk_has_counts_half_in_the_lexical_half() -> None:
    # {pass} is in both chunks: it tells neither apart, so each chunk's lexical half is the mean of its share
    # of {pass, cost, student} and of {cost, student}: 1 and (1/3 + 0) / 2; every cosine is 0
    case_ = case("a", question=PASS_QUESTION, contexts=(PASS_ANSWERS, PASS_HISTORY))
    rows, _ = score(case_, encoder=FakeEncoder())
    assert rows["a"]["rag/context_relevance"] == pytest.approx((0.5 * 1 + 0.5 * (1 / 3 + 0) / 2) / 2)


def test_a_chunk_retrieved_twice_keeps_its_whole_share_of_the_focus_words() -> None:
    case_ = case("a", question=PASS_QUESTION, contexts=(PASS_HISTORY, PASS_HISTORY))
    rows, _ = score(case_, encoder=FakeEncoder())
    assert rows["a"]["rag/context_relevance"] == pytest.approx(0.5 * 1 / 3)


def test_answer_relevancy_does_not_count_the_names_the_question_is_about() -> None:
    # the question's focus is `What is the fee?`: an answer on the Harbour Card that names no fee has
    # none of its words (each text has its own axis: cosine 0)
    rows, _ = score(
        case(
            "a", question="What is the Harbour Card fee?", answer="The Harbour Card is blue.", contexts=("x",)
        ),
        encoder=FakeEncoder(),
    )
    assert rows["a"]["rag/answer_relevancy"] == 0.0


def test_a_chunk_that_answers_one_of_two_asks_has_the_mean_of_its_relevance_to_each() -> None:
    # asks `What is the fee` (focus words {fee}) and `who waives it for students?` ({waiv, student}): the
    # chunk has 1 of 1 and 0 of 2 (read whole, 1 of 3); each text has its own axis, so every cosine is 0
    question = "What is the fee, and who waives it for students?"
    rows, _ = score(case("a", question=question, contexts=("The fee is 20 dollars.",)), encoder=FakeEncoder())
    assert rows["a"]["rag/context_relevance"] == pytest.approx((0.5 * 1 + 0.5 * 0) / 2)


def test_answer_relevancy_combines_cosine_and_question_words_with_the_configured_weight() -> None:
    enc = FakeEncoder({"Refund fee?": [1, 0], "Fee waived": [0.6, 0.8]})
    rows, _ = score(
        case("a", question="Refund fee?", answer="Fee waived.", contexts=("x",)),
        encoder=enc,
        relevance_cosine_weight=0.25,
    )
    assert rows["a"]["rag/answer_relevancy"] == pytest.approx(0.25 * 0.6 + 0.75 * 0.5)


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall)


def test_answer_correctness_is_the_f1_of_agreement_in_both_directions() -> None:
    # precision: the answer's one statement is in the ground truth (1); recall: the ground truth's first
    # statement is in the answer (1), its second matches nothing there and counts by its graded support
    rows, _ = score(case("a", answer="The fee is 20 dollars.", contexts=("x",), gt=FEE))
    recall = (1.0 + graded("Refunds take 5 days", ("The fee is 20 dollars.",))) / 2
    assert rows["a"]["rag/answer_correctness"] == pytest.approx(_f1(1.0, recall))


def test_a_supported_statement_counts_1_in_answer_correctness_whatever_its_wording() -> None:
    said, gt = "Refunds arrive within 5 days.", "Refunds arrive quickly, in 5 days."
    enc = FakeEncoder(
        {"Refunds arrive within 5 days": [1, 0], "Refunds arrive quickly, in 5 days": [0.9, 0.44]}
    )
    rows, _ = score(case("a", answer=said, contexts=(gt,), gt=gt), encoder=enc)
    assert rows["a"]["rag/faithfulness"] < 1.0 and rows["a"]["rag/answer_correctness"] == 1.0


def test_answer_correctness_adds_a_cosine_term_when_weighted() -> None:
    enc = FakeEncoder({"The fee is 20 dollars.": [1, 0], FEE: [0.6, 0.8]})
    rows, _ = score(
        case("a", answer="The fee is 20 dollars.", contexts=("x",), gt=FEE),
        encoder=enc,
        correctness_f1_weight=0.75,
    )
    recall = (1.0 + graded("Refunds take 5 days", ("The fee is 20 dollars.",))) / 2
    assert rows["a"]["rag/answer_correctness"] == pytest.approx(0.75 * _f1(1.0, recall) + 0.25 * 0.6)


def test_a_contradicted_statement_counts_0_in_answer_correctness() -> None:
    rows, _ = score(case("a", answer="The fee is 30 dollars.", contexts=("x",), gt="The fee is 20 dollars."))
    assert rows["a"]["rag/answer_correctness"] == 0.0


def test_a_copy_of_the_ground_truth_with_one_number_changed_loses_to_a_correct_paraphrase() -> None:
    rows, _ = score(
        case("copy", answer="The fee is 25 dollars. Refunds take 5 days.", contexts=("x",), gt=FEE),
        case("para", answer="Refunds take 5 days, and the fee is 20 dollars.", contexts=("x",), gt=FEE),
    )
    assert rows["para"]["rag/answer_correctness"] > rows["copy"]["rag/answer_correctness"]


def test_a_copy_of_the_ground_truth_with_another_party_loses_to_a_correct_paraphrase() -> None:
    gt = "The landlord must repair the boiler within a week."
    rows, _ = score(
        case("copy", answer="The tenant must repair the boiler within a week.", contexts=("x",), gt=gt),
        case(
            "para",
            answer="Within a week, the boiler must be repaired by the landlord.",
            contexts=("x",),
            gt=gt,
        ),
    )
    assert rows["para"]["rag/answer_correctness"] > rows["copy"]["rag/answer_correctness"]


def test_a_copy_of_the_ground_truth_with_a_synonym_is_correct() -> None:
    gt = "The student must complete the module within 30 days."
    rows, _ = score(
        case("a", answer="The student must finish the module within 30 days.", contexts=("x",), gt=gt)
    )
    assert rows["a"]["rag/answer_correctness"] == 1.0


def test_a_copy_of_the_ground_truth_with_its_parties_swapped_is_wrong() -> None:
    gt = "The landlord pays the plumber and the tenant pays the electrician."
    answer = "The tenant pays the plumber and the landlord pays the electrician."
    rows, _ = score(case("a", answer=answer, contexts=("x",), gt=gt))
    assert rows["a"]["rag/answer_correctness"] == 0.0


def test_a_copy_of_the_ground_truth_that_appends_a_claim_is_not_wholly_correct() -> None:
    gt = "The out-of-zone fee is 5 euros."
    rows, _ = score(case("a", answer=gt[:-1] + ", and it doubles at weekends.", contexts=("x",), gt=gt))
    assert rows["a"]["rag/answer_correctness"] < 1.0


def test_a_copy_of_its_evidence_that_adds_a_word_no_source_has_is_unsupported() -> None:
    said = "The annual fee of the city public library is 20 dollars"
    rows, _ = score(case("a", answer=said, contexts=("The annual fee of the city library is 20 dollars.",)))
    assert json.loads(rows["a"]["rag/unsupported"]) == [{"statement": said, "reason": "adds: public"}]


def test_metrics_without_their_inputs_are_nan_with_a_reason_and_left_out_of_the_mean() -> None:
    rows, metrics = score(
        case("gt", answer="The fee is 20 dollars.", contexts=(FEE,), gt="The fee is 20 dollars."),
        case("nogt", answer="The fee is 20 dollars.", contexts=(FEE,)),
    )
    assert all(
        math.isnan(rows["nogt"][f"rag/{m}"])
        for m in ("context_recall", "context_precision", "answer_correctness")
    )
    assert rows["nogt"]["rag/not_computed"] == (
        "context_recall: no ground_truth_answer; context_precision: no ground_truth_contexts; "
        "answer_correctness: no ground_truth_answer"
    )
    assert (metrics["rag/context_recall"], metrics["rag/context_recall_n"]) == (1.0, 1.0)
    assert (metrics["rag/faithfulness_n"], metrics["rag/context_precision_n"]) == (2.0, 0.0)
    assert math.isnan(metrics["rag/context_precision"])


def test_an_empty_answer_has_no_faithfulness_and_scores_0_for_relevancy_and_correctness() -> None:
    rows, _ = score(case("a", answer="  ", contexts=(FEE,), gt=FEE, gt_contexts=[FEE]))
    v = rows["a"]
    assert math.isnan(v["rag/faithfulness"]) and v["rag/not_computed"] == "faithfulness: empty answer"
    assert (v["rag/answer_relevancy"], v["rag/answer_correctness"]) == (0.0, 0.0)


def test_without_retrieved_contexts_the_context_metrics_are_nan() -> None:
    rows, _ = score(case("a", answer="The fee is 20 dollars.", gt=FEE, gt_contexts=[FEE]))
    for m in ("faithfulness", "context_relevance", "context_recall", "context_precision"):
        assert math.isnan(rows["a"][f"rag/{m}"])
    assert rows["a"]["rag/not_computed"].count("no retrieved contexts") == 4


def test_cases_without_a_rag_reference_are_not_scored() -> None:
    ex = AnswerExample(
        target_audience="a",
        main_topic="b",
        sub_topic="c",
        detailed_description=[],
        original_evidence="e",
        predicted_questions=[],
    )
    other = (
        EvalCase(id="q2", question="Q?", expected=ExpectedV2(answer_example=ex)),
        Prediction(case_id="q2", answer="x"),
    )
    rows, metrics = score(case("a", answer="x", contexts=("x",)), other)
    assert list(rows) == ["a"] and metrics["rag/n_cases"] == 1.0


def test_a_batch_embeds_every_distinct_text_in_one_call() -> None:
    enc = FakeEncoder()
    score(*(case(c, answer="The fee is 20 dollars.", contexts=(FEE,), gt=FEE) for c in "abc"), encoder=enc)
    (call,) = enc.calls
    assert len(call) == len(set(call))


def test_a_weight_out_of_range_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError) as e:
        build_scorer("rag", {"relevance_cosine_weight": 1.5})
    assert e.value.field == "relevance_cosine_weight" and e.value.file == "scorers.rag"


# ------------------------------------------------------------------ bad input reaches no scorer


def test_a_rag_item_without_question_is_an_error_naming_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "rag.jsonl"
    path.write_text(
        '{"id": "1", "question": "Q?"}\n{"id": "2", "ground_truth_answer": "A"}\n', encoding="utf-8"
    )
    with pytest.raises(InputError) as e:
        load_eval_set([path])
    assert str(e.value) == f"{path}: line 2: question: Field required"


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        ("[3]", "contexts[0]: expected an object or a string, got int"),
        ('[{"text": 5}]', "contexts[0].text: expected a string"),
    ],
)
def test_a_context_that_is_not_text_is_an_error_naming_line_and_field(
    tmp_path: Path, contexts: str, message: str
) -> None:
    (tmp_path / "rag.jsonl").write_text('{"id": "1", "question": "Q?"}\n', encoding="utf-8")
    preds = tmp_path / "p.jsonl"
    preds.write_text(f'{{"id": "1", "answer": "x", "contexts": {contexts}}}\n', encoding="utf-8")
    es, _ = load_eval_set([tmp_path / "rag.jsonl"])
    with pytest.raises(InputError) as e:
        match_prediction_file(preds, es.cases)
    assert str(e.value) == f"{preds}: line 1: {message}"


@pytest.mark.parametrize("name", ["rag", "earag"])
def test_case_terms_give_the_metrics_exactly(name: str) -> None:
    cases = [
        case(
            "gt",
            question="What does FHA require?",
            answer="FHA requires 20 dollars.",
            contexts=(FEE,),
            gt=FEE,
        ),
        case("nogt", answer="Pets are welcome here.", contexts=(FEE,)),
        case("empty", contexts=(FEE,)),
    ]
    out = (
        embedding_scorer(name)
        .use_encoder(FakeEncoder())
        .score(Batch(cases=[c for c, _ in cases], predictions=[p for _, p in cases]))
    )
    columns = {k: [cs.values[k] for cs in out.cases] for k in out.cases[0].values}
    terms = type(build_scorer(name)).case_terms(columns)
    derived = {t.metric: math.fsum(t.num) / math.fsum(t.den) if any(t.den) else t.empty for t in terms}
    assert len(derived) >= 6
    assert all(
        v == out.metrics[k] or (math.isnan(v) and math.isnan(out.metrics[k])) for k, v in derived.items()
    )


@pytest.mark.parametrize("name", ["rag", "earag"])
def test_a_model_path_that_does_not_exist_fails_when_the_scorer_is_built(name: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        build_scorer(name, {"model": str(tmp_path / "no-model")})
    assert (
        str(e.value)
        == f"scorers.{name}: model: Value error, {tmp_path / 'no-model'}: model path does not exist"
    )


def test_the_report_shows_each_metric_s_measured_reliability() -> None:
    scorer = embedding_scorer("rag", {}).use_encoder(FakeEncoder())
    c, p = case("a", answer="The fee is 20 dollars.", contexts=(FEE,))
    report = scorer.score(Batch(cases=[c], predictions=[p])).report_md
    (line,) = [x for x in report.splitlines() if x.startswith("| faithfulness |")]
    assert re.search(r"pairwise accuracy \d\.\d\d \[\d\.\d\d, \d\.\d\d\] on \d+ pairs held out", line), line


def test_another_backend_s_report_says_its_reliability_was_not_measured() -> None:
    scorer = embedding_scorer(
        "rag", {"backend": "llm", "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    )
    assert (
        scorer.trust_note("faithfulness")
        == f"reliability measured for rag v{scorer.version} with the offline backend only"
    )


def test_the_reliability_file_s_hash_is_logged_with_the_scorer() -> None:
    from ragtrack.core.hashing import sha256_file
    from ragtrack.scorers.reliability import DIR

    scorer = embedding_scorer("rag", {}).use_encoder(FakeEncoder())
    c, p = case("a", answer="x", contexts=(FEE,))
    info = scorer.score(Batch(cases=[c], predictions=[p])).info
    assert info.provenance["reliability_sha256"] == sha256_file(DIR / "rag.json")


def test_context_relevance_reads_each_chunk_against_the_question_s_focus() -> None:
    question = "How long does the Northgate Bank Bonus Saver pay its bonus?"
    chunk = "The bonus is paid for twelve months."
    enc = FakeEncoder({focus(question): [1, 0], "The bonus is paid for twelve months": [0.6, 0.8]})
    rows, _ = score(case("a", question=question, answer="Twelve months.", contexts=(chunk,)), encoder=enc)
    lexical = word_coverage(focus(question), chunk)
    assert lexical > 0
    assert rows["a"]["rag/context_relevance"] == pytest.approx(0.5 * 0.6 + 0.5 * lexical)


def test_a_config_logged_before_version_13_loads_with_the_retired_thresholds_at_their_defaults() -> None:
    old = {"support_threshold": 0.75, "lexical_threshold": 0.4, "sources_lexical_threshold": 0.6}
    assert "support_threshold" not in embedding_scorer("rag", old).info.params


def test_a_retired_threshold_at_another_value_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match="support_threshold was retired in version 13"):
        build_scorer("rag", {"support_threshold": 0.8})
