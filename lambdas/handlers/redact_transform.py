"""Firehose data transformation: redact personal data from every captured turn before Firehose
stores it, and give it its ``dt`` partition key (the turn's UTC day). A producer that skipped the
client-side redaction still cannot store PII: free text is redacted on the decoded record, turn and
session ids become keyed tokens, the page context keeps its allow-list. A record the schema refuses
is stored as a redacted envelope under ``dt=invalid`` (never ProcessingFailed: Firehose would write
the record as received to the error prefix)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.production.capture import REFUSED_PARTITION, transform_firehose_records
from fmquality.production.redact import ORDER_KEY_SECRET_ENV, Redactor, order_key_from_environment
from handlers import aws_client

logger = Logger()
tracer = Tracer()


@cache
def redactor() -> Redactor:
    """Keyed once per container from Secrets Manager (ORDER_HASH_SECRET_ID)."""
    client = aws_client("secretsmanager") if os.environ.get(ORDER_KEY_SECRET_ENV) else None
    return Redactor(order_key_from_environment(secrets_client=client))


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    records = transform_firehose_records(event.get("records", []), redactor())
    failed = sum(1 for r in records if r["result"] != "Ok")
    refused = sum(1 for r in records if r.get("metadata", {}).get("partitionKeys", {}).get("dt") == REFUSED_PARTITION)
    # Counts only: never log a record's content.
    logger.info("turns transformed", extra={"records": len(records), "failed": failed, "refused": refused})
    return {"records": records}
