"""S3 objects of a run: the dataset, normalized items, rubric, results and reports.

Layout of the data bucket (one prefix per run)::

    runs/<run_id>/items.json      JSON array, one {"arm", "case"} per test case and arm (the Map's ItemReader)
    runs/<run_id>/targets.json    {"candidate": TargetSpec dict, "control": TargetSpec dict | null}, ssm: resolved
    runs/<run_id>/rejected.jsonl  one LineError per bad dataset line
    runs/<run_id>/rubric.json     the resolved rubric (Rubric.model_dump)
    runs/<run_id>/results.jsonl   one EvaluationResult per line (the candidate arm)
    runs/<run_id>/control_results.jsonl   the same for the control arm of a paired run
    runs/<run_id>/report.json     the RunReport
    runs/<run_id>/report.html     the human-readable report
    baselines/<dataset_id>/<run_id>/report.json   an approved baseline's report, frozen: written once, never rewritten
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse
from fmquality.domain.errors import S3ObjectExists, S3ObjectNotFound

ITEMS = "items.json"
REJECTED = "rejected.jsonl"
RUBRIC = "rubric.json"
TARGETS = "targets.json"
RESULTS = "results.jsonl"
CONTROL_RESULTS = "control_results.jsonl"
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> ("bucket", "some/key"). Refuses anything else."""
    parsed = urlparse(uri)
    key = parsed.path.lstrip("/")
    if parsed.scheme != "s3" or not parsed.netloc or not key:
        raise ValueError(f"not an s3://bucket/key URI: {uri!r}")
    return parsed.netloc, key


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def run_key(run_id: str, name: str) -> str:
    return f"runs/{run_id}/{name}"


def baseline_key(dataset_id: str, run_id: str) -> str:
    return f"baselines/{dataset_id}/{run_id}/{REPORT_JSON}"


class S3Store:
    """Reads and writes whole objects. Bucket names are passed per call: datasets may live in
    another bucket than the run artifacts."""

    def __init__(self, boto3_client: Any = None) -> None:
        if boto3_client is None:
            import boto3

            boto3_client = boto3.client("s3")
        self._s3 = boto3_client

    def read_bytes(self, bucket: str, key: str) -> bytes:
        try:
            response = self._s3.get_object(Bucket=bucket, Key=key)
        except self._s3.exceptions.NoSuchKey as exc:
            raise S3ObjectNotFound(f"{s3_uri(bucket, key)} does not exist") from exc
        except self._s3.exceptions.NoSuchBucket as exc:
            raise S3ObjectNotFound(f"{s3_uri(bucket, key)}: bucket {bucket!r} does not exist") from exc
        except self._s3.exceptions.ClientError as exc:
            # Without s3:ListBucket (least privilege), S3 answers 403 for a key that does not exist.
            if exc.response.get("Error", {}).get("Code") in ("AccessDenied", "403"):
                raise S3ObjectNotFound(f"{s3_uri(bucket, key)} does not exist or this function may not read it") from exc
            raise
        return response["Body"].read()

    def read_uri(self, uri: str) -> bytes:
        return self.read_bytes(*parse_s3_uri(uri))

    def read_text(self, bucket: str, key: str) -> str:
        return self.read_bytes(bucket, key).decode("utf-8")

    def read_json(self, bucket: str, key: str) -> Any:
        return json.loads(self.read_bytes(bucket, key))

    def read_text_if_exists(self, bucket: str, key: str) -> str | None:
        try:
            return self.read_text(bucket, key)
        except S3ObjectNotFound:
            return None

    def write_bytes(self, bucket: str, key: str, body: bytes, content_type: str) -> str:
        self._s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)
        return s3_uri(bucket, key)

    def write_bytes_once(self, bucket: str, key: str, body: bytes, content_type: str) -> str:
        """Write an object that must never be rewritten: S3's conditional write (If-None-Match) refuses
        a key that exists, whoever else writes."""
        try:
            self._s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type, IfNoneMatch="*")
        except self._s3.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise S3ObjectExists(f"{s3_uri(bucket, key)} exists and is never rewritten") from exc
            raise
        return s3_uri(bucket, key)

    def write_text(self, bucket: str, key: str, text: str, content_type: str = "text/plain; charset=utf-8") -> str:
        return self.write_bytes(bucket, key, text.encode("utf-8"), content_type)

    def write_json(self, bucket: str, key: str, data: Any) -> str:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return self.write_bytes(bucket, key, body, "application/json")

    def write_jsonl(self, bucket: str, key: str, rows: list[Any]) -> str:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        return self.write_text(bucket, key, text, "application/x-ndjson")
