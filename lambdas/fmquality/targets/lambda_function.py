"""The ``lambda:<function>`` target: the chatbot's own function, invoked synchronously per turn."""

from __future__ import annotations

import json

from fmquality.domain.case import TestCase
from fmquality.targets.aws import ClientFactory, default_client_factory, target_error
from fmquality.domain.errors import TargetError
from fmquality.targets.base import TargetReply, TargetSpec, request_for
from fmquality.targets.http_endpoint import parse_reply

ERROR_CHARS = 300


class LambdaTarget:
    def __init__(self, spec: TargetSpec, client: ClientFactory | None = None) -> None:
        self.spec = spec
        self._client = client or default_client_factory(spec.timeout_s)
        self._version: str | None = None

    @property
    def id(self) -> str:
        return self.spec.ref

    @property
    def version(self) -> str | None:
        """The ExecutedVersion of the latest answer ("$LATEST" for an unqualified, unpublished function)."""
        return self._version

    def answer(self, case: TestCase) -> TargetReply:
        payload = request_for(case).model_dump_json().encode("utf-8")
        try:
            reply = self._client("lambda").invoke(FunctionName=self.spec.ref, InvocationType="RequestResponse",
                                                  Payload=payload)
            body = reply["Payload"].read()
        except Exception as exc:  # noqa: BLE001 - mapped: throttling/5xx retryable, the rest final
            raise target_error(exc, "Invoke") from exc
        version = reply.get("ExecutedVersion")
        if reply.get("FunctionError"):
            # The function ran and failed (an exception, a timeout inside it): its own bug, not a transient.
            raise TargetError(f"function error ({reply['FunctionError']}): {_error_message(body)}")
        if version:
            self._version = version
        return parse_reply(body, "lambda").served_by(version)


def _error_message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body[:ERROR_CHARS].decode("utf-8", "replace")
    if isinstance(data, dict):
        kind, message = data.get("errorType"), data.get("errorMessage")
        if kind or message:
            return f"{kind}: {message}"[:ERROR_CHARS] if kind else str(message)[:ERROR_CHARS]
    return json.dumps(data)[:ERROR_CHARS]
