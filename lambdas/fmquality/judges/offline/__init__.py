"""The offline judge: deterministic, no network, every sub-score from a documented general signal.

Signals live beside this file, apart from the checks in ``dimensions/`` (a check is precise and
runs everywhere; the judge covers the rest):
- ``grounding``: answer sentences aligned with the evidence (factual_accuracy);
- ``relevance``: the answer aligned with the query, the products asked for and the context;
- ``consistency``: claims about the same thing compared for polarity; the persona;
- ``fluency``: grammar from general error patterns and sentence shape, tone from register;
- ``japanese``: politeness and keigo read by a morphological analyser (fugashi + UniDic-lite).

A signal that finds nothing to grade with abstains with the reason: the sub-score is left unscored
(``JudgeVerdict.abstained``), never given a middle or a full mark. The offline judge counts no judge
calls: it is local computation, not a model call.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
    JudgeVerdict,
    canonical_request_json,
)
from fmquality.schemes.mangaassist.consistency import signal as consistency
from fmquality.schemes.mangaassist.fluency import signal as fluency
from fmquality.schemes.mangaassist.factual_accuracy import signal as grounding
from fmquality.schemes.mangaassist.relevance import signal as relevance
from fmquality.schemes.mangaassist.factual_accuracy.signal import Abstain, Signal
from fmquality.claims.reading import grader_address, without_grader_address
from fmquality.domain.case import TestCase

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

SIGNALS: dict[str, Callable[[TestCase, "Rubric"], Signal]] = {
    "intent_relevance": lambda case, rubric: relevance.intent_relevance(case),
    "product_relevance": lambda case, rubric: relevance.product_relevance(case),
    "context_relevance": lambda case, rubric: relevance.context_relevance(case),
    "fact_coverage": lambda case, rubric: grounding.fact_coverage(case, case.response or ""),
    "no_hallucination": lambda case, rubric: grounding.grounding(case, case.response or ""),  # + the checks' hints
    "price_accuracy": lambda case, rubric: grounding.loose_prices(case),
    "availability_accuracy": lambda case, rubric: grounding.loose_statuses(case),
    "policy_accuracy": lambda case, rubric: grounding.policy_numbers_grounded(case, case.response or ""),
    "intra_turn": lambda case, rubric: consistency.intra_turn(case),
    "cross_turn": lambda case, rubric: consistency.cross_turn(case),
    "persona": consistency.persona,
    "grammar": lambda case, rubric: fluency.grammar(case),
    "tone": fluency.tone,
}


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


def offline_verdict(case: TestCase, rubric: "Rubric", sub_scores: list[str], hints: list[str] | tuple = ()) -> JudgeVerdict:
    """The offline judge's verdict on the asked sub-scores of one dimension of one case. ``hints`` are
    what the checks found but could not settle (``JudgeRequest.check_findings``). Text the answer
    addresses to its grader is read as part of the answer, so it can lower a reading, and never
    raises one: each sub-score is the lower of the readings with and without it."""
    if grader_address(case.response or ""):
        plain = case.model_copy(update={"response": without_grader_address(case.response or "")})
        full, bare = _verdict(case, rubric, sub_scores, hints), _verdict(plain, rubric, sub_scores, hints)
        scores = {n: min(v, bare.sub_scores.get(n, v)) for n, v in full.sub_scores.items()}
        return full.model_copy(update={"sub_scores": scores})
    return _verdict(case, rubric, sub_scores, hints)


def _verdict(case: TestCase, rubric: "Rubric", sub_scores: list[str], hints: list[str] | tuple) -> JudgeVerdict:
    scores: dict[str, float] = {}
    abstained: dict[str, str] = {}
    evidence: list[str] = []
    weights: dict[str, float] = {}
    earned = signal_weights()
    for name in sub_scores:
        signal_of = SIGNALS.get(name)
        if signal_of is None:
            abstained[name] = "the offline judge has no signal for this sub-score"
            continue
        try:
            signal = (grounding.from_hints(hints) if name == "no_hallucination" else None) or signal_of(case, rubric)
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


class OfflineJudge:
    name = "offline"
    model_id = "offline-signals-v3"
    supports_combined = True

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        if rubric.profile_spec.scorer is not None:
            from fmquality.schemes.profiles.scoring import offline_verdict as profile_verdict

            verdict = profile_verdict(request.case, rubric.profile_spec, request.dimension, list(request.sub_scores))
            return JudgeOutcome(verdict=verdict, calls=0)
        return JudgeOutcome(verdict=offline_verdict(request.case, rubric, list(request.sub_scores), request.check_findings),
                            calls=0)

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        """Each dimension's own verdict: the same numbers as per-dimension mode."""
        verdicts = {r.dimension: self.judge(r, rubric).verdict for r in request.requests}
        return CombinedJudgeOutcome(verdicts=verdicts, calls=0)

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        return canonical_request_json(request)
