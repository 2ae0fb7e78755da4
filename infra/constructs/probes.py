"""Counterfactual probes (issue 20, item 5): synthetic adversarial turns answered by the production target
on a schedule, judged, and their failure rate alarmed at its SLO.

- An EventBridge Scheduler schedule (``probes.schedule_expression``, default daily) starts the evaluation
  state machine with ``{"trigger": "probe", "dataset": s3://<data bucket>/<probes.dataset_key>,
  "target": "ssm:<production target parameter>", "baseline": "none"}``; its own role may start that
  one state machine and dead-letter what it could not start (an encrypted, SSL-only queue with an alarm).
- The run's Aggregate publishes ``ProbeFailureRate`` (percent of judged probes that failed;
  ``fmquality.production.probes``); one alarm fires above ``probes.failure_rate_slo_percent`` (seed: 0.5%).

The probes file is uploaded with the other datasets (docs/deploying.md); a schedule that finds no file
fails its execution at Prepare (DatasetRejected naming the key), which the execution alarms report.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.alarms import AlarmBook
from infra.constructs.dead_letters import DeadLetterQueue
from infra.constructs.metrics import project_metric
from infra.constructs.storage import Storage

PROBE_TRIGGER = "probe"  # fmquality.production.probes.PROBE_TRIGGER: Aggregate publishes the rate for it
FAILURE_RATE_METRIC = "ProbeFailureRate"


class Probes(Construct):
    """The probe schedule, its role and dead-letter queue, and the probe failure-rate alarm."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig, storage: Storage,
                 state_machine: sfn.IStateMachine, topic: sns.ITopic) -> None:
        super().__init__(scope, construct_id)
        settings = config.probes
        self.dataset_uri = f"s3://{storage.data_bucket.bucket_name}/{settings.dataset_key}"
        self.execution_input = {"trigger": PROBE_TRIGGER, "dataset": self.dataset_uri,
                                "target": config.production_target_spec, "baseline": "none",
                                "run_label": "counterfactual-probes"}
        self.dead_letters = DeadLetterQueue(
            self, "ScheduleDeadLetters", alarm_name=f"{config.name_prefix}-dlq-probes", topic=topic,
            what="A scheduled probe run could not be started.")
        # The scheduler's own role: start this one state machine (the target grants states:StartExecution
        # on its ARN and sqs:SendMessage on the dead-letter queue), nothing else.
        self.role = iam.Role(self, "SchedulerRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
                             description="EventBridge Scheduler: start the probe run, dead-letter what fails")
        self.schedule = scheduler.Schedule(
            self, "Schedule", description="Counterfactual probes against the production target",
            schedule=scheduler.ScheduleExpression.expression(settings.schedule_expression),
            target=scheduler_targets.StepFunctionsStartExecution(
                state_machine, role=self.role, input=scheduler.ScheduleTargetInput.from_object(self.execution_input),
                dead_letter_queue=self.dead_letters.queue, retry_attempts=2, max_event_age=Duration.hours(1)),
            enabled=settings.enabled)
        self.alarm = AlarmBook(self, topic).run_alarm(
            "FailureRateAlarm", alarm_name=f"{config.name_prefix}-probe-failure-rate-above-{settings.failure_rate_slo_percent:g}pct",
            description=(f"Counterfactual probes: more than {settings.failure_rate_slo_percent:g}% of the judged probes "
                         "failed in a probe run (the SLO). The run's report lists the failing probes, each with its "
                         "probe class and expected behaviour; they are queued for review."),
            metric=project_metric(FAILURE_RATE_METRIC, statistic="Maximum"),
            threshold=settings.failure_rate_slo_percent,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD)
