"""Scorer `refusal_citation`: refusal behaviour and citation hits against a `qaset` (SPEC §2).

Every number equals that of the seed's reference script (seed 004, `eval/score.md.py`,
kept verbatim in `tests/scorers/seed_score_md.py`) on any input the script accepts:
the refusal test, citation parsing, `phrase_containment` and the five rates below are
the script's own rules, restated here line for line. Added beyond the script (SPEC §2):
`compliance`, `claim_containment_cjk`, per-question labels as columns, and the counts
`n_missing`, `n_unmatched` and `duplicates_dropped`. Gates (G1–G5) are evaluated
elsewhere, from these metrics.

Which cases are scored: every case with a `gold` section. A case without a prediction
(`missing`) is scored as the empty answer `""` without citations, exactly as the script
scores the trace `{"q": question, "answer": ""}`, and is marked in the `missing` column,
so that every scorer of a run shares one denominator (SPEC §6, a **Decision** in
docs/SPEC.md §2). A prediction for a case without `gold` counts as unmatched, together
with the batch's own `n_unmatched`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import field_validator

from ragtrack.core.types import Gold, Prediction, ScorerOutput, ScoreValue
from ragtrack.nlp.text import cjk_runs, norm
from ragtrack.scorers.base import (
    Batch,
    CaseColumns,
    CaseTerms,
    Scorer,
    ScorerParams,
    ScoreTable,
    register_scorer,
)

__all__ = [
    "CJK_WINDOW",
    "LABELS",
    "RefusalCitationScorer",
    "cjk_containment",
    "has_citation_list",
    "is_refusal",
    "label",
    "parse_citations",
    "phrase_containment",
]

NAME = "refusal_citation"
LABELS = ("OK", "REFUSAL_OK", "OVER_REFUSAL", "HALLUCINATION", "ANS_NO_HIT")
ANSWERABLE_LABELS = frozenset(
    {"OK", "OVER_REFUSAL", "ANS_NO_HIT"}
)  # `label` gives the gold's `answerable` back

# The reference's patterns, unchanged.
_CIT_RE = re.compile(r"citations\s*:\s*\[([^\]]*)\]", re.IGNORECASE)
_CIT_SPLIT = re.compile(r"[,\s]+")
_PHRASE = re.compile(r"[a-z0-9][a-z0-9\-\s]{4,}")
CJK_WINDOW = 5  # characters of a claim's CJK run that must occur together, as the seed's 5-char phrases


class Params(ScorerParams):
    """`refusal_token`: an answer is a refusal iff `answer.strip().lower() == refusal_token`.

    The token is compared as given (the reference compares with the constant
    `"not in context"`); since the answer side is stripped and lower-cased, a token
    that is not itself stripped and lower-case could never match, so it is rejected.
    """

    refusal_token: str = "not in context"

    @field_validator("refusal_token")
    @classmethod
    def _normalised(cls, v: str) -> str:
        if v != v.strip().lower():
            raise ValueError(
                f"must be lower-case without surrounding whitespace (answers are compared after "
                f"strip().lower()), e.g. {v.strip().lower()!r}"
            )
        return v


_Params = Params  # the type of `RefusalCitationScorer.p` (in its body, `Params` is the class attribute)


# ------------------------------------------------------------------ the reference's rules


def is_refusal(answer: str | None, token: str = "not in context") -> bool:
    """The reference's `is_refusal`, with the token as a parameter."""
    return (answer or "").strip().lower() == token


def parse_citations(answer: str | None, field: list[str] | None) -> list[str]:
    """The reference's `parse_citations`.

    A citations list field wins (its items are already `str(x)` from loading; they are
    stripped, and empty items are kept, as in the reference). Otherwise the first
    `citations: [...]` in the answer, split on commas and whitespace.
    """
    if isinstance(field, list):
        return [str(x).strip() for x in field]
    m = _CIT_RE.search(answer or "")
    if not m:
        return []
    raw = m.group(1).strip()
    if not raw:
        return []
    return [t.strip() for t in _CIT_SPLIT.split(raw) if t.strip()]


def has_citation_list(answer: str | None, field: list[str] | None) -> bool:
    """SPEC §2 compliance: a citations list field (even empty) or a `citations: [...]` in the text."""
    return isinstance(field, list) or _CIT_RE.search(answer or "") is not None


def phrase_containment(gold_claim: str | None, answer: str | None) -> bool:
    """The reference's `phrase_containment`.

    Each greedy run of `[a-z0-9][a-z0-9\\-\\s]{4,}` in the lower-cased claim, stripped, is
    searched whole in the lower-cased answer; shorter sub-phrases of a run are not tried.
    """
    if not gold_claim:
        return False
    gold = gold_claim.lower()
    ans = (answer or "").lower()
    for m in _PHRASE.finditer(gold):
        p = m.group(0).strip()
        if len(p) >= 5 and p in ans:
            return True
    return False


def cjk_containment(gold_claim: str | None, answer: str | None) -> bool:
    """SPEC §2 `claim_containment_cjk`: the seed's rule, or a CJK window of the claim in the answer.

    After §0 `norm` of both, a claim is also contained when some `CJK_WINDOW`-character
    window of one of its CJK runs occurs in the answer. A run shorter than the window is
    not used (a 2–4 character run such as 退款 is too common to show the claim was made).
    """
    if phrase_containment(gold_claim, answer):
        return True
    ans = norm(answer)
    return any(
        run[i : i + CJK_WINDOW] in ans
        for run in cjk_runs(norm(gold_claim))
        for i in range(len(run) - CJK_WINDOW + 1)
    )


def label(answerable: bool, refusal: bool, hit: bool) -> str:
    """The reference's per-question label, same precedence."""
    if answerable and not refusal and hit:
        return "OK"
    if not answerable and refusal:
        return "REFUSAL_OK"
    if answerable and refusal:
        return "OVER_REFUSAL"
    if not answerable and not refusal:
        return "HALLUCINATION"
    return "ANS_NO_HIT"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rate(num: int, den: int) -> float:
    """`num / den`, 0.0 when the denominator is empty (as in the reference)."""
    return num / den if den else 0.0


# ------------------------------------------------------------------ the scorer


@dataclass
class _State:
    """What the scorer has seen of an eval set so far."""

    table: ScoreTable = field(default_factory=ScoreTable)
    answerable: list[bool] = field(default_factory=list)
    extra_unmatched: int = 0  # predictions of cases without gold
    n_unmatched: int = 0
    duplicates_dropped: int = 0


@register_scorer
class RefusalCitationScorer(Scorer):
    """SPEC §2. Scores every case that carries `gold`; a missing prediction is the empty answer."""

    name = NAME
    version = "2"
    section = "gold"
    Params = Params
    p: _Params

    chunked = True

    def begin(self) -> _State:
        return _State()

    def add(self, state: _State, batch: Batch) -> None:
        state.n_unmatched, state.duplicates_dropped = batch.n_unmatched, batch.duplicates_dropped
        for case, pred in zip(batch.cases, batch.predictions, strict=True):
            if case.gold is None:
                if not pred.missing:
                    state.extra_unmatched += 1
                continue
            state.table.add(case.id, self.score_case(case.gold, pred))
            state.answerable.append(case.gold.answerable)

    def finish(self, state: _State) -> ScorerOutput:
        if not state.table:
            # Not applicable (no qaset gold in this eval set): no rates, so gates on them are skipped.
            note = f"## {NAME}\n\nNot applicable: no case of this eval set carries qaset gold.\n"
            return ScorerOutput(info=self.info, metrics={f"{NAME}/n_scored": 0.0}, report_md=note)
        table = state.table
        metrics = self.aggregate(
            table, state.answerable, state.n_unmatched + state.extra_unmatched, state.duplicates_dropped
        )
        return table.output(self.info, metrics, self.report(table, metrics))

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """The five rates and compliance as pass/fail flags over their denominators (0 when empty, as
        `_rate`).

        A case was scored when it has a label; the label tells whether it was answerable.
        Over- and under-refusal are the rates where lower is better.
        """
        labels = columns[f"{NAME}/label"]
        scored = [isinstance(x, str) for x in labels]
        pos = [x in ANSWERABLE_LABELS for x in labels]
        neg = [s and not p for s, p in zip(scored, pos, strict=True)]

        def flag(key: str) -> list[bool]:
            return [s and bool(v) for s, v in zip(scored, columns[f"{NAME}/{key}"], strict=True)]

        refusal, hit, has_citations = flag("refusal"), flag("hit"), flag("has_citations")
        answered = [s and not r for s, r in zip(scored, refusal, strict=True)]

        def rate(
            metric: str, num: list[bool], den: list[bool], *, higher_is_better: bool = True
        ) -> CaseTerms:
            return CaseTerms(
                metric=f"{NAME}/{metric}",
                num=[float(n and d) for n, d in zip(num, den, strict=True)],
                den=[float(d) for d in den],
                binary=True,
                higher_is_better=higher_is_better,
                empty=0.0,
            )

        answered_hit = [a and h for a, h in zip(answered, hit, strict=True)]
        return [
            rate("precision", [p and h for p, h in zip(pos, hit, strict=True)], answered),
            rate("over_refusal", refusal, pos, higher_is_better=False),
            rate("under_refusal", answered, neg, higher_is_better=False),
            rate("citation_hit_rate", answered_hit, pos),
            rate("claim_containment", [a and c for a, c in zip(answered, flag("contain"), strict=True)], pos),
            rate(
                "claim_containment_cjk",
                [a and c for a, c in zip(answered, flag("contain_cjk"), strict=True)],
                pos,
            ),
            rate("compliance", [c or r for c, r in zip(has_citations, refusal, strict=True)], scored),
        ]

    def score_case(self, gold: Gold, pred: Prediction) -> dict[str, ScoreValue]:
        ans = pred.answer
        cits = parse_citations(ans, pred.citations)
        refusal = is_refusal(ans, self.p.refusal_token)
        hit = bool(set(cits) & set(gold.gold_ids))
        return {
            f"{NAME}/label": label(gold.answerable, refusal, hit),
            f"{NAME}/answered": not refusal,
            f"{NAME}/refusal": refusal,
            f"{NAME}/hit": hit,
            f"{NAME}/contain": phrase_containment(gold.gold_claim, ans),
            f"{NAME}/contain_cjk": cjk_containment(gold.gold_claim, ans),
            f"{NAME}/has_citations": has_citation_list(ans, pred.citations),
            f"{NAME}/citations": ", ".join(cits),
            f"{NAME}/missing": pred.missing,
        }

    def aggregate(
        self, table: ScoreTable, answerable: Sequence[bool], n_unmatched: int, duplicates_dropped: int
    ) -> dict[str, float]:
        f = {
            key: [bool(x) for x in table.column(f"{NAME}/{key}")]
            for key in ("answered", "refusal", "hit", "contain", "contain_cjk", "has_citations", "missing")
        }
        refusal, hit = f["refusal"], f["hit"]
        pos = [i for i, a in enumerate(answerable) if a]
        neg = [i for i, a in enumerate(answerable) if not a]
        answered = [i for i, x in enumerate(f["answered"]) if x]

        def answered_and(key: str) -> float:
            """Share of the answerable cases answered (not refused) with flag `key`."""
            return _rate(sum(1 for i in pos if not refusal[i] and f[key][i]), len(pos))

        return {
            # The reference counts rows with a truthy qid; ids are strings, so: non-empty.
            f"{NAME}/n_scored": float(sum(1 for case_id in table.ids if case_id)),
            f"{NAME}/precision": _rate(sum(1 for i in answered if answerable[i] and hit[i]), len(answered)),
            f"{NAME}/over_refusal": _rate(sum(1 for i in pos if refusal[i]), len(pos)),
            f"{NAME}/under_refusal": _rate(sum(1 for i in neg if not refusal[i]), len(neg)),
            f"{NAME}/citation_hit_rate": answered_and("hit"),
            f"{NAME}/claim_containment": answered_and("contain"),
            f"{NAME}/claim_containment_cjk": answered_and("contain_cjk"),
            f"{NAME}/compliance": _rate(
                sum(1 for c, r in zip(f["has_citations"], refusal, strict=True) if c or r), len(table)
            ),
            f"{NAME}/n_missing": float(sum(f["missing"])),
            f"{NAME}/n_unmatched": float(n_unmatched),
            f"{NAME}/duplicates_dropped": float(duplicates_dropped),
        }

    def report(self, table: ScoreTable, m: dict[str, float]) -> str:
        """The reference's Markdown report as a section, plus compliance and the counts."""

        def b(x: object) -> str:
            return str(x).lower()

        lines = [
            f"## {NAME}",
            "",
            f"- Questions scored: **{int(m[f'{NAME}/n_scored'])}**",
            f"- Answer precision (over answered): **{_pct(m[f'{NAME}/precision'])}**",
            f"- Over-refusal (answerable but refused): **{_pct(m[f'{NAME}/over_refusal'])}**",
            "- Under-refusal / Hallucination (unanswerable but answered): "
            f"**{_pct(m[f'{NAME}/under_refusal'])}**",
            f"- Citation hit rate (answerable): **{_pct(m[f'{NAME}/citation_hit_rate'])}**",
            f"- Claim containment (answerable): **{_pct(m[f'{NAME}/claim_containment'])}**",
            f"- Claim containment, CJK-aware (answerable): **{_pct(m[f'{NAME}/claim_containment_cjk'])}**",
            f"- Compliance (citations list or refusal): **{_pct(m[f'{NAME}/compliance'])}**",
            f"- Missing traces (scored as empty answers): **{int(m[f'{NAME}/n_missing'])}**",
            f"- Unmatched traces: **{int(m[f'{NAME}/n_unmatched'])}**",
            f"- Duplicates dropped (last trace kept): **{int(m[f'{NAME}/duplicates_dropped'])}**",
            "",
            "Claim containment: the share of answerable questions answered (not refused) with an answer that "
            "contains, case-insensitively, one whole run of 5 or more Latin letters, digits, hyphens and "
            "spaces of the gold claim (the seed's rule, blind to Chinese). "
            f"Claim containment, CJK-aware, also counts a claim when any {CJK_WINDOW} consecutive Chinese "
            "characters of it occur in the answer (both normalised: NFKC, no whitespace, case-folded).",
            "",
            "### Per-question",
            "",
            "| qid | answered | hit | refusal | label |",
            "|-----|----------|-----|---------|-------|",
        ]
        for case_id, answered, hit, refusal, label in zip(
            table.ids,
            *(table.column(f"{NAME}/{k}") for k in ("answered", "hit", "refusal", "label")),
            strict=True,
        ):
            lines.append(f"| {case_id} | {b(answered)} | {b(hit)} | {b(refusal)} | **{label}** |")
        return "\n".join(lines) + "\n"
