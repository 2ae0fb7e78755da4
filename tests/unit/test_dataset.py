"""Dataset validation: every bad line named by file, line, field and reason; unknown fields kept."""

from __future__ import annotations

import json

import pytest

from fmquality.domain.errors import DatasetError
from fmquality.run.dataset import dataset_json_schema, load_catalog, load_dataset, parse_lines

GOOD = {"test_id": "t1", "intent": "faq", "query": "How long do returns take?", "response": "Within 15 days."}


def _lines(*objs) -> list[bytes]:
    return [json.dumps(o, ensure_ascii=False).encode("utf-8") for o in objs]


def test_valid_line_loads_with_defaults():
    loaded = parse_lines(_lines(GOOD), "d.jsonl")
    assert not loaded.errors
    case = loaded.cases[0]
    assert case.locale == "en-US" and case.conversation_history == [] and case.intent == "faq"


def test_unknown_fields_are_kept_in_metadata():
    loaded = parse_lines(_lines({**GOOD, "channel": "mobile", "experiment": {"arm": "b"}}), "d.jsonl")
    assert loaded.cases[0].metadata == {"channel": "mobile", "experiment": {"arm": "b"}}


@pytest.mark.parametrize(
    ("patch", "field", "reason_part"),
    [
        ({"intent": "smalltalk"}, "intent", "smalltalk"),
        ({"query": "   "}, "query", "must not be empty"),
        ({"locale": "english"}, "locale", "en-US"),
        ({"conversation_history": [{"role": "bot", "content": "hi"}]}, "conversation_history[0].role", "user"),
        ({"catalog": [{"asin": "B0X", "title": "T", "price": -1}]}, "catalog[0].price", "greater than or equal"),
    ],
)
def test_bad_field_names_line_field_and_reason(patch, field, reason_part):
    loaded = parse_lines(_lines(GOOD, {**GOOD, "test_id": "t2", **patch}), "data/set.jsonl")
    assert [c.test_id for c in loaded.cases] == ["t1"]
    (error,) = loaded.errors
    assert (error.file, error.line, error.field) == ("data/set.jsonl", 2, field)
    assert reason_part in error.reason
    assert str(error).startswith(f"data/set.jsonl:2: {field}: ")


def test_missing_required_field_is_named():
    bad = {k: v for k, v in GOOD.items() if k != "query"}
    (error,) = parse_lines(_lines(bad), "d.jsonl").errors
    assert error.field == "query" and "required" in error.reason.lower()


def test_duplicate_test_id_points_at_first_line():
    loaded = parse_lines(_lines(GOOD, GOOD), "d.jsonl")
    (error,) = loaded.errors
    assert error.line == 2 and error.field == "test_id" and "first on line 1" in error.reason
    assert len(loaded.cases) == 1


def test_non_utf8_and_non_json_lines_are_errors(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"test_id": "\xff\xfe"}\n' + b"{not json\n\n")
    loaded = load_dataset(path)
    assert [(e.line, e.field) for e in loaded.errors] == [(2, "<line>"), (3, "<line>")]
    assert "UTF-8" in loaded.errors[0].reason and "JSON" in loaded.errors[1].reason
    assert len(loaded.cases) == 1


def test_every_bad_line_is_listed_not_only_the_first():
    bad = [{**GOOD, "test_id": f"b{i}", "intent": "nope"} for i in range(5)]
    loaded = parse_lines(_lines(*bad), "d.jsonl")
    assert [e.line for e in loaded.errors] == [1, 2, 3, 4, 5]


def test_empty_file_is_rejected(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(DatasetError, match="no test cases"):
        load_dataset(path)


def test_run_catalog_adds_the_products_in_play_without_overriding_the_case_snapshot(tmp_path):
    catalog_path = tmp_path / "catalog.json"
    catalog_path.write_text(json.dumps([
        {"asin": "B000000001", "title": "Uzumaki", "price": 22.99},
        {"asin": "B000000002", "title": "Monster", "price": 17.99},
        {"asin": "B000000003", "title": "Gyo", "price": 14.99},
    ]))
    catalog = load_catalog(catalog_path)
    own = {**GOOD, "query": "Is Uzumaki like Monster?", "catalog": [{"asin": "B000000001", "title": "Uzumaki", "price": 19.99}]}
    loaded = parse_lines(_lines(own, {**GOOD, "test_id": "t2"}), "d.jsonl", catalog)
    prices = {c.asin: c.price for c in loaded.cases[0].catalog}
    assert prices == {"B000000001": 19.99, "B000000002": 17.99}  # Gyo is not in play
    assert loaded.cases[1].catalog == []  # a case that names no product gets none


def test_bad_catalog_names_the_item(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps([{"asin": "B1", "title": "x", "price": "cheap"}]))
    with pytest.raises(DatasetError) as info:
        load_catalog(path)
    assert info.value.errors[0].field == "[0].price"


def test_json_schema_lists_intents_and_required_fields():
    schema = dataset_json_schema()
    assert set(schema["required"]) == {"test_id", "intent", "query"}
    intents = schema["$defs"]["Intent"]["enum"]
    assert "order_tracking" in intents and len(intents) == 8


def test_committed_json_schema_is_current():
    from pathlib import Path

    committed = Path(__file__).resolve().parents[2] / "datasets" / "schema" / "testcase.schema.json"
    assert json.loads(committed.read_text(encoding="utf-8")) == dataset_json_schema(), (
        "regenerate with: fmquality schema > datasets/schema/testcase.schema.json"
    )
