"""The operators, by family, and their application to a set: every operator tried on every acceptable
answer, each with its own random source seeded by (seed, operator, test id), so a case's perturbation
does not change when another operator or case is added."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from fmquality.domain.case import Label, TestCase
from fmquality.sensitivity import arithmetic, consistency, factual, fluency, orders, relevance, safety
from fmquality.sensitivity.base import Context, Operator, Perturbed

OPERATORS: tuple[Operator, ...] = (
    Operator("wrong_price", "factual", "a catalog price the answer states changed to one no entry has", factual.wrong_price),
    Operator("wrong_availability", "factual", "an availability the answer states (agreeing with the catalog) flipped",
             factual.wrong_availability),
    Operator("wrong_author", "factual", "a catalog author the answer names replaced by another mangaka", factual.wrong_author),
    Operator("wrong_volume", "factual", "a volume count (else a volume number) of the catalog changed", factual.wrong_volume),
    Operator("wrong_release_date", "factual", "a release date of the catalog or order shifted", factual.wrong_release_date),
    Operator("wrong_order_status", "factual", "the order's status stated as one it does not have", orders.wrong_order_status),
    Operator("wrong_order_date", "factual", "a ship, delivery or ETA date of the order shifted", factual.wrong_order_date),
    Operator("wrong_carrier", "factual", "the order's carrier replaced by another", orders.wrong_carrier),
    Operator("wrong_policy_number", "factual", "a number of the retrieved policy (days, %, threshold) changed",
             orders.wrong_policy_number),
    Operator("wrong_total", "arithmetic", "a total or difference of the evidence's amounts recomputed wrong",
             arithmetic.wrong_total),
    Operator("wrong_discount", "arithmetic", "a sale price or saving at a stated percentage recomputed wrong",
             arithmetic.wrong_discount),
    Operator("other_case_answer", "relevance", "another case's good answer (another intent, same locale)",
             relevance.other_case_answer),
    Operator("question_unanswered", "relevance", "a courteous reply that answers nothing", relevance.question_unanswered),
    Operator("promotion_takeover", "relevance", "an unrequested promotion in place of the answer",
             relevance.promotion_takeover),
    Operator("sentence_contradiction", "consistency", "a sentence appended that contradicts one of the answer",
             consistency.sentence_contradiction),
    Operator("ordinal_neighbour", "consistency", "the item pointed at resolved to its neighbour in the earlier list",
             consistency.ordinal_neighbour),
    Operator("earlier_turn_contradicted", "consistency", "what an earlier assistant turn stated, restated otherwise",
             consistency.earlier_turn_contradicted),
    Operator("truncated", "fluency", "cut mid-sentence at 45-75% of its length", fluency.truncated),
    Operator("repeated_paragraph", "fluency", "a paragraph (or the longest sentence) said twice", fluency.repeated_paragraph),
    Operator("casual_register", "fluency", "every polite Japanese ending made casual", fluency.casual_register, ("ja",)),
    Operator("mixed_language", "fluency", "a sentence in the other language inserted", fluency.mixed_language),
    Operator("rude_closing", "fluency", "a dismissive closing line appended", fluency.rude_closing),
    Operator("persona_break", "safety", "opens saying it is a generic AI model", safety.persona_break),
    Operator("spoiler", "safety", "a spoiler the evidence marks told to a shopper who asked for none", safety.spoiler),
    Operator("injection_obeyed", "safety", "an instruction injected into the query, and the answer obeys it",
             safety.injection_obeyed),
)
BY_NAME = {op.name: op for op in OPERATORS}
SEPARATOR = "~"  # a perturbed case's test id: <source test id>~<operator>


@dataclass(frozen=True)
class Perturbation:
    operator: Operator
    source: TestCase
    perturbed: Perturbed

    @property
    def case(self) -> TestCase:
        return self.perturbed.case


def select(names: Sequence[str] | None) -> list[Operator]:
    """The operators named (all when None); KeyError names an unknown one."""
    if not names:
        return list(OPERATORS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise KeyError(f"unknown operator(s) {unknown}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names]


def rng_for(seed: int, operator: str, test_id: str) -> random.Random:
    return random.Random(f"{seed}|{operator}|{test_id}")


def perturb(case: TestCase, operator: Operator, seed: int, others: Sequence[TestCase] = ()) -> Perturbation | None:
    """The operator's defect of ``case`` (None: it does not apply), labelled defective with its kind and
    carrying the test id ``<test id>~<operator>``."""
    if not case.response or not operator.applies_to_locale(case):
        return None
    done = operator.apply(case, Context(rng_for(seed, operator.name, case.test_id), others))
    if done is None or done.case.response == case.response and done.case.query == case.query:
        return None
    labelled = done.case.model_copy(update={
        "test_id": f"{case.test_id}{SEPARATOR}{operator.name}",
        "label": Label(acceptable=False, defect=operator.name, why=done.change),
        "tags": [*case.tags, "sensitivity", f"operator:{operator.name}"],
    })
    return Perturbation(operator, case, Perturbed(labelled, done.change))


def perturb_all(cases: Sequence[TestCase], operators: Sequence[Operator], seed: int) -> list[Perturbation]:
    """Every operator on every case given (the acceptable answers), in (operator, case) order."""
    out = []
    for operator in operators:
        for case in cases:
            p = perturb(case, operator, seed, cases)
            if p is not None:
                out.append(p)
    return out
