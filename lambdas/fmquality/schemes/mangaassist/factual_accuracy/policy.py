"""Policy numbers (policy_accuracy): each duration, percentage or threshold tied to its policy topic
(return window, refund time, free-shipping threshold, ...) and compared with the knowledge's number
for that topic under compatible conditions. A contradiction is a hard failure; topics the knowledge is
silent on are the judge's (and ``unsupported`` looks for their numbers anywhere in the evidence)."""

from __future__ import annotations

from fmquality.claims.policy import PolicyNumber, compare_policies, given_values, knowledge_policies
from fmquality.domain.case import TestCase
from fmquality.domain.scores import HardFailure
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.scoring.plan import CheckReport


def policy_accuracy(case: TestCase, claims: list[PolicyNumber], report: CheckReport) -> list[PolicyNumber]:
    """Sets policy_accuracy; returns the claims the knowledge is silent on."""
    if not claims:
        report.skip("policy_accuracy", "no policy number stated")
        return []
    if not case.retrieved_chunks:
        report.ask_judge("policy_accuracy", "policy numbers with no retrieved knowledge: "
                         + ", ".join(f"{c.text} ({c.topic})" for c in claims))
        return claims
    comparison = compare_policies(claims, knowledge_policies(case), given_values(case))
    right = [f"{c.text!r} ({c.topic}) matches the knowledge ({k.text!r})" for c, k in comparison.agree]
    wrong = [f"{c.text!r} ({c.topic}) contradicts the knowledge ({', '.join(repr(k.text) for k in ks)})"
             for c, ks in comparison.contradict]
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="policy_contradiction", dimension=DIMENSION,
                                                sub_score="policy_accuracy", detail=detail))
    if wrong:
        # One stale policy number makes the answer wrong, however many others are right.
        report.set("policy_accuracy", 0.0, *(wrong + right))
    elif right and not comparison.unknown:
        report.set("policy_accuracy", 1.0, *right)
    else:
        report.ask_judge("policy_accuracy", *right, *(f"{c.text!r} ({c.topic}): the knowledge gives no number for it"
                                                       for c in comparison.unknown))
    return comparison.unknown
