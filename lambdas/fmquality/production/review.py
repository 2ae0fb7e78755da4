"""Human review of sampled runs: which items go to the review queue, and what a queue item holds.

Which items go to the queue (``select_for_review``): every failing item; every low-confidence verdict
(a dimension confidence below ``confidence_below``, or a composite within ``composite_margin`` of
its threshold); and a seeded random ``passing_share`` of the other passing items, so agreement is
also measured where the judge is sure. Each queue item is ``pending`` until a verdict is imported,
then ``reviewed``.

Where the rest lives: the queue stores (a run folder's ``review.jsonl``, the evaluation table) in
``adapters/review_queue.py``; the spreadsheet export and the import of verdicts in
``production/review_exchange.py``; the judge's agreement with the reviewers in
``production/review_agreement.py``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from fmquality.config.watch import ReviewSettings
from fmquality.domain.results import EvaluationResult
from fmquality.schemes.mangaassist import DIMENSIONS

Reason = Literal["failing", "low_confidence", "near_threshold", "random_pass"]


class ReviewItem(BaseModel):
    """One queued answer: the judge's verdict and scores and, once reviewed, the reviewer's."""

    run_id: str
    test_id: str
    intent: str
    locale: str
    reason: Reason
    status: Literal["pending", "reviewed"] = "pending"
    judge_passed: bool
    judge_composite: float | None = None
    threshold: float | None = None
    judge_scores: dict[str, float | None] = Field(default_factory=dict)
    judge_reasons: list[str] = Field(default_factory=list)
    query: str | None = None
    response: str | None = None
    reviewer_acceptable: bool | None = None
    reviewer_scores: dict[str, float] = Field(default_factory=dict)  # as given: 1-5 or 0-1
    reviewer_scale: Literal["1-5", "0-1"] | None = None
    reviewer: str | None = None
    notes: str | None = None
    reviewed_at: str | None = None


def _min_confidence(result: EvaluationResult) -> float | None:
    values = [d.confidence for d in result.dimension_scores.values() if d.confidence is not None]
    return min(values) if values else None


def select_for_review(results: Sequence[EvaluationResult], settings: ReviewSettings | None = None,
                      run_id: str | None = None) -> list[ReviewItem]:
    """The queue items of one run's results, each with the reason it was picked (the module
    docstring); the random share is seeded by ``settings.seed`` and the run id."""
    settings = settings or ReviewSettings()
    items: list[ReviewItem] = []
    rest: list[EvaluationResult] = []
    for r in sorted(results, key=lambda x: x.test_id):
        confidence = _min_confidence(r)
        if not r.passed:
            reason: Reason | None = "failing"
        elif confidence is not None and confidence < settings.confidence_below:
            reason = "low_confidence"
        elif r.composite_score is not None and abs(r.composite_score - r.threshold) <= settings.composite_margin:
            reason = "near_threshold"
        else:
            reason = None
        if reason is None:
            rest.append(r)
        else:
            items.append(_item(r, reason, run_id))
    if rest and settings.passing_share > 0:
        k = max(1, round(settings.passing_share * len(rest)))
        rng = random.Random(f"{settings.seed}|{run_id or ''}")
        items.extend(_item(r, "random_pass", run_id) for r in sorted(rng.sample(rest, min(k, len(rest))),
                                                                     key=lambda x: x.test_id))
    return items


def _item(r: EvaluationResult, reason: Reason, run_id: str | None) -> ReviewItem:
    return ReviewItem(
        run_id=run_id or r.run_id or "", test_id=r.test_id, intent=r.intent, locale=r.locale, reason=reason,
        judge_passed=r.passed, judge_composite=r.composite_score, threshold=r.threshold,
        judge_scores={d: (r.dimension_scores[d].score if d in r.dimension_scores else None) for d in DIMENSIONS},
        judge_reasons=r.failure_reasons[:5], query=r.query, response=r.response)
