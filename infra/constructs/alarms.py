"""The two kinds of alarm the project raises, built in one place, each notifying the alerts topic.

* Run alarms (``AlarmBook.run_alarm``): on metrics that arrive once per run, not continuously. Missing
  data is ignored, so a week without runs keeps the last state instead of flapping to INSUFFICIENT_DATA
  or OK; one datapoint decides unless ``runs`` consecutive run periods must breach.
* Event alarms (``AlarmBook.event_alarm``): on counts of things that should not happen (failed
  executions, Lambda errors, throttles, dead letters). No data means none happened: not breaching.

Which alarms exist is decided by the constructs that own the metrics: infra.constructs.monitoring (run
quality, executions, functions, judge), infra.constructs.production_watch (drift, judge agreement) and
infra.constructs.dead_letters (one per queue).
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct


class AlarmBook:
    """Creates alarms under one construct, sends each to the alerts topic and keeps the list (for the
    dashboard's alarm-status widget)."""

    def __init__(self, scope: Construct, topic: sns.ITopic) -> None:
        self._scope = scope
        self._notify = cw_actions.SnsAction(topic)
        self.alarms: list[cloudwatch.Alarm] = []

    def run_alarm(self, construct_id: str, *, alarm_name: str, description: str, metric: cloudwatch.IMetric,
                  threshold: float, comparison: cloudwatch.ComparisonOperator,
                  runs: int | None = None) -> cloudwatch.Alarm:
        """Alarm on a once-per-run metric. ``runs``: that many consecutive run periods must breach (also
        stated as DatapointsToAlarm); None: one datapoint decides."""
        return self._add(cloudwatch.Alarm(
            self._scope, construct_id, alarm_name=alarm_name, alarm_description=description, metric=metric,
            threshold=threshold, comparison_operator=comparison, evaluation_periods=runs or 1,
            datapoints_to_alarm=runs, treat_missing_data=cloudwatch.TreatMissingData.IGNORE))

    def event_alarm(self, construct_id: str, *, alarm_name: str, description: str, metric: cloudwatch.IMetric,
                    threshold: float = 1,
                    comparison: cloudwatch.ComparisonOperator = (
                        cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD),
                    ) -> cloudwatch.Alarm:
        """Alarm on an event count over the metric's period: ``threshold`` events (default one) raise it."""
        return self._add(cloudwatch.Alarm(
            self._scope, construct_id, alarm_name=alarm_name, alarm_description=description, metric=metric,
            threshold=threshold, comparison_operator=comparison, evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING))

    def _add(self, alarm: cloudwatch.Alarm) -> cloudwatch.Alarm:
        alarm.add_alarm_action(self._notify)
        self.alarms.append(alarm)
        return alarm
