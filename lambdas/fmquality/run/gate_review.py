"""Gate runs feed people too: a run whose gate failed queues its failing items for human review, in the
review queue the production watch uses (``production.review.ReviewItem``; stores in
``adapters.review_queue``: the evaluation table on AWS, ``review.jsonl`` in a local run's folder), and
its report links them (``RunReport.review_queue``).

Only failing items are queued (reason "failing"): the random share of passing items and the
near-threshold picks are the production sample's business (``production.review.select_for_review``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from fmquality.production.review import ReviewItem

MAX_REASONS = 5


class ReviewQueueStore(Protocol):
    def add(self, items: Iterable[ReviewItem]) -> int: ...


def failing_review_items(results: Iterable[Any], run_id: str) -> list[ReviewItem]:
    """A queue item per failing candidate result (full results or the summaries ``run.summary`` keeps:
    the attributes read here are on both), ordered by test id."""
    items = []
    for r in sorted((r for r in results if not r.passed), key=lambda x: x.test_id):
        items.append(ReviewItem(
            run_id=run_id, test_id=r.test_id, intent=r.intent, locale=r.locale, reason="failing",
            judge_passed=False, judge_composite=r.composite_score, threshold=r.threshold,
            judge_scores={name: score.score for name, score in r.dimension_scores.items()},
            judge_reasons=list(r.failure_reasons[:MAX_REASONS]), query=r.query, response=r.response))
    return items


def queue_failing_items(report: Any, results: Iterable[Any], store: ReviewQueueStore | None,
                        location: str) -> dict[str, Any] | None:
    """Queue a failed gate's failing items in ``store``; what the report says of it (None: nothing to
    queue, the gate passed, or no store). ``location`` is where a reader finds the queue."""
    if store is None or report.gate.passed:
        return None
    items = failing_review_items(results, report.run_id)
    if not items:
        return None
    added = store.add(items)
    return {"queued": len(items), "newly_added": added, "location": location,
            "test_ids": [i.test_id for i in items[:50]]}
