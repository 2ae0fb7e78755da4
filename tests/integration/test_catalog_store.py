"""The catalog as snapshots in the evaluation table (moto): `fmquality catalog load`, the adapter's
reads, and Prepare with "catalog": "dynamodb:latest" | "dynamodb:<version>"."""

from __future__ import annotations

import json
from argparse import Namespace
from datetime import date

import pytest
from botocore.exceptions import ClientError

from fmquality.domain.errors import CatalogLoadError
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.language.catalog_index import title_keys
from fmquality.cli.main import main
from fmquality.domain.case import CatalogItem
from moto_env import CASES, TABLE, load_event, put_dataset, read_json

TOMIE = {"asin": "B0TOMIE001", "title": "Tomie", "price": 19.99, "availability": "in_stock", "author": "Junji Ito"}
# 30 more items: a load takes two BatchWriteItem requests (25 + 6).
FILLERS = [{"asin": f"B0FILLER{n:02d}", "title": f"Filler Saga {n}", "price": 9.99} for n in range(30)]


def _catalog_file(tmp_path, items, name="catalog.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def _load(path, *args):
    return main(["catalog", "load", path, "--table", TABLE, "--region", "us-east-1", *args])


def _prepare(event, context):
    from handlers.prepare import handler

    return handler(event, context)


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


def test_prepare_reads_the_latest_snapshot_and_records_its_version(aws, tmp_path, lambda_context):
    assert _load(_catalog_file(tmp_path, [TOMIE, *FILLERS]), "--snapshot-date", "2026-11-20") == 0
    put_dataset(aws.s3, [{**CASES[0], "query": "Do you have Tomie?", "catalog": []}, CASES[2]])

    out = _prepare(load_event("prepare.json", execution_name="table-run", catalog="dynamodb:latest"), lambda_context)
    items = read_json(aws.s3, out["items_key"])
    # Only the product in play travels with the item, not the snapshot's 31 entries.
    assert [[c["asin"] for c in i["case"]["catalog"]] for i in items] == [["B0TOMIE001"], []]
    # The run, and so its report, names the snapshot "latest" resolved to.
    assert EvaluationTable(TABLE, aws.ddb).get_run("table-run")["catalog"] == "dynamodb:2026-11-20"
    from handlers.aggregate import handler as aggregate

    aggregated = aggregate(load_event("aggregate.json", **{k: out[k] for k in ("run_id", "rubric_key", "items_key",
                                                                      "targets_key")}),
                           lambda_context)
    assert read_json(aws.s3, aggregated["report_key"])["catalog"] == "dynamodb:2026-11-20"

    pinned = _prepare(load_event("prepare.json", execution_name="pinned-run", catalog="dynamodb:2026-11-20"), lambda_context)
    assert read_json(aws.s3, pinned["items_key"]) == items


def test_unknown_versions_and_an_empty_table_are_rejected_by_name(aws, tmp_path, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    put_dataset(aws.s3, CASES)
    with pytest.raises(DatasetRejected, match=r"dynamodb:latest: no catalog snapshot has been loaded"):
        _prepare(load_event("prepare.json", catalog="dynamodb:latest"), lambda_context)
    assert _load(_catalog_file(tmp_path, [TOMIE])) == 0
    with pytest.raises(DatasetRejected, match=r"version '2020-01-01' does not exist"):
        _prepare(load_event("prepare.json", catalog="dynamodb:2020-01-01"), lambda_context)
    version = EvaluationTable(TABLE, aws.ddb).latest_catalog_version()  # today (UTC), the default
    aws.ddb.delete_item(TableName=TABLE, Key={"pk": {"S": f"CATALOG#{version}"}, "sk": {"S": "ITEM#B0TOMIE001"}})
    with pytest.raises(DatasetRejected, match=rf"dynamodb:latest: version '{version}' is empty"):
        _prepare(load_event("prepare.json", catalog="dynamodb:latest"), lambda_context)


def test_a_bad_catalog_file_is_refused_line_by_line_and_nothing_is_written(aws, tmp_path, capsys):
    bad = _catalog_file(tmp_path, [TOMIE, {"asin": "B0BAD00001", "title": "Bad", "price": -1}, dict(TOMIE)])
    assert _load(bad) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: [1].price: Input should be greater than or equal to 0" in err

    duplicated = _catalog_file(tmp_path, [TOMIE, dict(TOMIE)], "dup.json")
    assert _load(duplicated) == 2
    assert f"{duplicated}:2: [1].asin: duplicate ASIN 'B0TOMIE001' (first at item 1)" in capsys.readouterr().err
    assert aws.ddb.scan(TableName=TABLE)["Items"] == []


class FailingBatchWrites:
    """The moto client, with BatchWriteItem failing after ``succeed`` requests."""

    def __init__(self, client, succeed: int) -> None:
        self._client, self._left = client, succeed

    def __getattr__(self, name):
        return getattr(self._client, name)

    def batch_write_item(self, **kwargs):
        if self._left == 0:
            raise ClientError({"Error": {"Code": "InternalServerError", "Message": "connection reset"}}, "BatchWriteItem")
        self._left -= 1
        return self._client.batch_write_item(**kwargs)


def test_a_load_that_fails_halfway_never_becomes_current(aws, tmp_path, lambda_context, capsys):
    from fmquality.cli.aws import run_catalog_command
    from fmquality.domain.errors import DatasetRejected

    assert _load(_catalog_file(tmp_path, [TOMIE]), "--snapshot-date", "2026-11-13") == 0
    args = Namespace(file=_catalog_file(tmp_path, [TOMIE, *FILLERS], "next.json"), table=TABLE,
                     snapshot_date=date(2026, 11, 20), region=None)
    assert run_catalog_command(args, FailingBatchWrites(aws.ddb, succeed=1)) == 3
    assert "the latest snapshot is unchanged" in capsys.readouterr().err

    table = EvaluationTable(TABLE, aws.ddb)
    assert len(table.catalog_items("2026-11-20")) == 25  # the first batch landed...
    assert table.catalog_meta("2026-11-20") is None  # ...but the load never finished
    assert table.latest_catalog_version() == "2026-11-13"
    put_dataset(aws.s3, [{**CASES[0], "query": "Do you have Tomie?"}])
    assert _prepare(load_event("prepare.json", execution_name="r1", catalog="dynamodb:latest"), lambda_context)["item_count"] == 1
    with pytest.raises(DatasetRejected, match=r"'2026-11-20' does not exist in the table \(or its load did not finish\)"):
        _prepare(load_event("prepare.json", execution_name="r2", catalog="dynamodb:2026-11-20"), lambda_context)


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
