"""The catalog as snapshots in the evaluation table (moto): `fmquality catalog load` and the adapter's reads."""

from __future__ import annotations

import json
from datetime import date

import pytest

from fmquality.adapters.dynamodb import CatalogLoadError, EvaluationTable
from fmquality.catalog_index import title_keys
from fmquality.cli import main
from fmquality.models import CatalogItem
from moto_env import TABLE

TOMIE = {"asin": "B0TOMIE001", "title": "Tomie", "price": 19.99, "availability": "in_stock", "author": "Junji Ito"}
# 30 more items: a load takes two BatchWriteItem requests (25 + 6).
FILLERS = [{"asin": f"B0FILLER{n:02d}", "title": f"Filler Saga {n}", "price": 9.99} for n in range(30)]


def _catalog_file(tmp_path, items, name="catalog.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def _load(path, *args):
    return main(["catalog", "load", path, "--table", TABLE, "--region", "us-east-1", *args])


def test_a_loaded_catalog_reads_back_with_its_keys_meta_and_pointer(aws, tmp_path, capsys):
    table = EvaluationTable(TABLE, aws.ddb)
    assert _load(_catalog_file(tmp_path, [TOMIE, *FILLERS]), "--snapshot-date", "2026-11-20") == 0
    assert "catalog 2026-11-20: 31 items from catalog.json" in capsys.readouterr().out

    assert table.latest_catalog_version() == "2026-11-20"
    items = table.catalog_items("2026-11-20", page_size=7)  # five query pages
    assert items == sorted((CatalogItem.model_validate(i) for i in [TOMIE, *FILLERS]), key=lambda i: i.asin)
    meta = table.catalog_meta("2026-11-20")
    assert (meta["item_count"], meta["source"], meta["snapshot_date"]) == (31, "catalog.json", "2026-11-20")
    row = aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": "CATALOG#2026-11-20"}, "sk": {"S": "ITEM#B0TOMIE001"}})["Item"]
    assert [k["S"] for k in row["title_keys"]["L"]] == sorted(title_keys(CatalogItem.model_validate(TOMIE)))

    # The same date again is a new version, never an overwrite of the one runs may be reading.
    assert _load(_catalog_file(tmp_path, [TOMIE]), "--snapshot-date", "2026-11-20") == 0
    assert table.latest_catalog_version() == "2026-11-20.2"
    assert len(table.catalog_items("2026-11-20")) == 31 and len(table.catalog_items("2026-11-20.2")) == 1


def test_a_bad_catalog_file_is_refused_line_by_line_and_nothing_is_written(aws, tmp_path, capsys):
    bad = _catalog_file(tmp_path, [TOMIE, {"asin": "B0BAD00001", "title": "Bad", "price": -1}, dict(TOMIE)])
    assert _load(bad) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: [1].price: Input should be greater than or equal to 0" in err

    duplicated = _catalog_file(tmp_path, [TOMIE, dict(TOMIE)], "dup.json")
    assert _load(duplicated) == 2
    assert f"{duplicated}:2: [1].asin: duplicate ASIN 'B0TOMIE001' (first as item 1)" in capsys.readouterr().err
    assert aws.ddb.scan(TableName=TABLE)["Items"] == []


class UnprocessedOnce:
    """The moto client, with the last ``count`` items of every first request left unprocessed."""

    def __init__(self, client, count: int, always: bool = False) -> None:
        self._client, self._count, self._always, self.calls = client, count, always, 0

    def __getattr__(self, name):
        return getattr(self._client, name)

    def batch_write_item(self, RequestItems):
        self.calls += 1
        (requests,) = RequestItems.values()
        if self.calls > 1 and not self._always:
            return self._client.batch_write_item(RequestItems=RequestItems)
        if requests[:-self._count]:
            self._client.batch_write_item(RequestItems={TABLE: requests[:-self._count]})
        return {"UnprocessedItems": {TABLE: requests[-self._count:]}}


def test_unprocessed_items_are_written_again_and_a_load_that_never_drains_fails(aws):
    items = [CatalogItem.model_validate(i) for i in FILLERS[:5]]
    pauses: list[float] = []
    client = UnprocessedOnce(aws.ddb, count=2)
    meta = EvaluationTable(TABLE, client).put_catalog(items, date(2026, 11, 20), "catalog.json", sleep=pauses.append)
    assert meta["item_count"] == 5 and client.calls == 2 and len(pauses) == 1
    assert len(EvaluationTable(TABLE, aws.ddb).catalog_items("2026-11-20")) == 5

    stuck = EvaluationTable(TABLE, UnprocessedOnce(aws.ddb, count=2, always=True))
    with pytest.raises(CatalogLoadError, match="2 item"):
        stuck.put_catalog(items, date(2026, 11, 21), "catalog.json", sleep=pauses.append, max_attempts=3)
    assert EvaluationTable(TABLE, aws.ddb).latest_catalog_version() == "2026-11-20"
