"""Events the gate emits on the project's event bus."""

from __future__ import annotations

import json
from typing import Any

from fmquality.domain.errors import EventPublishError

SOURCE = "fmquality"
EVALUATION_COMPLETED = "EvaluationCompleted"


class EventPublisher:
    def __init__(self, event_bus_name: str, boto3_client: Any) -> None:
        self.event_bus_name = event_bus_name
        self._events = boto3_client

    def put(self, detail_type: str, detail: dict[str, Any], source: str = SOURCE,
            resources: list[str] | None = None) -> str:
        entry: dict[str, Any] = {
            "Source": source,
            "DetailType": detail_type,
            "Detail": json.dumps(detail, ensure_ascii=False),
            "EventBusName": self.event_bus_name,
        }
        if resources:
            entry["Resources"] = resources
        response = self._events.put_events(Entries=[entry])
        # PutEvents reports per-entry failures in the body, not as an exception.
        if response.get("FailedEntryCount"):
            failed = response["Entries"][0]
            raise EventPublishError(f"{detail_type} refused by {self.event_bus_name}: "
                                    f"{failed.get('ErrorCode')}: {failed.get('ErrorMessage')}")
        return response["Entries"][0].get("EventId", "")

    def evaluation_completed(self, detail: dict[str, Any], resources: list[str] | None = None) -> str:
        return self.put(EVALUATION_COMPLETED, detail, resources=resources)
