"""A result as a run keeps it once its ``results.jsonl`` line is written: what the report reads, and
nothing else.

The direct engine streams each result to disk as it finishes (``result_line``) and keeps only its
``ResultSummary``, so a run's memory does not grow by the evidence, sub-scores and answers of every
case. The report is built from the summaries by the same code as from full results
(``run.aggregate.assemble_report``: ``report.build``, ``report.html``, the monitor block, the generation
summary); a summary has the attributes of an ``EvaluationResult`` that this code reads:

- every top-level field but ``catalog_asins``;
- of each dimension score, its ``dimension``, ``status`` and ``score`` (the dimension averages);
- the query and the answer clipped as the report shows them, and only for an item that failed (the
  report's and the page's failing items are the only readers); ``clip_text`` of a clipped text is the
  same text;
- the generation record without the answer, citations and tool calls.

A block of the report that comes to read another field of a result must add it here: reading a
missing attribute fails loudly (AttributeError), never silently.
"""

from __future__ import annotations

from typing import Any

from fmquality.domain.results import EvaluationResult
from fmquality.report.build import clip_text, results_to_jsonl


class DimensionSummary:
    """A dimension score as the report reads it."""

    __slots__ = ("dimension", "status", "score")

    def __init__(self, dimension: str, status: str, score: float | None) -> None:
        self.dimension, self.status, self.score = dimension, status, score

    def __getstate__(self) -> tuple[str, str, float | None]:
        return self.dimension, self.status, self.score

    def __setstate__(self, state: tuple[str, str, float | None]) -> None:
        self.dimension, self.status, self.score = state


_KEPT = ("run_id", "test_id", "arm", "intent", "locale", "status", "passed", "composite_score", "threshold",
         "hard_failures", "failure_reasons", "judge_calls", "judge_usage", "rubric_version", "tags", "label",
         "total_100", "grade", "error")


class ResultSummary:
    """One case's result as the report reads it (see the module's docstring); pickled cheaply between
    the engine's processes."""

    __slots__ = (*_KEPT, "dimension_scores", "query", "response", "generation")

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        return f"ResultSummary(test_id={self.test_id!r}, arm={self.arm!r}, status={self.status!r})"


def summarize(result: EvaluationResult) -> ResultSummary:
    """What the report reads of ``result``."""
    summary = ResultSummary()
    for name in _KEPT:
        setattr(summary, name, getattr(result, name))
    summary.dimension_scores = {name: DimensionSummary(score.dimension, score.status, score.score)
                                for name, score in result.dimension_scores.items()}
    summary.query = None if result.passed else clip_text(result.query)
    summary.response = None if result.passed else clip_text(result.response)
    generation = result.generation
    summary.generation = None if generation is None else generation.model_copy(
        update={"response": None, "citations": [], "tool_calls": []})
    return summary


def result_line(result: EvaluationResult) -> str:
    """The ``results.jsonl`` line of a result, newline included."""
    return results_to_jsonl([result])
