"""The offline judge: deterministic, no network, every sub-score from a documented general signal.

The signals are the scheme's (``Scheme.signals``, see ``scoring.signal``), kept beside the checks of
each dimension (``schemes/mangaassist/<dimension>/signal.py``, ``schemes/profiles/<profile>.py``): a
check is precise and runs everywhere; the judge covers the rest. A scheme reads a dimension either
sub-score by sub-score (MangaAssist: grounding, relevance to the query, products and context, claims
compared for polarity, the persona, grammar and register) or as a whole (the generic profiles: one
value, at one of the profile's levels).

A signal that finds nothing to grade with abstains with the reason: the sub-score is left unscored
(``JudgeVerdict.abstained``), never given a middle or a full mark. A heuristic per-sub-score reading
counts with the weight its measured agreement with people earns (``agreement.yaml``). The offline
judge counts no judge calls: it is local computation, not a model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from fmquality.claims.grader_address import grader_address, without_grader_address
from fmquality.domain.case import TestCase
from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
    JudgeVerdict,
    canonical_request_json,
)
from fmquality.schemes import scheme_for
from fmquality.scoring.signal import Abstain, DimensionSignal, OfflineSignals, SubScoreSignals

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

AGREEMENT_FILE = Path(__file__).with_name("agreement.yaml")


@lru_cache(maxsize=1)
def signal_weights() -> dict[str, float]:
    """The weight each heuristic signal earns in the composite: its measured agreement with people
    (``agreement.yaml``, written by ``fmquality calibrate --signals-out``). A signal the file does not
    list has no measured agreement and no weight."""
    try:
        data = yaml.safe_load(AGREEMENT_FILE.read_text(encoding="utf-8")) or {}
    except OSError:
        return {}
    return {name: float(entry["weight"]) for name, entry in (data.get("signals") or {}).items()}


def offline_verdict(case: TestCase, rubric: "Rubric", sub_scores: list[str], hints: Sequence[str] = (),
                    dimension: str | None = None) -> JudgeVerdict:
    """The offline judge's verdict on the asked sub-scores of one dimension of one case (by default the
    dimension of the rubric's profile these sub-scores belong to). ``hints`` are what the checks found
    but could not settle (``JudgeRequest.check_findings``). Text the answer addresses to its grader is
    read as part of the answer, so it can lower a reading, and never raises one: each sub-score is the
    lower of the readings with and without it."""
    dimension = dimension or _dimension_of(rubric, sub_scores)
    signals = scheme_for(rubric).signals(dimension)
    if grader_address(case.response or ""):
        plain = case.model_copy(update={"response": without_grader_address(case.response or "")})
        full, bare = _verdict(signals, case, rubric, sub_scores, hints), _verdict(signals, plain, rubric, sub_scores, hints)
        scores = {n: min(v, bare.sub_scores.get(n, v)) for n, v in full.sub_scores.items()}
        return full.model_copy(update={"sub_scores": scores})
    return _verdict(signals, case, rubric, sub_scores, hints)


def _dimension_of(rubric: "Rubric", sub_scores: list[str]) -> str:
    owners = {d.name for d in rubric.profile_spec.dimensions if set(sub_scores) & set(d.sub_scores)}
    if len(owners) != 1:
        raise ValueError(f"sub-scores {sub_scores} belong to {len(owners)} dimensions of profile "
                         f"{rubric.profile_spec.name}; ask for one dimension's at a time")
    return owners.pop()


def _verdict(signals: OfflineSignals, case: TestCase, rubric: "Rubric", sub_scores: list[str],
             hints: Sequence[str]) -> JudgeVerdict:
    if isinstance(signals, DimensionSignal):
        return _dimension_verdict(signals, case, rubric, sub_scores)
    return _sub_score_verdict(signals, case, rubric, sub_scores, hints)


def _sub_score_verdict(signals: SubScoreSignals, case: TestCase, rubric: "Rubric", sub_scores: list[str],
                       hints: Sequence[str]) -> JudgeVerdict:
    scores: dict[str, float] = {}
    abstained: dict[str, str] = {}
    evidence: list[str] = []
    weights: dict[str, float] = {}
    earned = signal_weights()
    for name in sub_scores:
        signal_of = signals.by_sub_score.get(name)
        if signal_of is None:
            abstained[name] = "the offline judge has no signal for this sub-score"
            continue
        try:
            signal = signal_of(case, rubric, hints)
        except Abstain as exc:
            abstained[name] = str(exc)
            continue
        scores[name] = round(max(0.0, min(1.0, signal.score)), 4)
        evidence += [f"{name}: {e}" for e in signal.evidence]
        if not signal.finding:
            weights[name] = earned.get(name, 0.0)
            evidence.append(f"{name}: a heuristic reading; it counts with weight {weights[name]:g}, its measured "
                            "agreement with people")
    rationale = "; ".join(f"{n}={v:.2f}" for n, v in scores.items()) or "no signal"
    return JudgeVerdict(sub_scores=scores, abstained=abstained, rationale=rationale + " (offline judge)",
                        evidence=evidence, confidence=None, weights=weights)


def _dimension_verdict(signal: DimensionSignal, case: TestCase, rubric: "Rubric", sub_scores: list[str]) -> JudgeVerdict:
    try:
        reading = signal.read(case, rubric)
    except Abstain as exc:
        return JudgeVerdict(sub_scores={}, abstained={n: str(exc) for n in sub_scores}, rationale=f"no signal: {exc}")
    scores = {n: round(reading.score_of(n), 4) for n in sub_scores}
    rationale = (f"level {reading.level} " if reading.level else "") + f"{reading.value:.2f} (offline judge)"
    return JudgeVerdict(sub_scores=scores, rationale=rationale, evidence=list(reading.evidence))


class OfflineJudge:
    name = "offline"
    model_id = "offline-signals-v3"
    supports_combined = True

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        verdict = offline_verdict(request.case, rubric, list(request.sub_scores), request.check_findings,
                                  dimension=request.dimension)
        return JudgeOutcome(verdict=verdict, calls=0)

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        """Each dimension's own verdict: the same numbers as per-dimension mode."""
        verdicts = {r.dimension: self.judge(r, rubric).verdict for r in request.requests}
        return CombinedJudgeOutcome(verdicts=verdicts, calls=0)

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        return canonical_request_json(request)
