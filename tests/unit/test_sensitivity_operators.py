"""The sensitivity suite's operators (issue 30, item 1): each turns an acceptable answer into a defect of
its kind, read against the case's own evidence, and skips a case it cannot apply to. The assertions
read the evidence themselves; they never compare with a string the operator wrote."""

from __future__ import annotations

import re

import pytest

from fmquality.sensitivity.registry import BY_NAME, OPERATORS, SEPARATOR, perturb, perturb_all
from fmquality.domain.defects import FAMILIES, family_of

from tests.unit.sensitivity_cases import (ALL, EN_CHITCHAT, EN_ORDER, EN_POLICY, EN_PREORDER, EN_PRODUCT, EN_SALE, EN_SPOILER,
                                          EN_TOTAL, JA_FAQ, JA_ORDER, JA_ORDINAL, JA_PREORDER)

USD = re.compile(r"\$(\d+(?:\.\d\d)?)")
YEN = re.compile(r"(\d[\d,]*)円")


def run(name, case, seed=0):
    return perturb(case, BY_NAME[name], seed, ALL)


def amounts(text, pattern=USD):
    return [float(a.replace(",", "")) for a in pattern.findall(text)]


def test_every_family_the_issue_names_has_operators_and_every_operator_a_known_family():
    families = {op.family for op in OPERATORS}
    assert {"factual", "arithmetic", "relevance", "consistency", "fluency", "safety"} <= families
    assert families <= set(FAMILIES)
    # an operator's name is a defect kind of its own family, so calibrate groups its cases with it
    assert all(family_of(op.name) == op.family for op in OPERATORS)


def test_a_perturbed_case_is_labelled_defective_with_its_kind_and_a_derived_id():
    p = run("wrong_price", EN_PRODUCT)
    assert p.case.test_id == f"{EN_PRODUCT.test_id}{SEPARATOR}wrong_price"
    assert p.case.label.acceptable is False and p.case.label.defect == "wrong_price"
    assert p.case.query == EN_PRODUCT.query and p.case.catalog == EN_PRODUCT.catalog


@pytest.mark.parametrize("case", [EN_PRODUCT, EN_TOTAL, JA_PREORDER], ids=lambda c: c.test_id)
def test_wrong_price_states_a_price_no_catalog_entry_has(case):
    p = run("wrong_price", case)
    pattern = YEN if case.is_japanese else USD
    prices = {i.price for i in case.catalog}
    new = [a for a in amounts(p.case.response, pattern) if a not in amounts(case.response, pattern)]
    assert len(new) == 1 and new[0] not in prices
    assert len(amounts(p.case.response, pattern)) == len(amounts(case.response, pattern))


def test_wrong_availability_contradicts_the_catalog():
    p = run("wrong_availability", EN_PRODUCT)  # Frieren is in stock
    assert "out of stock" in p.case.response and "out of stock" not in EN_PRODUCT.response
    j = run("wrong_availability", JA_PREORDER)  # a pre-order stated as in stock
    assert "予約を承って" not in j.case.response and "在庫あり" in j.case.response


def test_wrong_author_names_someone_who_is_no_author_of_the_case():
    p = run("wrong_author", EN_PRODUCT)
    authors = {i.author for i in EN_PRODUCT.catalog}
    assert "Yamada" not in p.case.response
    by = re.search(r"\*\* by ([A-Z][a-z]+ [A-Z][a-z]+)", p.case.response)
    assert by and by.group(1) not in authors


def test_wrong_volume_states_a_count_the_catalog_does_not_have():
    p = run("wrong_volume", EN_PRODUCT)  # "13 volumes", series_volumes 13
    count = int(re.search(r"(\d+) volumes", p.case.response).group(1))
    assert count != 13 and count not in {i.model_extra.get("volume") for i in EN_PRODUCT.catalog}


@pytest.mark.parametrize("name,case,pattern", [
    ("wrong_release_date", EN_PREORDER, r"July \d+, 2024"),
    ("wrong_release_date", JA_PREORDER, r"2024年11月\d+日|2024年12月\d+日"),
    ("wrong_order_date", EN_ORDER, r"June \d+"),
], ids=["release-en", "release-ja", "order-en"])
def test_a_shifted_date_is_no_date_of_the_evidence(name, case, pattern):
    p = run(name, case)
    before, after = re.findall(pattern, case.response), re.findall(pattern, p.case.response)
    assert len(after) == len(before) and set(after) != set(before)
    evidence = case.model_dump_json()
    changed = set(after) - set(before)
    assert changed and all(d not in evidence for d in changed)


def test_wrong_order_status_states_a_status_the_order_does_not_have():
    p = run("wrong_order_status", EN_ORDER)  # in_transit
    assert p.case.response != EN_ORDER.response
    assert re.search(r"already delivered|has not shipped yet", p.case.response)


def test_wrong_carrier_names_another_carrier_everywhere():
    p = run("wrong_carrier", EN_ORDER)
    assert "UPS" not in p.case.response
    assert re.search(r"\b(?:FedEx|USPS|DHL|OnTrac)\b", p.case.response)
    j = run("wrong_carrier", JA_ORDER)  # Japanese words are not spaced: the carrier sits inside a word run
    assert "ヤマト運輸" not in j.case.response and re.search("佐川急便|日本郵便|西濃運輸", j.case.response)


def test_wrong_policy_number_states_a_number_the_policy_does_not():
    p = run("wrong_policy_number", EN_POLICY)
    chunk_numbers = set(re.findall(r"\d+", EN_POLICY.retrieved_chunks[0]))
    stated = re.findall(r"\d+", p.case.response)
    assert len(stated) == 2 and len(set(stated) - chunk_numbers) == 1


def test_wrong_total_no_longer_adds_up():
    p = run("wrong_total", EN_TOTAL)
    total = re.search(r"that's \$(\d+\.\d\d)", p.case.response).group(1)
    assert float(total) != pytest.approx(9.99 + 11.99)


def test_wrong_discount_is_no_longer_the_stated_percentage_off():
    p = run("wrong_discount", EN_SALE)
    sale = float(re.search(r"is \$(\d+\.\d\d) instead", p.case.response).group(1))
    assert sale != pytest.approx(round(11.99 * 0.8, 2)) and "$11.99" in p.case.response


def test_other_case_answer_is_another_intents_good_answer():
    p = run("other_case_answer", EN_PRODUCT)
    donor = next(c for c in ALL if c.response == p.case.response)
    assert donor.test_id != EN_PRODUCT.test_id and donor.intent != EN_PRODUCT.intent
    assert donor.locale == EN_PRODUCT.locale
    assert {i.asin for i in donor.catalog} <= {i.asin for i in p.case.catalog}  # its products are in play


@pytest.mark.parametrize("name", ["question_unanswered", "promotion_takeover"])
def test_relevance_operators_drop_every_fact_of_the_answer(name):
    p = run(name, EN_PRODUCT)
    facts = ["Frieren", "Yamada", "11.99", "13", "stock"]
    assert not any(f in p.case.response for f in facts)
    assert run(name, EN_CHITCHAT) is None  # small talk: a courtesy is the answer


def test_promotion_takeover_skips_a_promotion_question():
    assert run("promotion_takeover", EN_SALE) is None


def test_sentence_contradiction_restates_an_availability_the_other_way():
    p = run("sentence_contradiction", EN_PRODUCT)
    assert p.case.response.startswith(EN_PRODUCT.response.rstrip())
    added = p.case.response[len(EN_PRODUCT.response.rstrip()):]
    assert "Frieren" in added and "out of stock" in added
    faq = run("sentence_contradiction", JA_FAQ)  # opens with はい: a refusal appended
    assert faq.case.response.startswith(JA_FAQ.response) and len(faq.case.response) > len(JA_FAQ.response)


def test_ordinal_neighbour_answers_about_the_other_listed_item():
    p = run("ordinal_neighbour", JA_ORDINAL)  # 2番目 = 特装版
    assert "特装版" not in p.case.response and "通常版" in p.case.response
    e = run("ordinal_neighbour", EN_PREORDER)  # the second one = Chainsaw Man
    assert "Chainsaw Man" not in e.case.response and "Spy x Family" in e.case.response
    assert run("ordinal_neighbour", EN_PRODUCT) is None  # no earlier list, no ordinal


def test_earlier_turn_contradicted_changes_what_the_earlier_turn_said():
    p = run("earlier_turn_contradicted", JA_ORDINAL)
    earlier = {float(a.replace(",", "")) for a in YEN.findall(JA_ORDINAL.conversation_history[1].content)}
    added = p.case.response[len(JA_ORDINAL.response):]
    restated = amounts(added, YEN)
    assert restated and restated[0] not in earlier
    assert run("earlier_turn_contradicted", EN_PRODUCT) is None  # no earlier turn


@pytest.mark.parametrize("case", [EN_PRODUCT, JA_PREORDER], ids=lambda c: c.test_id)
def test_truncated_is_a_prefix_cut_inside_a_sentence(case):
    p = run("truncated", case)
    cut = p.case.response
    assert case.response.startswith(cut) and 0.4 * len(case.response) < len(cut) < 0.8 * len(case.response)
    assert cut[-1] not in "。！？!?." and case.response[len(cut):].strip()


def test_truncated_skips_an_answer_too_short_to_cut():
    assert run("truncated", EN_CHITCHAT) is None


def test_repeated_paragraph_says_a_paragraph_twice():
    p = run("repeated_paragraph", EN_PRODUCT)
    paras = [x for x in p.case.response.split("\n\n") if x.strip()]
    assert len(paras) == 3 and len(set(paras)) == 2


def test_casual_register_leaves_no_polite_ending_and_skips_english():
    p = run("casual_register", JA_PREORDER)
    assert not re.search(r"(?:です|ます|ございます|おります)(?:[。！]|$)", p.case.response)
    assert run("casual_register", EN_PRODUCT) is None


def test_mixed_language_puts_a_sentence_of_the_other_script_in():
    ja = run("mixed_language", JA_PREORDER)
    assert re.search(r"[A-Za-z]+(?: [A-Za-z]+){4,}", ja.case.response)
    en = run("mixed_language", EN_PRODUCT)
    assert re.search(r"[\u3040-\u30ff]{4,}", en.case.response)


def test_rude_closing_and_persona_break_keep_the_answer_and_add_to_it():
    rude = run("rude_closing", EN_PRODUCT)
    assert rude.case.response.startswith(EN_PRODUCT.response.rstrip()) and len(rude.case.response) > len(EN_PRODUCT.response)
    persona = run("persona_break", JA_PREORDER)
    assert persona.case.response.endswith(JA_PREORDER.response) and re.search(r"AI|言語モデル", persona.case.response.split("\n")[0])


def test_spoiler_reveals_the_marked_note_only_when_the_shopper_asked_for_none():
    p = run("spoiler", EN_SPOILER)
    assert "Hughes" in p.case.response and "Hughes" not in EN_SPOILER.response
    assert run("spoiler", EN_PRODUCT) is None  # no spoiler note in the evidence
    asked = EN_SPOILER.model_copy(update={"query": "Who dies in Fullmetal Alchemist?", "forbidden_content": []})
    assert run("spoiler", asked) is None  # the shopper asked for it: no defect


def test_injection_obeyed_injects_into_the_query_and_the_answer_complies():
    p = run("injection_obeyed", EN_PRODUCT)
    assert p.case.query.startswith(EN_PRODUCT.query) and len(p.case.query) > len(EN_PRODUCT.query)
    assert EN_PRODUCT.response.rstrip() in p.case.response and len(p.case.response) > len(EN_PRODUCT.response)


@pytest.mark.parametrize("name", ["wrong_price", "wrong_availability", "wrong_author", "wrong_volume",
                                  "wrong_release_date", "wrong_order_status", "wrong_order_date", "wrong_carrier",
                                  "wrong_policy_number", "wrong_total", "wrong_discount"])
def test_evidence_operators_skip_an_answer_that_states_no_such_fact(name):
    assert run(name, EN_CHITCHAT) is None


def test_the_suite_is_deterministic_for_a_seed():
    first = [(p.case.test_id, p.case.response) for p in perturb_all(ALL, OPERATORS, seed=7)]
    again = [(p.case.test_id, p.case.response) for p in perturb_all(ALL, OPERATORS, seed=7)]
    other = [(p.case.test_id, p.case.response) for p in perturb_all(ALL, OPERATORS, seed=8)]
    assert first == again and first != other


def test_an_operators_choice_for_a_case_does_not_depend_on_the_other_cases():
    alone = perturb(EN_PRODUCT, BY_NAME["wrong_price"], 3, [EN_PRODUCT])
    among = perturb(EN_PRODUCT, BY_NAME["wrong_price"], 3, ALL)
    assert alone.case.response == among.case.response


def test_the_suite_does_not_depend_on_the_string_hash_seed():
    """Two processes with different PYTHONHASHSEED (set iteration order) build the same perturbations."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = ("from fmquality.sensitivity.registry import OPERATORS, perturb_all\n"
              "from tests.unit.sensitivity_cases import ALL, TIES\n"
              "import hashlib\n"
              "print(hashlib.sha256(repr([(p.case.test_id, p.case.response, p.case.query) "
              "for p in perturb_all(ALL + [TIES], OPERATORS, 0)]).encode()).hexdigest())\n")
    digests = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([str(root / "lambdas"), str(root)])}
        digests.add(subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True,
                                   text=True).stdout.strip())
    assert len(digests) == 1
