"""Subsets: the filter grammar (OR within a key, AND across keys), its errors, and distributions."""

from __future__ import annotations

import pytest

from fmquality.domain.case import TestCase
from fmquality.run.subsets import (
    KB_REFRESH_FILTER,
    Filter,
    apply_filter,
    distribution,
    filter_from_input,
    parse_filter,
)
from fmquality.domain.errors import FilterError


def _case(test_id, intent="faq", locale="en-US", tags=(), complexity=None):
    data = {"test_id": test_id, "intent": intent, "locale": locale, "query": "q", "tags": list(tags)}
    if complexity:
        data["complexity"] = complexity  # lands in metadata until TestCase has the field
    return TestCase.model_validate(data)


CASES = [
    _case("a", tags=["policy"], complexity="simple"),
    _case("b", tags=["retrieval", "regression"], locale="ja-JP", complexity="medium"),
    _case("c", intent="order_tracking", tags=["policy"], locale="ja-JP", complexity="complex"),
    _case("d", intent="recommendation"),
]


def _ids(flt):
    return [c.test_id for c in apply_filter(CASES, flt)[0]]


def test_values_of_one_key_are_alternatives():
    assert _ids(parse_filter("tag=policy,retrieval")) == ["a", "b", "c"]


def test_keys_are_combined_with_and():
    assert _ids(parse_filter("tag=policy,retrieval;locale=ja-JP")) == ["b", "c"]
    assert _ids(parse_filter("tag=policy;locale=ja-JP;intent=faq")) == []


def test_complexity_is_read_from_metadata_and_unset_never_matches():
    assert _ids(parse_filter("complexity=simple,complex")) == ["a", "c"]
    assert distribution(CASES)["by_complexity"] == {"(unset)": 1, "complex": 1, "medium": 1, "simple": 1}


def test_test_ids_and_category_synonym():
    assert _ids(parse_filter(" test_id = d , a ")) == ["a", "d"]
    assert _ids(parse_filter("category=order_tracking")) == ["c"]


def test_execution_input_object_equals_the_cli_string():
    obj = filter_from_input({"tags": ["policy", "retrieval"], "locales": ["ja-JP"]})
    assert obj == parse_filter("locale=ja-JP;tag=policy,retrieval")
    assert filter_from_input("tag=policy") == parse_filter("tag=policy")


def test_no_filter_selects_everything_and_says_so():
    selected, description = apply_filter(CASES, filter_from_input(None))
    assert len(selected) == 4 and "all cases" in description


def test_description_names_the_filter_and_the_counts():
    _, description = apply_filter(CASES, parse_filter("tag=policy;locale=ja-JP"))
    assert "tag=policy" in description and "locale=ja-JP" in description and "1 of 4" in description


@pytest.mark.parametrize("text, fragment", [
    ("colour=red", "unknown key 'colour'"),
    ("tag=", "empty value"),
    ("tag=a,,b", "empty value"),
    ("tag=a;tags=b", "given twice"),
    ("complexity=hard", "complexity"),
    ("policy", "key=value"),
])
def test_cli_errors_are_clear(text, fragment):
    with pytest.raises(FilterError, match=fragment):
        parse_filter(text)


def test_execution_input_errors_are_clear():
    with pytest.raises(FilterError, match="unknown key 'tag'"):
        filter_from_input({"tag": ["policy"]})  # the object form uses plural keys
    with pytest.raises(FilterError, match="list of strings"):
        filter_from_input({"tags": "policy"})
    with pytest.raises(FilterError, match="object or a string"):
        filter_from_input(3)


def test_distribution_counts_each_tag_and_untagged():
    dist = distribution(CASES)
    assert dist["by_tag"] == {"(untagged)": 1, "policy": 2, "regression": 1, "retrieval": 1}
    assert dist["by_intent"] == {"faq": 2, "order_tracking": 1, "recommendation": 1}
    assert dist["by_locale"] == {"en-US": 2, "ja-JP": 2}


def test_kb_refresh_rule_selects_policy_and_retrieval_cases():
    assert _ids(filter_from_input(KB_REFRESH_FILTER)) == ["a", "b", "c"]


def test_empty_filter_object():
    assert Filter().empty and Filter().describe() == "all cases"
