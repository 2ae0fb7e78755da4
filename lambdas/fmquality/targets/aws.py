"""What the AWS-backed targets share: the client factory and how an AWS error maps to a TargetError.

Clients are injected (``client(service_name) -> boto3 client``); the default factory creates them on
first use, never at import, with botocore's own retries off so ``generate`` owns the retry policy
and counts every attempt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from fmquality.domain.errors import TargetError

ClientFactory = Callable[[str], Any]

THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException",
                              "EC2ThrottledException", "ProvisionedThroughputExceededException"})
# Transient on the service's side: the same request may succeed a moment later.
TRANSIENT_CODES = frozenset({"ServiceUnavailableException", "ServiceUnavailable", "InternalServerException",
                             "InternalFailure", "ServiceException", "ModelNotReadyException",
                             "ModelTimeoutException", "ResourceNotReadyException"})
TRANSPORT_ERRORS = (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError, ConnectionClosedError)
# The target cannot be called as configured (its grant, its existence, the caller's credentials): the
# same for every case, so the target is unavailable to the run (TargetError.unavailable).
UNCALLABLE_CODES = frozenset({"AccessDeniedException", "AccessDenied", "ResourceNotFoundException",
                              "UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException"})
UNREACHABLE_ERRORS = (EndpointConnectionError, ConnectTimeoutError)
CREDENTIAL_ERRORS = (NoCredentialsError, PartialCredentialsError, NoRegionError)


def default_client_factory(timeout_s: float = 30.0) -> ClientFactory:
    """boto3 clients created lazily, one per service, shared by the threads of a run."""
    clients: dict[str, Any] = {}
    lock = threading.Lock()

    def client(service_name: str) -> Any:
        with lock:
            if service_name not in clients:
                import boto3
                from botocore.config import Config

                # total_max_attempts=1: a single attempt per call (retries={"max_attempts": 1} would mean
                # one RETRY); the read timeout is the target's.
                clients[service_name] = boto3.client(
                    service_name,
                    config=Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                  read_timeout=timeout_s, connect_timeout=min(timeout_s, 10.0)))
            return clients[service_name]

    return client


def error_code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code") or "ClientError"


def is_retryable(exc: ClientError) -> bool:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    code = error_code(exc)
    return code in THROTTLING_CODES or code in TRANSIENT_CODES or status >= 500


def target_error(exc: Exception, what: str) -> TargetError:
    """A failed AWS call as a TargetError: throttling, 5xx and transport timeouts are retryable;
    validation, access and not-found errors are final (the same request cannot succeed)."""
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return TargetError(f"{what}: {error_code(exc)}: {message}".rstrip(": "), retryable=is_retryable(exc),
                           unavailable=status >= 500 or error_code(exc) in UNCALLABLE_CODES)
    if isinstance(exc, TRANSPORT_ERRORS):
        return TargetError(f"{what}: {type(exc).__name__}", retryable=True,
                           unavailable=isinstance(exc, UNREACHABLE_ERRORS))
    if isinstance(exc, BotoCoreError):
        return TargetError(f"{what}: {type(exc).__name__}: {exc}", unavailable=isinstance(exc, CREDENTIAL_ERRORS))
    return TargetError(f"{what}: {type(exc).__name__}: {exc}")
