"""S3 objects, whole: ``S3Store`` reads and writes any bucket's objects (datasets may live in another
bucket than the run's files); ``BucketStorage`` is one bucket as the ``run.layout.Storage`` of a
run's files. Where each file of a run lives is ``run.layout``'s.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from fmquality.domain.errors import S3ObjectExists, S3ObjectNotFound


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> ("bucket", "some/key"). Refuses anything else."""
    parsed = urlparse(uri)
    key = parsed.path.lstrip("/")
    if parsed.scheme != "s3" or not parsed.netloc or not key:
        raise ValueError(f"not an s3://bucket/key URI: {uri!r}")
    return parsed.netloc, key


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


class S3Store:
    """Reads and writes whole objects. Bucket names are passed per call: datasets may live in
    another bucket than the run artifacts."""

    def __init__(self, boto3_client: Any) -> None:
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


class BucketStorage:
    """One bucket's objects by key: the ``run.layout.Storage`` of the run files on AWS."""

    def __init__(self, store: S3Store, bucket: str) -> None:
        self.store = store
        self.bucket = bucket

    def read_bytes(self, key: str) -> bytes:
        return self.store.read_bytes(self.bucket, key)

    def read_text_if_exists(self, key: str) -> str | None:
        return self.store.read_text_if_exists(self.bucket, key)

    def write_bytes(self, key: str, body: bytes, content_type: str) -> str:
        return self.store.write_bytes(self.bucket, key, body, content_type)
