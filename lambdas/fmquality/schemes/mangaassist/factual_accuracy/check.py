"""Factual accuracy: is every claim backed by the catalog, the retrieved knowledge and the page context?

Checks settle a sub-score only from claims they attributed (``fmquality.claims.reading``):
- price_accuracy / availability_accuracy (``commerce``): each price or stock status tied to the
  product it is about and compared with that product's catalog entry; a contradiction is a hard
  failure. A price or status the checks could not tie to a product goes to the judge; none stated:
  not applicable.
- policy_accuracy (``policy``): each duration, percentage or threshold tied to its policy topic
  (return window, refund time, free-shipping threshold, ...) and compared with the knowledge's number
  for that topic under compatible conditions; a contradiction is a hard failure. Topics the knowledge
  is silent on are the judge's.
- attribute_accuracy (``attributes``): authors and volume counts attributed to a product, against the
  catalog.
- fact_coverage (below): settled when every expected fact was found conveyed or contradicted in the
  answer; a fact the checks could not find (it may be reworded) sends the sub-score to the judge.
- no_hallucination (``unsupported``): set low when the checks find something the evidence does not
  support (an unknown title or ASIN, a date, amount, code or volume that is nowhere in the evidence, an
  order id or status that contradicts the order); one such claim fails the item. When they find
  nothing, the judge decides (what they verified goes with the request as a hint).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmquality.claims.policy import conversation_topic, policy_numbers, reported_number, shopper_numbers
from fmquality.claims.reading import reading_of
from fmquality.domain.case import TestCase
from fmquality.domain.scores import HardFailure
from fmquality.language.alignment import match_fact, read_units
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.schemes.mangaassist.factual_accuracy.attributes import attribute_accuracy
from fmquality.schemes.mangaassist.factual_accuracy.commerce import availability_accuracy, price_accuracy
from fmquality.schemes.mangaassist.factual_accuracy.policy import policy_accuracy
from fmquality.schemes.mangaassist.factual_accuracy.unsupported import no_hallucination
from fmquality.scoring.plan import CheckReport

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric


def _fact_coverage(case: TestCase, text: str, report: CheckReport) -> None:
    if not case.expected_facts:
        report.skip("fact_coverage", "no expected facts")
        return
    units = read_units(text)
    matches = [match_fact(fact, units) for fact in case.expected_facts]
    unresolved = [m for m in matches if m.status == "not_found"]
    if len(unresolved) == len(matches) and all(m.score == 0.0 for m in matches):
        # Not one word or number of any fact it must convey: the answer is about something else. (A
        # reworded fact keeps some of its parts: on the labelled sets no acceptable answer reads so.)
        detail = "the answer conveys none of the expected facts: " + "; ".join(m.evidence for m in matches)
        report.hard_failures.append(HardFailure(rule="expected_facts_missing", dimension=DIMENSION,
                                                sub_score="fact_coverage", detail=detail))
        report.set("fact_coverage", 0.0, *(m.evidence for m in matches))
        return
    if unresolved:
        report.ask_judge("fact_coverage", *(m.evidence for m in matches))
        return
    covered = sum(1 for m in matches if m.status == "covered")
    report.set("fact_coverage", covered / len(matches), *(m.evidence for m in matches))


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    reading = reading_of(case)
    _fact_coverage(case, reading.text, report)
    amounts = price_accuracy(case, reading, report)
    availability_accuracy(reading, report)
    claims = policy_numbers(reading.text, conversation_topic(case), shopper_numbers=shopper_numbers(case))
    claims = [c for c in claims if c.unit != "date" and not reported_number(c)]  # the answer's own numbers
    silent = policy_accuracy(case, reading, claims, report)
    attribute_accuracy(reading, report)
    no_hallucination(case, reading, amounts, silent, report)
    return report
