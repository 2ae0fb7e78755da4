"""IAM statement builders every construct shares; each role's statements are built next to its function.

Statements carry a ``sid`` that says what the grant is for, so a reader of the template (or of cdk-nag's
findings) sees why each permission exists. Table statements, which add a partition-key condition, are
built by ``Storage.table_statement``; the metrics grant by ``infra.constructs.metrics``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_iam as iam


def statement(sid: str, actions: list[str], resources: list[str],
              conditions: dict[str, Any] | None = None) -> iam.PolicyStatement:
    """An Allow statement of ``actions`` on exactly ``resources`` (and ``conditions``, when given)."""
    return iam.PolicyStatement(sid=sid, actions=actions, resources=resources, conditions=conditions)
