"""Production watch: capture real shoppers' turns, sample them weekly, watch the sampled runs.

- A Kinesis Data Firehose delivery stream (server-side encrypted) into the data bucket under
  ``production/turns/dt=YYYY-MM-DD/``: dynamic partitioning on the ``dt`` key the redaction
  transform Lambda returns (the turn's own UTC day), failed records under ``production/errors/``.
- The transform Lambda redacts personal data (order ids hashed with the key in a Secrets Manager
  secret) before Firehose stores anything.
- The sampler Lambda, on a weekly EventBridge schedule: reads the last 7 days of turns, writes
  ``datasets/production/sample-<date>.jsonl`` and starts the evaluation state machine.
- The watch Lambda, on "EvaluationCompleted" from the project bus: monitor status, drift, review
  queue (REVIEW#<run_id> items of the evaluation table), metrics, SNS alerts.
- Online judging and drift on the stream (``production_watch.online``): infra/constructs/online_judging.py.
- Alarms on DriftFlag (per intent x locale) and JudgeAgreementKappa to the alerts topic, and a
  dashboard row.
- The sampler and the watch function are invoked asynchronously by their rules: each has one dead-letter
  queue (with an alarm, infra.constructs.dead_letters) that is both its rule target's DLQ (EventBridge
  could not invoke it) and its on-failure destination (it failed after its own retries).
A NestedStack: the watch's resources live in their own template (the evaluation stack's template and
its tests stay as they are); CDK passes the bucket, table, state machine, bus and topic in as
parameters. Functions are built by the evaluation's ``FunctionKit`` (same code, layers and environment,
own log group and least-privilege role). One method per resource group below; the key prefixes are
copies of the core's (infra/ never imports lambdas/; tests check they agree).
"""

from __future__ import annotations

from aws_cdk import CfnParameter, Duration, NestedStack, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import INTENTS, FmQualityConfig
from infra.constructs import nag
from infra.constructs.alarms import AlarmBook
from infra.constructs.dead_letters import DeadLetterQueue
from infra.constructs.evaluation_functions import EvaluationFunctions
from infra.constructs.metrics import per_intent, project_metric, publish_metrics_statement
from infra.constructs.monitoring import Monitoring
from infra.constructs.online_judging import OnlineJudging
from infra.constructs.policies import statement
from infra.constructs.storage import CAPTURE_ERRORS_PREFIX, CAPTURED_TURNS_PREFIX, REVIEW_PK_PREFIX, Storage

TURNS_PREFIX = CAPTURED_TURNS_PREFIX
ERRORS_PREFIX = CAPTURE_ERRORS_PREFIX
DRIFT_PREFIX = "production/drift/"
SAMPLES_PREFIX = "datasets/production/"
BUCKET_ARN_PARAMETER = "DataBucketArn"
LOCALE_DIMENSION = "Locale"
# Retries of the asynchronous deliveries: EventBridge -> function (rule target), then the function's own
# retries of an invocation that failed (Lambda's default count, stated). Both functions may run again:
# the sampler rewrites the same sample-<date>.jsonl (from the event's time) and starts the execution as
# its last call, the watch function's review writes are conditional and a run enters the drift state once.
TARGET_RETRY_ATTEMPTS = 2
TARGET_MAX_EVENT_AGE = Duration.hours(2)
FUNCTION_RETRY_ATTEMPTS = 2
FUNCTION_MAX_EVENT_AGE = Duration.hours(6)


class ProductionWatch(NestedStack):
    """Capture stream, weekly sampler, run watcher, their alarms and dashboard rows."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig, storage: Storage,
                 functions: EvaluationFunctions, state_machine: sfn.StateMachine, event_bus: events.IEventBus,
                 monitoring: Monitoring) -> None:
        super().__init__(scope, construct_id, description="fmquality production watch: capture, sampling, drift, review",
                         parameters={BUCKET_ARN_PARAMETER: storage.data_bucket.bucket_arn})
        # The bucket's ARN as a named parameter: IAM resources (and cdk-nag's finding ids) read <DataBucketArn>/...
        self._bucket_arn = CfnParameter(self, BUCKET_ARN_PARAMETER, type="String",
                                        description="ARN of the data bucket").value_as_string
        self._settings = config.production_watch
        self._prefix = config.name_prefix
        self._topic = monitoring.topic
        self.kit = functions.kit.for_nested_stack()

        self.order_key = self._order_hash_key()
        self.transform = self._redaction_transform()
        self.stream = self._capture_stream()
        self.sampler = self._weekly_sampler(state_machine)
        self.watch = self._run_watcher(storage, event_bus, monitoring)
        # Online judging and drift on the stream (infra/constructs/online_judging.py).
        self.online = OnlineJudging(
            self, "Online", config=config, storage=storage, functions=functions, kit=self.kit,
            bucket_arn=self._bucket_arn, state_machine=state_machine, event_bus=event_bus, topic=monitoring.topic,
            topic_key_arn=monitoring.topic_key.key_arn) if self._settings.online.enabled else None
        self.book = AlarmBook(self, monitoring.topic)
        self.alarms = self.book.alarms
        self._drift_alarms()
        self.kappa_alarm = self._agreement_alarm()
        self._dashboard_rows(monitoring)
        self._acknowledge_nag_findings()

    def _objects(self, pattern: str) -> str:
        """The data bucket's objects matching ``pattern`` (a key prefix and *)."""
        return f"{self._bucket_arn}/{pattern}"

    # ---- capture ---------------------------------------------------------------------------------
    def _order_hash_key(self) -> secretsmanager.Secret:
        """Order-id hashing key (HMAC-SHA256). Rotating it changes every token, so it is rotated by hand."""
        return secretsmanager.Secret(
            self, "OrderHashKey",
            description="HMAC key that turns order ids into stable tokens before production turns are stored",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _redaction_transform(self) -> lambda_.Function:
        """Firehose's transform: redacts a turn and names its day (the dt partition key)."""
        return self.kit.function(
            self, "RedactTransform", "handlers.redact_transform.handler", memory_mb=512, timeout=Duration.minutes(1),
            environment={"ORDER_HASH_SECRET_ID": self.order_key.secret_arn},
            service_suffix="redact-transform",
            statements=[statement("ReadOrderHashKey", ["secretsmanager:GetSecretValue"], [self.order_key.secret_arn])],
        )

    def _capture_stream(self) -> firehose.CfnDeliveryStream:
        """The delivery stream, its error log and its role (``delivery_role``: write turns, invoke the
        redaction)."""
        stream_logs = logs.LogGroup(self, "DeliveryLogs", retention=logs.RetentionDays.ONE_MONTH,
                                    removal_policy=RemovalPolicy.DESTROY)
        stream_log_stream = logs.LogStream(self, "DeliveryLogStream", log_group=stream_logs,
                                           removal_policy=RemovalPolicy.DESTROY)
        self.delivery_role = self._delivery_role(stream_logs)
        encryption = firehose.CfnDeliveryStream.DeliveryStreamEncryptionConfigurationInputProperty
        stream = firehose.CfnDeliveryStream(
            self, "TurnsStream",
            delivery_stream_name=f"{self._prefix}-turns",
            delivery_stream_type="DirectPut",
            delivery_stream_encryption_configuration_input=encryption(key_type="AWS_OWNED_CMK"),
            extended_s3_destination_configuration=self._turns_destination(stream_logs, stream_log_stream),
        )
        stream.node.add_dependency(self.delivery_role)
        return stream

    def _delivery_role(self, stream_logs: logs.LogGroup) -> iam.Role:
        role = iam.Role(self, "DeliveryRole", assumed_by=iam.ServicePrincipal("firehose.amazonaws.com"),
                        description="Firehose: write production turns to the data bucket, invoke the redaction")
        transform_arn = self.transform.function_arn
        for grant in (
            statement("ListDataBucket", ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"],
                      [self._bucket_arn]),
            statement("WriteTurns", ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
                      [self._objects(f"{TURNS_PREFIX}*"), self._objects(f"{ERRORS_PREFIX}*")]),
            statement("InvokeRedaction", ["lambda:InvokeFunction", "lambda:GetFunctionConfiguration"],
                      [transform_arn, f"{transform_arn}:*"]),
            statement("DeliveryErrorLogs", ["logs:PutLogEvents"], [stream_logs.log_group_arn]),
        ):
            role.add_to_policy(grant)
        return role

    def _turns_destination(self, stream_logs: logs.LogGroup, stream_log_stream: logs.LogStream,
                           ) -> firehose.CfnDeliveryStream.ExtendedS3DestinationConfigurationProperty:
        """Turns under production/turns/dt=<day>/ (the day the transform returns), failures under
        production/errors/, redaction before anything is stored."""
        stream = firehose.CfnDeliveryStream
        return stream.ExtendedS3DestinationConfigurationProperty(
            bucket_arn=self._bucket_arn,
            role_arn=self.delivery_role.role_arn,
            prefix=f"{TURNS_PREFIX}dt=!{{partitionKeyFromLambda:dt}}/",
            error_output_prefix=f"{ERRORS_PREFIX}!{{firehose:error-output-type}}/dt=!{{timestamp:yyyy-MM-dd}}/",
            buffering_hints=stream.BufferingHintsProperty(
                interval_in_seconds=self._settings.buffer_interval_seconds, size_in_m_bs=self._settings.buffer_size_mb),
            compression_format="UNCOMPRESSED",
            # The bucket's default encryption (SSE-S3, enforced by the bucket) applies to every object.
            encryption_configuration=stream.EncryptionConfigurationProperty(no_encryption_config="NoEncryption"),
            dynamic_partitioning_configuration=stream.DynamicPartitioningConfigurationProperty(
                enabled=True, retry_options=stream.RetryOptionsProperty(duration_in_seconds=300)),
            processing_configuration=stream.ProcessingConfigurationProperty(
                enabled=True,
                processors=[stream.ProcessorProperty(
                    type="Lambda",
                    parameters=[
                        stream.ProcessorParameterProperty(parameter_name="LambdaArn",
                                                          parameter_value=self.transform.function_arn),
                        stream.ProcessorParameterProperty(parameter_name="BufferSizeInMBs", parameter_value="1"),
                    ])]),
            cloud_watch_logging_options=stream.CloudWatchLoggingOptionsProperty(
                enabled=True, log_group_name=stream_logs.log_group_name,
                log_stream_name=stream_log_stream.log_stream_name),
        )

    # ---- sampling and watching -------------------------------------------------------------------
    def _weekly_sampler(self, state_machine: sfn.StateMachine) -> lambda_.Function:
        """The weekly sampler: last week's turns -> datasets/production/sample-<date>.jsonl -> a run. Its
        dead-letter queue and schedule are kept as ``sampler_dead_letters`` and ``sampler_rule``."""
        turns = f"{TURNS_PREFIX}*"
        sampler = self.kit.function(
            self, "WatchSampler", "handlers.sampler.handler", memory_mb=1024, timeout=Duration.minutes(10),
            environment={"STATE_MACHINE_ARN": state_machine.state_machine_arn}, service_suffix="watch-sampler",
            statements=[
                statement("ListCapturedTurns", ["s3:ListBucket"], [self._bucket_arn],
                          conditions={"StringLike": {"s3:prefix": [turns]}}),
                statement("ReadCapturedTurns", ["s3:GetObject"], [self._objects(turns)]),
                statement("WriteSample", ["s3:PutObject"], [self._objects(f"{SAMPLES_PREFIX}sample-*")]),
                statement("StartSampledRun", ["states:StartExecution"], [state_machine.state_machine_arn]),
            ],
        )
        self.sampler_dead_letters = self._dead_letters_of(
            sampler, "SamplerDeadLetters", f"{self._prefix}-dlq-watch-sampler",
            "The weekly production sample was not drawn (the sampler could not be invoked or failed after its retries).")
        self.sampler_rule = events.Rule(
            self, "WeeklySample", description="Weekly stratified sample of production turns, then its evaluation",
            schedule=events.Schedule.expression(self._settings.schedule_expression), enabled=self._settings.enabled,
            targets=[self._invoke(sampler, self.sampler_dead_letters)])
        return sampler

    def _run_watcher(self, storage: Storage, event_bus: events.IEventBus, monitoring: Monitoring) -> lambda_.Function:
        """Drift / review / metrics after each sampled run (on EvaluationCompleted). Its dead-letter queue
        and rule are kept as ``watch_dead_letters`` and ``watch_rule``."""
        watch = self.kit.function(
            self, "Watch", "handlers.watch.handler", memory_mb=1024, timeout=Duration.minutes(5),
            environment={"ALERTS_TOPIC_ARN": self._topic.topic_arn}, service_suffix="watch",
            statements=[
                statement("ReadRunWriteWatch", ["s3:GetObject", "s3:PutObject"], [self._objects("runs/*")]),
                statement("DriftReferenceAndState", ["s3:GetObject", "s3:PutObject"],
                          [self._objects(f"{DRIFT_PREFIX}*")]),
                storage.table_statement("ReviewQueue", ["dynamodb:PutItem", "dynamodb:Query"], [REVIEW_PK_PREFIX]),
                publish_metrics_statement("PublishWatchMetrics"),
                statement("AlertDrift", ["sns:Publish"], [self._topic.topic_arn]),
                statement("EncryptAlert", ["kms:Decrypt", "kms:GenerateDataKey*"], [monitoring.topic_key.key_arn]),
            ],
        )
        self.watch_dead_letters = self._dead_letters_of(
            watch, "WatchDeadLetters", f"{self._prefix}-dlq-watch",
            "A completed run was not watched: no monitor status, drift or review queue for it (the watch "
            "function could not be invoked or failed after its retries).")
        self.watch_rule = events.Rule(
            self, "OnEvaluationCompleted", event_bus=event_bus,
            description="Drift, monitor status and review queue of sampled production runs",
            event_pattern=events.EventPattern(source=["fmquality"], detail_type=["EvaluationCompleted"]),
            targets=[self._invoke(watch, self.watch_dead_letters)])
        return watch

    def _dead_letters_of(self, function: lambda_.Function, construct_id: str, alarm_name: str,
                         what: str) -> DeadLetterQueue:
        """A dead-letter queue for an asynchronously invoked function: an invocation that still fails after
        the function's retries goes there (the on-failure destination: the event, the error and the
        function, in one record); its rule target uses it too (``_invoke``)."""
        dead_letters = DeadLetterQueue(self, construct_id, alarm_name=alarm_name, topic=self._topic, what=what)
        function.configure_async_invoke(on_failure=destinations.SqsDestination(dead_letters.queue),
                                        retry_attempts=FUNCTION_RETRY_ATTEMPTS, max_event_age=FUNCTION_MAX_EVENT_AGE)
        return dead_letters

    @staticmethod
    def _invoke(function: lambda_.Function, dead_letters: DeadLetterQueue) -> targets.LambdaFunction:
        """A rule target invoking ``function``: retried, then dead-lettered."""
        return targets.LambdaFunction(function, **dead_letters.target_options(
            retry_attempts=TARGET_RETRY_ATTEMPTS, max_event_age=TARGET_MAX_EVENT_AGE))

    # ---- alarms and dashboard --------------------------------------------------------------------
    def _strata(self) -> list[tuple[str, str]]:
        return [(intent, locale) for intent in INTENTS for locale in self._settings.locales]

    def _drift_alarms(self) -> None:
        """One per intent x locale: the watch function sets DriftFlag when CUSUM or KS sees a shift."""
        for intent, locale in self._strata():
            self.book.run_alarm(
                f"Drift-{intent}-{locale}", alarm_name=f"{self._prefix}-drift-{intent}-{locale}",
                description=(f"Production quality drift in {intent} x {locale} (CUSUM or KS on the weekly "
                             "sample; the watch function's own alert names the shift and the worst items)."),
                metric=project_metric("DriftFlag", statistic="Maximum",
                                      dimensions={**per_intent(intent), LOCALE_DIMENSION: locale}),
                threshold=1, comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD)

    def _agreement_alarm(self) -> cloudwatch.Alarm:
        """Judge agreement with the reviewers (Cohen's kappa) below the configured threshold."""
        threshold = self._settings.kappa_alarm_threshold
        return self.book.run_alarm(
            "JudgeAgreement", alarm_name=f"{self._prefix}-judge-agreement-below-{threshold:g}",
            description="Cohen's kappa between the judge's pass/fail and reviewers' verdicts fell below the threshold.",
            metric=project_metric("JudgeAgreementKappa", statistic="Minimum"), threshold=threshold,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD)

    def _dashboard_rows(self, monitoring: Monitoring) -> None:
        """A heading and one row on the evaluation's dashboard: monitor status, drift CUSUM, kappa."""
        monitoring.dashboard.add_widgets(
            cloudwatch.TextWidget(markdown="## Production watch\nWeekly stratified sample of real turns: monitor status "
                                           "(0 healthy, 1 warning, 2 critical, 3 insufficient data), drift CUSUM "
                                           "(sigmas), judge agreement.", width=24, height=2))
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Monitor status (overall)",
                                   left=[project_metric("MonitorStatus", statistic="Maximum")],
                                   left_y_axis=cloudwatch.YAxisProps(min=0, max=3), width=6),
            cloudwatch.GraphWidget(title="Drift CUSUM per intent x locale (sigmas)",
                                   left=[project_metric("DriftCusum", statistic="Maximum",
                                                        dimensions={**per_intent(i), LOCALE_DIMENSION: loc})
                                         for i, loc in self._strata()],
                                   left_annotations=[cloudwatch.HorizontalAnnotation(value=4, label="h")], width=12),
            cloudwatch.GraphWidget(title="Judge agreement (kappa)",
                                   left=[project_metric("JudgeAgreementKappa", statistic="Minimum")],
                                   left_y_axis=cloudwatch.YAxisProps(min=-1, max=1), width=6),
        )

    # ---- cdk-nag ---------------------------------------------------------------------------------
    def _acknowledge_nag_findings(self) -> None:
        """The watch's wildcard grants and its deliberately unrotated key, each with its reason."""
        bucket = f"<{BUCKET_ARN_PARAMETER}>"
        nag.acknowledge(self.transform.role, nag.ANY_RESOURCE, nag.TRACING_REASON)
        nag.acknowledge(self.sampler.role, nag.ANY_RESOURCE, nag.TRACING_REASON)
        nag.acknowledge(self.watch.role, nag.ANY_RESOURCE, nag.TRACING_REASON + nag.METRICS_REASON)
        nag.acknowledge(self.sampler.role, nag.wildcard_resource(f"{bucket}/{TURNS_PREFIX}*"),
                        "The sampler reads the captured turns of the last 7 days; Firehose names the objects under "
                        "production/turns/dt=<day>/ at delivery time (read only, s3:GetObject)")
        nag.acknowledge(self.sampler.role, nag.wildcard_resource(f"{bucket}/{SAMPLES_PREFIX}sample-*"),
                        "The sampler writes datasets/production/sample-<date>.jsonl; the date is only known at run "
                        "time (s3:PutObject)")
        nag.acknowledge(self.watch.role, nag.wildcard_resource(f"{bucket}/runs/*"),
                        "The watch function reads runs/<run_id>/report.json and results.jsonl of the completed run "
                        "and writes runs/<run_id>/watch.json; run ids are only known at run time")
        nag.acknowledge(self.watch.role, nag.wildcard_resource(f"{bucket}/{DRIFT_PREFIX}*"),
                        "The watch function reads the approved drift reference and reads/writes the CUSUM state, "
                        "both under production/drift/ (reference.json, state.json)")
        nag.acknowledge(self.watch.role, "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
                        "Publishing to the KMS-encrypted alerts topic needs GenerateDataKey* (the variants SNS uses) "
                        "on that one key")
        self._acknowledge_delivery_findings(bucket)

    def _acknowledge_delivery_findings(self, bucket: str) -> None:
        nag.acknowledge(self.delivery_role, nag.wildcard_resource(f"{bucket}/{TURNS_PREFIX}*"),
                        "Firehose writes objects under production/turns/dt=<day>/ with names it generates at "
                        "delivery time")
        nag.acknowledge(self.delivery_role, nag.wildcard_resource(f"{bucket}/{ERRORS_PREFIX}*"),
                        "Firehose writes records that failed processing under production/errors/ with generated names")
        nag.acknowledge(self.delivery_role, nag.wildcard_resource(f"{nag.arn_of(self.transform)}:*"),
                        "Firehose invokes the redaction function and may address its versions/aliases (ARN suffix "
                        ":*); that one function only")
        nag.acknowledge(self.order_key, "AwsSolutions-SMG4",
                        "The order-id HMAC key must stay stable: rotating it changes every stored order token and "
                        "breaks the grouping of a shopper's turns; it is rotated by hand, deliberately, with a new "
                        "capture period")
