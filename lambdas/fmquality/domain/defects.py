"""The defect families: what kind of mistake a defective answer makes, as a reviewer would group them.

A labelled line names its defect in ``label.defect`` (a kind such as ``wrong_price`` or
``injection_followed``); ``family_of`` maps it to a family, so calibrate, the run report and the
sensitivity suite show per family how many defects each judge mode catches. A kind this table does not
know goes to ``other``: it is counted, never dropped. A label without a defect kind is ``unspecified``.
"""

from __future__ import annotations

FAMILIES: tuple[str, ...] = ("factual", "arithmetic", "relevance", "consistency", "fluency", "safety", "policy",
                             "constraint", "citation", "tool_use", "other", "unspecified")

# label.defect kind -> family. The MangaAssist kinds (the blind sets' vocabulary) and the research-agent
# and tool-use profiles' kinds. The sensitivity operators' names are kinds too (sensitivity.registry).
DEFECT_FAMILY: dict[str, str] = {
    # factual: a stated fact the evidence (catalog, order, knowledge) contradicts or does not hold
    "wrong_price": "factual", "wrong_availability": "factual", "wrong_attribute": "factual",
    "wrong_author": "factual", "wrong_volume": "factual", "wrong_release_date": "factual",
    "hallucination": "factual", "invented_fact": "factual", "wrong_order_info": "factual",
    "wrong_order_status": "factual", "wrong_order_date": "factual", "wrong_eta": "factual", "wrong_carrier": "factual",
    "oos_as_buyable": "factual", "wrong_policy": "factual", "wrong_policy_number": "factual",
    "fabricated_number": "factual", "negated_fact": "factual", "missing_fact": "factual",
    # arithmetic: a total, a difference, a discount computed wrong
    "wrong_sale_math": "arithmetic", "wrong_total": "arithmetic", "wrong_discount": "arithmetic",
    # relevance: the answer is not an answer to this shopper's question
    "ignores_question": "relevance", "off_topic_promotion": "relevance", "off_topic": "relevance",
    "other_case_answer": "relevance", "question_unanswered": "relevance", "promotion_takeover": "relevance",
    # consistency: the answer against itself, the earlier turns, the item referred to
    "intra_contradiction": "consistency", "cross_turn_contradiction": "consistency",
    "wrong_ordinal": "consistency", "sentence_contradiction": "consistency", "ordinal_neighbour": "consistency",
    "earlier_turn_contradicted": "consistency",
    # fluency: how it is written (cut, repeated, padded, register, language, tone)
    "truncated": "fluency", "padded_rambling": "fluency", "repeated_text": "fluency",
    "wrong_register_ja": "fluency", "english_in_japanese": "fluency", "wrong_language": "fluency",
    "mixed_language": "fluency", "rude_tone": "fluency", "repeated_paragraph": "fluency",
    "casual_register": "fluency", "rude_closing": "fluency",
    # safety: what a careful assistant never does
    "persona_break": "safety", "spoiler": "safety", "prompt_leak": "safety", "injection_followed": "safety",
    "injection_obeyed": "safety",
    "leaked_trace": "safety",
    # policy: a policy stated right but applied to a case it does not cover
    "policy_misapplied": "policy",
    # constraint: what the shopper asked for, forgotten or not met by what is recommended
    "forgot_constraint": "constraint", "unfit_recommendation": "constraint",
    # research-agent profile
    "dangling_citation": "citation", "unsupported_citation": "citation",
    # tool-use profile
    "repeated_tool_call": "tool_use", "unused_tool_result": "tool_use", "failed_call_retried": "tool_use",
    "wrong_arguments": "tool_use", "forbidden_tool": "tool_use", "missing_tool": "tool_use",
    "missing_keyword": "tool_use", "no_recovery": "tool_use",
}


def family_of(kind: object) -> str:
    """The family of a ``label.defect`` kind: the table's (case and spaces ignored), ``other`` for a kind
    it does not know (free text included), ``unspecified`` for no kind at all."""
    if kind is None or (isinstance(kind, str) and kind.strip().lower() in ("", "none")):
        return "unspecified"
    key = str(kind).strip().lower().replace(" ", "_").replace("-", "_")
    return DEFECT_FAMILY.get(key, "other")
