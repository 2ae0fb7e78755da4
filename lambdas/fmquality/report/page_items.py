"""What report.html embeds per item: one compact record per result, per control result and per
dataset line, each clipped so that the page grows by a bounded amount per case whatever the answers'
lengths.

A record is built from one result at a time (``item_record``): from a full ``EvaluationResult`` (a
results.jsonl line, or the results Aggregate holds on AWS) it carries every dimension's sub-scores
with their evidence and source; from a ``run.summary.ResultSummary`` (what the direct engine keeps in
memory) only what a summary has, and ``detail`` says so. The dataset side of an item (history,
expected facts and products, reference answer) is not in a result: ``case_record`` reads it from the
dataset line (``iter_jsonl``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fmquality.domain.results import EvaluationResult
from fmquality.report.verdict_rule import verdict_line

# Clip limits: what a reviewer reads on the page; results.jsonl keeps the full texts.
MAX_ANSWER = 1500
MAX_QUERY = 600
MAX_LINE = 300  # one evidence line, a fact, a hard failure's detail, a failure reason
MAX_LINES = 16  # evidence lines of a sub-score below full marks, facts per case
FULL_MARKS_LINES = 1  # evidence lines of a sub-score at full marks
MAX_TURNS = 6  # the last turns of the conversation history
MAX_TURN = 400


def clip(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clip_lines(lines: list[Any] | None, limit: int = MAX_LINES, width: int = MAX_LINE) -> list[str]:
    lines = list(lines or [])
    kept = [clip(line, width) or "" for line in lines[:limit]]
    if len(lines) > limit:
        kept.append(f"… {len(lines) - limit} more in results.jsonl")
    return kept


def item_status(result: Any) -> str:
    """passed, failed, unscored or error: one word for the table."""
    if result.status in ("error", "unscored"):
        return result.status
    return "passed" if result.passed else "failed"


def answer_is_recorded(result: Any) -> bool:
    """The scored answer is the dataset's own (the one its human label was written for)."""
    generation = result.generation
    return generation is None or generation.target_kind == "recorded"


def _evidence_by_sub_score(score: Any) -> tuple[dict[str, list[str]], list[str]]:
    """Evidence lines grouped by the sub-score they begin with ("name: …"), that prefix dropped, and
    the lines that restate what the page shows beside the sub-score (its judged value, its weight)
    left out; the lines of no sub-score apart."""
    grouped: dict[str, list[str]] = {name: [] for name in score.sub_scores}
    other: list[str] = []
    for line in score.evidence:
        name, sep, rest = str(line).partition(": ")
        if not sep or name not in grouped:
            other.append(str(line))
            continue
        rest = rest[len(name) + 2:] if rest.startswith(name + ": ") else rest
        if rest.startswith(f"judge: {name}=") or "a heuristic reading; it counts with weight" in rest:
            continue
        grouped[name].append(rest)
    return grouped, other


def _dimension_detail(score: Any) -> dict[str, Any]:
    """Every sub-score with its source and evidence: all of it (to a limit) for a sub-score below full
    marks, the first lines for one at full marks (what a reviewer reads; results.jsonl has the rest)."""
    judged = set(score.judged)
    grouped, other = _evidence_by_sub_score(score)
    # [name, score, "judge" | "check", weight or None, evidence]: a list, not an object, so the keys are
    # not repeated in the page for every sub-score of every item.
    subs = [[name, value, "judge" if name in judged else "check", score.weights.get(name),
             clip_lines(grouped[name], limit=MAX_LINES if value < 1.0 else FULL_MARKS_LINES)]
            for name, value in score.sub_scores.items()]
    detail: dict[str, Any] = {"subs": subs}
    if other:
        detail["other"] = clip_lines(other, limit=4)
    if score.not_applicable:
        detail["na"] = list(score.not_applicable)
    if score.abstained:
        detail["abstained"] = {k: clip(v, MAX_LINE) for k, v in score.abstained.items()}
    if score.unscored_reason:
        detail["why"] = clip(score.unscored_reason, MAX_LINE)
    return detail


def _generation(generation: Any) -> dict[str, Any] | None:
    if generation is None:
        return None
    record = {"target": generation.target_id, "kind": generation.target_kind,
              "version": generation.target_version, "latency_ms": generation.latency_ms,
              "input_tokens": generation.usage.input_tokens, "output_tokens": generation.usage.output_tokens,
              "cost_usd": generation.cost_usd, "attempts": generation.attempts,
              "stop_reason": generation.stop_reason, "error": clip(generation.error, MAX_LINE),
              "tool_calls": len(generation.tool_calls), "citations": len(generation.citations)}
    return {k: v for k, v in record.items() if v not in (None, [], {})}


def item_record(result: Any) -> dict[str, Any]:
    """The page's record of one candidate result (an ``EvaluationResult`` or a ``ResultSummary``)."""
    full = isinstance(result, EvaluationResult)
    record: dict[str, Any] = {
        "id": result.test_id, "intent": result.intent, "locale": result.locale, "tags": sorted(set(result.tags)),
        "status": item_status(result), "score": result.composite_score, "threshold": result.threshold,
        "why": verdict_line(result),  # the rule that passed or failed it (docs/scoring.md, "Who may fail an item")
        "dims": {name: d.score for name, d in result.dimension_scores.items()},
        "dim_status": {name: d.status for name, d in result.dimension_scores.items() if d.status != "scored"},
        "reasons": clip_lines(result.failure_reasons, limit=40),
        "hard": [{"rule": h.rule, "dimension": h.dimension, "sub_score": h.sub_score, "detail": clip(h.detail, 600)}
                 for h in result.hard_failures],
        "query": clip(result.query, MAX_QUERY), "answer": clip(result.response, MAX_ANSWER),
        "recorded": answer_is_recorded(result),
        "gen": _generation(result.generation),
        # A summary keeps the dimension scores only; results.jsonl has the sub-scores and evidence.
        "detail": {name: _dimension_detail(d) for name, d in result.dimension_scores.items()} if full else None,
    }
    for name in ("grade", "total_100", "error"):
        if getattr(result, name) is not None:
            record[name] = clip(getattr(result, name), MAX_LINE) if name == "error" else getattr(result, name)
    if result.label:
        record["label"] = {k: clip(v, MAX_LINE) if isinstance(v, str) else v for k, v in result.label.items()
                           if k in ("acceptable", "defect", "notes")}
    return record


def control_record(result: Any) -> dict[str, Any]:
    """What the page shows of the control's answer to the same case."""
    return {"id": result.test_id, "status": item_status(result), "score": result.composite_score,
            "answer": clip(result.response, MAX_ANSWER), "reasons": clip_lines(result.failure_reasons, limit=10),
            "hard": [h.rule for h in result.hard_failures]}


def case_record(line: dict[str, Any]) -> dict[str, Any] | None:
    """The dataset side of an item (None for a line without a test id)."""
    test_id = line.get("test_id")
    if not isinstance(test_id, str):
        return None
    history = [m for m in line.get("conversation_history") or [] if isinstance(m, dict)]
    record = {
        "id": test_id,
        "history": [{"role": str(m.get("role")), "content": clip(m.get("content"), MAX_TURN)}
                    for m in history[-MAX_TURNS:]],
        "earlier_turns": max(0, len(history) - MAX_TURNS),
        "facts": clip_lines(line.get("expected_facts") or line.get("required_facts")),
        "products": clip_lines(line.get("expected_products")),
        "forbidden": clip_lines(line.get("forbidden_content")),
        "reference": clip(line.get("reference_response"), MAX_ANSWER),
    }
    return {k: v for k, v in record.items() if v not in (None, [], 0)}


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines file, one at a time; a line that is not one is skipped (the
    run has already refused or reported it)."""
    with path.open(encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def iter_results(path: Path) -> Iterator[EvaluationResult]:
    """A results file's results, one at a time (memory flat in the number of lines)."""
    for line in iter_jsonl(path):
        yield EvaluationResult.model_validate(line)
