"""Replay: the captured turns of a time window (already redacted at write) answered again by a candidate
and a control, judged, and compared turn by turn.

``replay_cases`` turns the window's turns into test cases the way the production sample does
(``production.sample.turn_to_case``, every turn: rate 1.0), tagged ``replay`` so targets are told
(``targets.replay``). ``turn_diff`` lists the turns whose pass/fail changed or whose composite moved by
more than a threshold; ``diff_by_stratum`` counts them per intent x locale, which is where a regressed
stratum shows. ``replay_cost`` is stated before anything runs: the judge's calls (``run.estimate``, both
arms) plus the generation of both arms at the rubric's price for a Bedrock model.

On AWS (the execution input's ``"replay": {"from", "to", "filter"?, "threshold"?}``) Prepare reads the
window's turns from the data bucket (``read_window_turns_s3``: the capture stream's day partitions),
states the cost and refuses it above the deployment's budget unless ``"approve_cost": true``
(``budget_refusal``), and registers ``replay_record`` on the run; Aggregate writes the per-turn diff
and queues the regressed turns for review (``replay_diff_outputs``), as `fmquality replay` does.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fmquality.domain.case import TestCase
from fmquality.domain.errors import DatasetRejected
from fmquality.production.capture import TURNS_PREFIX, TurnRecord
from fmquality.production.review import ReviewItem
from fmquality.production.sample import read_turns_s3, turn_to_case
from fmquality.run.estimate import estimate_tokens, estimate_run
from fmquality.run.gate_review import failing_review_items
from fmquality.targets.base import REPLAY_TAG

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

logger = logging.getLogger(__name__)

DEFAULT_CHANGE_THRESHOLD = 0.1
DEFAULT_BUDGET_USD = 5.0
REPLAY_TRIGGER = "replay"
# The files a replay run keeps beside its report (runs/<run_id>/...).
REPLAY_CASES = "replay-cases.jsonl"
REPLAY_DIFF = "replay-diff.jsonl"
REPLAY_SUMMARY = "replay-summary.json"
# Output tokens assumed per generated answer when pricing generation (a MangaAssist answer is short).
ANSWER_TOKENS = 250


def parse_window(start: str, end: str, names: tuple[str, str] = ("--from", "--to")) -> tuple[datetime, datetime]:
    """--from/--to (or the ``names`` given) as aware datetimes (a trailing Z allowed). ValueError names
    the bad one."""
    parsed = []
    for option, text in zip(names, (start, end)):
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{option} {text!r}: not an ISO 8601 date-time") from None
        if value.tzinfo is None:
            raise ValueError(f"{option} {text!r}: give a UTC offset (e.g. 2026-11-23T10:00:00Z)")
        parsed.append(value)
    if parsed[1] <= parsed[0]:
        raise ValueError(f"{names[1]} {end!r} is not after {names[0]} {start!r}")
    return parsed[0], parsed[1]


def turns_in_window(turns: Iterable[TurnRecord], start: datetime, end: datetime) -> list[TurnRecord]:
    """The turns answered in [start, end), oldest first."""
    return sorted((t for t in turns if start <= t.timestamp < end), key=lambda t: (t.timestamp, t.turn_id))


def replay_cases(turns: Iterable[TurnRecord]) -> list[TestCase]:
    """One test case per turn (every turn: a replay samples nothing), tagged ``replay``."""
    cases = []
    for turn in turns:
        case = turn_to_case(turn)
        case["tags"] = [*case["tags"], REPLAY_TAG]
        cases.append(TestCase.model_validate(case))
    return cases


class ReplayCost(BaseModel):
    """What a replay is expected to cost before it runs (None parts: no price known, counted as 0)."""

    turns: int
    judge_calls: int
    judge_usd: float
    generation_usd: float
    total_usd: float
    notes: list[str]


def replay_cost(cases: list[TestCase], rubric: "Rubric", *, judge: str, judge_model_id: str | None,
                generating_models: dict[str, str | None], mode: str | None = None) -> ReplayCost:
    """Judge calls (both arms, ``run.estimate``) and generation (both arms, input ~ the turn's text,
    ``ANSWER_TOKENS`` out) priced from the rubric's table. ``generating_models``: arm -> the Bedrock
    model it generates with (None: a chatbot whose cost the gate does not know)."""
    notes: list[str] = []
    estimate = estimate_run(cases, rubric, mode=mode, model_id=judge_model_id)
    arms = len(generating_models)
    if judge == "bedrock":
        judge_usd = (estimate.usd_estimate or 0.0) * arms
        if estimate.usd_estimate is None:
            notes.append(f"no price for the judge model {estimate.model_id}: judge cost counted as 0")
    else:
        judge_usd = 0.0
        notes.append(f"the {judge} judge costs nothing")
    generation_usd = 0.0
    input_tokens = sum(estimate_tokens(c.query) + sum(estimate_tokens(m.content) for m in c.conversation_history)
                       + sum(estimate_tokens(chunk) for chunk in c.retrieved_chunks) for c in cases)
    for arm, model in generating_models.items():
        price = rubric.judge.price_for(model) if model else None
        if price is None:
            notes.append(f"{arm}: generation cost unknown (not a priced Bedrock model), counted as 0")
            continue
        generation_usd += (input_tokens * price.input + len(cases) * ANSWER_TOKENS * price.output) / 1_000_000
    return ReplayCost(turns=len(cases), judge_calls=estimate.calls * arms, judge_usd=round(judge_usd, 4),
                      generation_usd=round(generation_usd, 4), total_usd=round(judge_usd + generation_usd, 4),
                      notes=notes)


def turn_diff(candidate: Iterable[Any], control: Iterable[Any],
              threshold: float = DEFAULT_CHANGE_THRESHOLD) -> list[dict[str, Any]]:
    """The turns that changed between the arms (results or summaries, joined by test_id): pass/fail
    flipped, or the composite moved by more than ``threshold``. ``change`` is regression, improvement
    or moved (same verdict, composite moved)."""
    by_id = {r.test_id: r for r in control}
    rows = []
    for new in candidate:
        old = by_id.get(new.test_id)
        if old is None:
            continue
        delta = (None if new.composite_score is None or old.composite_score is None
                 else round(new.composite_score - old.composite_score, 4))
        flipped = new.passed != old.passed
        if not flipped and (delta is None or abs(delta) <= threshold):
            continue
        change = ("regression" if old.passed else "improvement") if flipped else "moved"
        rows.append({"test_id": new.test_id, "intent": new.intent, "locale": new.locale, "change": change,
                     "control_passed": old.passed, "candidate_passed": new.passed,
                     "control_composite": old.composite_score, "candidate_composite": new.composite_score,
                     "composite_delta": delta, "candidate_error": getattr(new, "error", None)})
    return rows


def diff_by_stratum(rows: list[dict[str, Any]], candidate: Iterable[Any]) -> dict[str, dict[str, int]]:
    """Per intent x locale: turns replayed, regressions, improvements, moved."""
    strata: dict[str, dict[str, int]] = defaultdict(lambda: {"turns": 0, "regression": 0, "improvement": 0,
                                                             "moved": 0})
    for r in candidate:
        strata[f"{r.intent}|{r.locale}"]["turns"] += 1
    for row in rows:
        strata[f"{row['intent']}|{row['locale']}"][row["change"]] += 1
    return dict(sorted(strata.items()))


# ---- AWS: the execution input's "replay" -------------------------------------------------------------

class ReplayRequest(BaseModel):
    """``"replay": {"from": ISO, "to": ISO, "filter"?: ..., "threshold"?: ...}`` of the execution input."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    start: str = Field(alias="from")
    end: str = Field(alias="to")
    # A subset of the window's turns (fmquality.run.subsets: an object or the CLI grammar).
    filter: dict[str, Any] | str | None = None
    threshold: float = Field(default=DEFAULT_CHANGE_THRESHOLD, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _window_is_valid(self) -> "ReplayRequest":
        self.window()
        return self

    def window(self) -> tuple[datetime, datetime]:
        return parse_window(self.start, self.end, ("replay.from", "replay.to"))


def window_days(start: datetime, end: datetime) -> list[date]:
    """The UTC days whose partitions hold the turns of [start, end) (an end at midnight reads no more)."""
    first = start.astimezone(timezone.utc).date()
    last = (end.astimezone(timezone.utc) - timedelta(microseconds=1)).date()
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def read_window_turns_s3(s3_client: Any, bucket: str, start: datetime,
                         end: datetime) -> tuple[list[TurnRecord], list[str]]:
    """The turns of [start, end) stored by the capture stream in ``bucket``, oldest first, and the stored
    lines that did not parse."""
    turns, bad = read_turns_s3(s3_client, bucket, window_days(start, end))
    return turns_in_window(turns, start, end), bad


def window_cases(replay: ReplayRequest, s3_client: Any, bucket: str) -> list[TestCase]:
    """The window's captured turns in ``bucket`` as replay cases; DatasetRejected when there is none."""
    start, end = replay.window()
    turns, bad = read_window_turns_s3(s3_client, bucket, start, end)
    if bad:  # the stream validated them at write: a bad stored line is logged, not a reason to stop
        logger.warning("%d stored turn line(s) skipped, first: %s", len(bad), bad[:5])
    if not turns:
        raise DatasetRejected(f"replay: no captured turn in [{replay.start}, {replay.end}) under "
                              f"s3://{bucket}/{TURNS_PREFIX}")
    return replay_cases(turns)


def priced_replay(cases: list[TestCase], rubric: "Rubric", replay: ReplayRequest, *, judge: str,
                  judge_model_id: str | None, generating_models: dict[str, str | None], mode: str | None,
                  budget_usd: float, approved: bool) -> dict[str, Any]:
    """The replay's record with its estimated cost; DatasetRejected naming the figure above the budget
    unless ``approved``."""
    cost = replay_cost(cases, rubric, judge=judge, judge_model_id=judge_model_id,
                       generating_models=generating_models, mode=mode)
    refusal = budget_refusal(cost, budget_usd, approved, f"[{replay.start}, {replay.end})")
    if refusal:
        raise DatasetRejected(refusal)
    logger.info("replay of %d turn(s): estimated cost $%.4f (budget $%.2f)", cost.turns, cost.total_usd, budget_usd)
    return replay_record(replay, cost, budget_usd, approved)


def cases_text(cases: Iterable[TestCase]) -> str:
    """The replayed cases as a JSON Lines dataset: what the run scored, hashed and kept beside it."""
    return "".join(c.model_dump_json(exclude_none=True) + "\n" for c in cases)


def budget_refusal(cost: ReplayCost, budget_usd: float, approved: bool, window: str) -> str | None:
    """Why the replay may not start (its estimate is above the budget and nobody approved it), or None."""
    if cost.total_usd <= budget_usd or approved:
        return None
    return (f"replay of {cost.turns} turn(s) in {window}: the estimated cost ${cost.total_usd:.4f} (judge "
            f"${cost.judge_usd:.4f}, generation ${cost.generation_usd:.4f}) is above the replay budget "
            f"${budget_usd:.2f}; start it again with \"approve_cost\": true to approve it")


def replay_record(request: ReplayRequest, cost: ReplayCost, budget_usd: float, approved: bool) -> dict[str, Any]:
    """What the run record and Prepare's output say of a replay (Aggregate reads it back)."""
    return {"from": request.start, "to": request.end, "filter": request.filter, "threshold": request.threshold,
            "turns": cost.turns, "estimated_cost_usd": cost.total_usd, "budget_usd": budget_usd,
            "approved_over_budget": approved and cost.total_usd > budget_usd, "cost": cost.model_dump()}


def replay_diff_outputs(replay: dict[str, Any], candidate: list[Any], control: list[Any],
                        run_id: str) -> tuple[dict[str, str], list[ReviewItem]]:
    """A replay run's diff files (``REPLAY_DIFF``, ``REPLAY_SUMMARY``) and the review items of the turns
    the candidate now fails among those that changed."""
    rows = turn_diff(candidate, control, replay.get("threshold", DEFAULT_CHANGE_THRESHOLD))
    regressed = {row["test_id"] for row in rows if not row["candidate_passed"]}
    items = failing_review_items([r for r in candidate if r.test_id in regressed], run_id)
    summary = {"run_id": run_id, "window": {"from": replay.get("from"), "to": replay.get("to")},
               "filter": replay.get("filter"), "threshold": replay.get("threshold"), "cost": replay.get("cost"),
               "differences": len(rows), "queued_for_review": len(items),
               "strata": diff_by_stratum(rows, candidate)}
    files = {REPLAY_DIFF: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
             REPLAY_SUMMARY: json.dumps(summary, indent=2, ensure_ascii=False)}
    return files, items
