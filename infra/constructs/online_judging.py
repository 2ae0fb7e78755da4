"""Online judging and drift on the stream, inside the ProductionWatch nested stack (issue 20).

- The data bucket sends its events to EventBridge (a property of the bucket: no custom resource); a
  rule on the default bus takes "Object Created" under ``production/turns/`` to an encrypted, SSL-only
  SQS queue (a dead-letter queue with an alarm after 3 receives); the online judge function
  reads it through a Lambda event-source mapping that reports partial batch failures, so only the
  messages that failed come back.
- The drift check function runs every ``drift_check_minutes`` (EventBridge Scheduler, retried, its own
  dead-letter queue) and puts ``QualityDriftDetected`` on the project bus.
- A rule on ``QualityDriftDetected`` invokes the drift action (replay and/or
  ``QualityRollbackRecommended``, by configuration); only with ``restore_on_recommendation`` a second
  rule on ``QualityRollbackRecommended`` lets it restore the production target parameter.
The drift alarms (DriftFlag per intent x locale) are ProductionWatch's: the check publishes to them.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs import nag
from infra.constructs.dead_letters import DeadLetterQueue
from infra.constructs.evaluation_functions import EvaluationFunctions
from infra.constructs.metrics import publish_metrics_statement
from infra.constructs.policies import statement
from infra.constructs.storage import RUN_PK_PREFIX, VERDICT_PK_PREFIX, Storage

TURNS_PREFIX = "production/turns/"
DRIFT_PREFIX = "production/drift/"
ONLINE_PK_PREFIX = "ONLINE#"
SOURCE = "fmquality"
DRIFT_DETECTED = "QualityDriftDetected"
ROLLBACK_RECOMMENDED = "QualityRollbackRecommended"
# Judging a turns object (one Firehose file: up to buffer_interval_seconds of the stream) takes minutes.
JUDGE_TIMEOUT = Duration.minutes(10)


class OnlineJudging(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig, storage: Storage,
                 functions: EvaluationFunctions, kit, bucket_arn: str, state_machine: sfn.StateMachine,
                 event_bus: events.IEventBus, topic, topic_key_arn: str) -> None:
        super().__init__(scope, construct_id)
        self._settings = config.production_watch.online
        self._prefix = config.name_prefix
        self._bucket_arn = bucket_arn
        self._topic = topic
        self._kit = kit
        self.parameter_name = config.generation.parameter_name(config.env_name)
        self.queue, self.queue_dead_letters = self._turns_queue(storage.data_bucket)
        self.judge = self._online_judge(storage, functions)
        self.check, self.schedule = self._drift_check(storage, event_bus, topic_key_arn)
        self.action, self.rules = self._drift_action(state_machine, event_bus)
        self._acknowledge_nag_findings()

    def _objects(self, pattern: str) -> str:
        return f"{self._bucket_arn}/{pattern}"

    def _turns_queue(self, bucket: s3.IBucket) -> tuple[sqs.Queue, DeadLetterQueue]:
        dead_letters = DeadLetterQueue(self, "TurnsDeadLetters", alarm_name=f"{self._prefix}-dlq-online-judge",
                                       topic=self._topic,
                                       what="Captured turns were not judged online (the object's message failed 3 times).")
        queue = sqs.Queue(self, "TurnsQueue", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                          visibility_timeout=Duration.minutes(60), retention_period=Duration.days(4),
                          dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters.queue, max_receive_count=3))
        # S3 -> EventBridge (a bucket property, no custom resource) -> a rule on the account's default bus.
        cfn_bucket = bucket.node.default_child
        cfn_bucket.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
        self.turns_rule = events.Rule(
            self, "TurnsObjectCreated", description="Captured turns objects, to the online judge's queue",
            event_pattern=events.EventPattern(source=["aws.s3"], detail_type=["Object Created"], detail={
                "bucket": {"name": [bucket.bucket_name]}, "object": {"key": [{"prefix": TURNS_PREFIX}]}}),
            targets=[targets.SqsQueue(queue, dead_letter_queue=dead_letters.queue, retry_attempts=5,
                                    max_event_age=Duration.hours(6))])
        return queue, dead_letters

    def _online_judge(self, storage: Storage, functions: EvaluationFunctions) -> lambda_.Function:
        judge = self._kit.function(
            self, "OnlineJudge", "handlers.online_judge.handler", memory_mb=1024, timeout=JUDGE_TIMEOUT,
            service_suffix="online-judge",
            statements=[
                statement("ReadCapturedTurns", ["s3:GetObject"], [self._objects(f"{TURNS_PREFIX}*")]),
                storage.table_statement("StoreOnlineResults", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
                storage.table_statement("OnlineCountsAndCells", ["dynamodb:UpdateItem"], [ONLINE_PK_PREFIX]),
                storage.table_statement("VerdictCache", ["dynamodb:GetItem", "dynamodb:PutItem"], [VERDICT_PK_PREFIX]),
                publish_metrics_statement("PublishOnlineMetrics"),
                *functions._judge_statements(),
            ])
        judge.add_event_source(sources.SqsEventSource(
            self.queue, batch_size=self._settings.batch_size, report_batch_item_failures=True,
            max_concurrency=self._settings.max_concurrency))
        return judge

    def _drift_check(self, storage: Storage, event_bus: events.IEventBus,
                     topic_key_arn: str) -> tuple[lambda_.Function, scheduler.Schedule]:
        check = self._kit.function(
            self, "DriftCheck", "handlers.drift_check.handler", memory_mb=1024, timeout=Duration.minutes(4),
            environment={"ALERTS_TOPIC_ARN": self._topic.topic_arn}, service_suffix="drift-check",
            statements=[
                statement("DriftReferenceStateAlarms", ["s3:GetObject", "s3:PutObject"],
                          [self._objects(f"{DRIFT_PREFIX}*")]),
                storage.table_statement("ReadCellsAndResults", ["dynamodb:Query"], [ONLINE_PK_PREFIX, RUN_PK_PREFIX]),
                publish_metrics_statement("PublishDriftMetrics"),
                statement("EmitDriftDetected", ["events:PutEvents"], [event_bus.event_bus_arn]),
                statement("AlertDrift", ["sns:Publish"], [self._topic.topic_arn]),
                statement("EncryptAlert", ["kms:Decrypt", "kms:GenerateDataKey*"], [topic_key_arn]),
            ])
        dead_letters = DeadLetterQueue(self, "DriftCheckDeadLetters", alarm_name=f"{self._prefix}-dlq-drift-check",
                                       topic=self._topic, what="A scheduled drift check could not be invoked.")
        # The scheduler's own role, for this one function (the LambdaInvoke target adds <function>:*).
        invoker = iam.Role(self, "DriftCheckSchedulerRole", assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
                           description="EventBridge Scheduler: invoke the drift check, dead-letter what fails")
        invoker.add_to_policy(statement("InvokeDriftCheck", ["lambda:InvokeFunction"], [check.function_arn]))
        schedule = scheduler.Schedule(
            self, "DriftCheckSchedule", description="Drift on the online stream, every few minutes",
            schedule=scheduler.ScheduleExpression.rate(Duration.minutes(self._settings.drift_check_minutes)),
            target=scheduler_targets.LambdaInvoke(check, role=invoker, dead_letter_queue=dead_letters.queue, retry_attempts=2,
                                                  max_event_age=Duration.minutes(self._settings.drift_check_minutes)),
            enabled=True)
        nag.acknowledge(invoker, nag.wildcard_resource(f"{nag.arn_of(check)}:*"),
                        "EventBridge Scheduler's LambdaInvoke target grants the function's versions/aliases (ARN "
                        "suffix :*) next to the function; that one function only")
        return check, schedule

    def _drift_action(self, state_machine: sfn.StateMachine, event_bus: events.IEventBus,
                      ) -> tuple[lambda_.Function, list[events.Rule]]:
        parameter_arn = Stack.of(self).format_arn(service="ssm", resource="parameter",
                                                  resource_name=self.parameter_name.lstrip("/"))
        grants = [statement("ReadTargetHistory", ["ssm:GetParameterHistory", "ssm:GetParameter"], [parameter_arn])]
        if self._settings.replay_on_drift:
            grants.append(statement("StartReplay", ["states:StartExecution"], [state_machine.state_machine_arn]))
        if self._settings.recommend_rollback:
            grants.append(statement("EmitRollbackRecommended", ["events:PutEvents"], [event_bus.event_bus_arn]))
        if self._settings.restore_on_recommendation:
            grants.append(statement("RestoreTarget", ["ssm:PutParameter"], [parameter_arn]))
        action = self._kit.function(
            self, "DriftAction", "handlers.drift_action.handler", memory_mb=256, timeout=Duration.minutes(1),
            service_suffix="drift-action", statements=grants,
            environment={"PRODUCTION_TARGET_PARAMETER": self.parameter_name,
                         "STATE_MACHINE_ARN": state_machine.state_machine_arn,
                         "REPLAY_ENABLED": str(self._settings.replay_on_drift).lower(),
                         "RECOMMEND_ROLLBACK": str(self._settings.recommend_rollback).lower(),
                         "RESTORE_ENABLED": str(self._settings.restore_on_recommendation).lower()})
        dead_letters = DeadLetterQueue(self, "DriftActionDeadLetters", alarm_name=f"{self._prefix}-dlq-drift-action",
                                       topic=self._topic, what="A drift alarm was not acted on (replay, rollback signal).")
        target = targets.LambdaFunction(action, **dead_letters.target_options(retry_attempts=2,
                                                                              max_event_age=Duration.hours(1)))
        kinds = [DRIFT_DETECTED] + ([ROLLBACK_RECOMMENDED] if self._settings.restore_on_recommendation else [])
        rules = [events.Rule(self, f"On{kind}", event_bus=event_bus, description=f"Act on {kind}",
                             event_pattern=events.EventPattern(source=[SOURCE], detail_type=[kind]), targets=[target])
                 for kind in kinds]
        return action, rules

    def _acknowledge_nag_findings(self) -> None:
        bucket = "<DataBucketArn>"
        for function in (self.judge, self.check, self.action):
            nag.acknowledge(function.role, nag.ANY_RESOURCE, nag.TRACING_REASON + nag.METRICS_REASON)
        nag.acknowledge(self.judge.role, nag.wildcard_resource(f"{bucket}/{TURNS_PREFIX}*"),
                        "The online judge reads the turns object its S3 notification names; Firehose names the "
                        "objects under production/turns/dt=<day>/ at delivery time (read only)")
        nag.acknowledge(self.check.role, nag.wildcard_resource(f"{bucket}/{DRIFT_PREFIX}*"),
                        "The drift check reads the approved reference and its state and writes each alarm's report, "
                        "all under production/drift/")
        nag.acknowledge(self.check.role, "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
                        "Publishing to the KMS-encrypted alerts topic needs GenerateDataKey* on that one key")
