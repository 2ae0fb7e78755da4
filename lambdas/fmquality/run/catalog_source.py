"""Where a run's catalog and inputs come from: a file in S3, or a catalog snapshot in the evaluation table
(``dynamodb:latest``, ``dynamodb:<version>``). Prepare's readers: a missing or partial source is a
DatasetRejected naming it."""

from __future__ import annotations

import logging

from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, EvaluationTable, catalog_ref_version
from fmquality.adapters.s3 import S3Store
from fmquality.domain.case import CatalogItem
from fmquality.domain.errors import DatasetError, DatasetRejected, S3ObjectNotFound
from fmquality.language.catalog_index import CatalogIndex
from fmquality.run import dataset

logger = logging.getLogger(__name__)


def table_catalog(ref: str, table: EvaluationTable) -> tuple[CatalogIndex, str]:
    """The snapshot ``dynamodb:latest`` or ``dynamodb:<version>`` names, as one index over its items,
    and the version it resolved to. Only a complete load (META written, every item there) is used."""
    version = catalog_ref_version(ref)
    if version == "latest":
        version = table.latest_catalog_version()
        if version is None:
            raise DatasetRejected(f"catalog {ref}: no catalog snapshot has been loaded into the table "
                                  "(fmquality catalog load)")
    meta = table.catalog_meta(version)
    if meta is None:
        raise DatasetRejected(f"catalog {ref}: version {version!r} does not exist in the table "
                              "(or its load did not finish)")
    items = table.catalog_items(version)
    if not items:
        raise DatasetRejected(f"catalog {ref}: version {version!r} is empty")
    if len(items) != meta["item_count"]:
        raise DatasetRejected(f"catalog {ref}: version {version!r} holds {len(items)} item(s) where its load "
                              f"wrote {meta['item_count']}; load the catalog again")
    return CatalogIndex(items), version


def _read(s3: S3Store, uri: str, what: str) -> bytes:
    try:
        return s3.read_uri(uri)
    except S3ObjectNotFound as exc:
        raise DatasetRejected(f"cannot read {what}: {exc}") from exc


def read_catalog(ref: str | None, s3: S3Store,
                 table: EvaluationTable) -> tuple[list[CatalogItem] | CatalogIndex | None, str | None]:
    """The run's catalog (a file in S3 or a snapshot in the table) and how the run record names it:
    ``dynamodb:latest`` as the version it resolved to, so the report names the snapshot."""
    if not ref:
        return None, ref
    if ref.startswith(CATALOG_REF_PREFIX):
        catalog, version = table_catalog(ref, table)
        logger.info("catalog snapshot %s from the table: %d items", version, len(catalog))
        return catalog, f"{CATALOG_REF_PREFIX}{version}"
    try:
        return dataset.parse_catalog(_read(s3, ref, "catalog"), ref), ref
    except DatasetError as exc:
        problems = "\n".join(str(e) for e in exc.errors)
        raise DatasetRejected(f"{exc}" + (f":\n{problems}" if problems else "")) from exc
