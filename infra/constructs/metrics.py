"""The project's CloudWatch metrics: their namespace, how a graph or an alarm names one, and the grant to
publish them.

The Aggregate function publishes the run metrics, the scorers the judge metrics (EMF) and the watch
function the production-watch metrics, all in METRICS_NAMESPACE; see infra.constructs.monitoring for
the list. PutMetricData supports no resource-level permission, so the grant is scoped by a namespace
condition instead.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam

from infra.constructs.policies import statement

METRICS_NAMESPACE = "MangaAssist/Evaluation"
INTENT_DIMENSION = "Intent"
ONE_DAY = Duration.days(1)


def project_metric(name: str, *, statistic: str = "Average", period: Duration = ONE_DAY,
                   dimensions: dict[str, str] | None = None) -> cloudwatch.Metric:
    """One metric of the project's namespace (one point per run: a day's period shows one per run)."""
    return cloudwatch.Metric(namespace=METRICS_NAMESPACE, metric_name=name, dimensions_map=dimensions,
                             statistic=statistic, period=period)


def per_intent(intent: str) -> dict[str, str]:
    """The dimensions of a per-intent run metric (CompositeScore, DimensionScore_<d>, QualityGateResult)."""
    return {INTENT_DIMENSION: intent}


def publish_metrics_statement(sid: str) -> iam.PolicyStatement:
    """cloudwatch:PutMetricData, limited to the project's namespace by a condition."""
    return statement(sid, ["cloudwatch:PutMetricData"], ["*"],
                     conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}})
