"""Policy numbers (policy_accuracy): each duration, percentage or threshold tied to its policy topic
(return window, refund time, free-shipping threshold, ...) and compared with the knowledge's number
for that topic under compatible conditions, each amount charged per something (item, order)
compared with what the knowledge charges that amount per, and when a pre-order is charged (placed,
shipped) compared with when the knowledge says it is (``claims.charge_timing``). A contradiction is a hard failure; topics the knowledge is
silent on are the judge's (and ``unsupported`` looks for their numbers anywhere in the evidence)."""

from __future__ import annotations

from fmquality.claims.charge_timing import knowledge_contradictions
from fmquality.claims.money import rate_basis
from fmquality.claims.commerce import amounts_in_play
from fmquality.claims.policy import PolicyNumber, compare_policies, given_values, knowledge_policies
from fmquality.claims.policy_applied import WorkedOut
from fmquality.claims.reading import Reading
from fmquality.claims import eligibility
from fmquality.claims.restated import restated_with_another_number
from fmquality.domain.case import TestCase
from fmquality.language.negation import is_conditional, is_negated, is_question
from fmquality.language.numbers import extract_prices, extract_quantities
from fmquality.language.text import normalize
from fmquality.domain.scores import HardFailure
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.scoring.plan import CheckReport


def basis_contradictions(case: TestCase, reading: Reading) -> list[str]:
    """Amounts the answer charges per something ("$3.50 per order") that the knowledge gives, at the
    same amount, only per something else ("$3.50 per item"). Plain statements only: not a question,
    a condition, a negation or another source's words."""
    known: dict[tuple[str, float], set[str]] = {}
    for chunk in case.retrieved_chunks:
        norm = normalize(chunk)
        for price in extract_prices(chunk):
            basis = rate_basis(norm, price)
            if basis:
                known.setdefault((price.currency, round(price.amount, 2)), set()).add(basis)
    if not known:
        return []
    # A product's own price said "each" ("Vols. 1-4, $12.99 each") is not the fee of the same amount.
    product_prices = {(i.currency, round(i.price, 2)) for i in case.catalog}
    out = []
    for price in extract_prices(reading.text):
        bases = known.get((price.currency, round(price.amount, 2)))
        basis = rate_basis(reading.norm, price) if bases else None
        if not basis or basis in bases or (price.currency, round(price.amount, 2)) in product_prices:
            continue
        sentence = reading.sentence(reading.sentence_of(price.start))
        if is_question(sentence) or is_conditional(sentence) or is_negated(sentence) or reading.reported(price.start):
            continue
        out.append(f"{price.text} per {basis}; the knowledge gives {price.text} per {' or '.join(sorted(bases))}")
    return list(dict.fromkeys(out))


def policy_accuracy(case: TestCase, reading: Reading, claims: list[PolicyNumber], report: CheckReport) -> list[PolicyNumber]:
    """Sets policy_accuracy; returns the claims the knowledge is silent on."""
    per_wrong = basis_contradictions(case, reading) if case.retrieved_chunks else []
    per_wrong += knowledge_contradictions(reading.text, case.retrieved_chunks)
    # What the knowledge covers or who it says pays, given the other way (電子書籍は対象外 / 電子書籍版も対象).
    per_wrong += [f"the knowledge says {eligibility.describe(rule, said)}" for rule, said in eligibility.conflicts(
        [s for chunk in case.retrieved_chunks for s in eligibility.scopes(chunk)], eligibility.scopes(reading.text),
        general_first=True)]
    # What the reading by topic cannot place (a knowledge clause without a topic word), read clause
    # against clause (``claims.restated``).
    restated = restated_with_another_number(case, reading.text)
    if not claims and not per_wrong and not restated:
        report.skip("policy_accuracy", "no policy number stated")
        return []
    if not case.retrieved_chunks:
        report.ask_judge("policy_accuracy", "policy numbers with no retrieved knowledge: "
                         + ", ".join(f"{c.text} ({c.topic})" for c in claims))
        return claims
    prices = extract_prices(reading.text)
    pool = amounts_in_play(case, reading).with_amounts(prices)
    worked = WorkedOut(derives=lambda unit, value: pool.derives(value, unit.upper()),
                       amounts=frozenset((p.currency.lower(), round(p.amount, 2)) for p in prices),
                       counts=frozenset(q.value for t in (reading.text, case.query) for q in extract_quantities(t)))
    comparison = compare_policies(claims, knowledge_policies(case), given_values(case), worked)
    right = [f"{c.text!r} ({c.topic}) matches the knowledge ({k.text!r})" for c, k in comparison.agree]
    wrong = [f"{c.text!r} ({c.topic}) contradicts the knowledge ({', '.join(repr(k.text) for k in ks)})"
             for c, ks in comparison.contradict] + per_wrong
    if not comparison.contradict:
        wrong += restated  # a number the topic reading contradicted is not reported twice
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
