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
- Alarms on DriftFlag (per intent x locale) and JudgeAgreementKappa to the alerts topic, and a
  dashboard row.
- The sampler and the watch function are invoked asynchronously by their rules: each has one dead-letter
  queue (with an alarm, infra.constructs.dead_letters) that is both its rule target's DLQ (EventBridge
  could not invoke it) and its on-failure destination (it failed after its own retries).
A NestedStack: the watch's resources live in their own template (the evaluation stack's template and
its tests stay as they are); CDK passes the bucket, table, state machine, bus and topic in as
parameters. Functions are built by ``EvaluationFunctions._function`` (same code asset, layers,
environment, own log group and least-privilege role), called with this stack as its ``self``.
"""

from __future__ import annotations

from aws_cdk import CfnParameter, Duration, NestedStack, RemovalPolicy, SymlinkFollowMode
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import INTENTS, FmQualityConfig
from infra.constructs.dead_letters import DeadLetterQueue
from infra.constructs.monitoring import Monitoring
from infra.constructs.scorer_functions import LAMBDA_CODE_DIR, METRICS_NAMESPACE, EvaluationFunctions, _statement
from infra.constructs.storage import REVIEW_PK_PREFIX, Storage

TURNS_PREFIX = "production/turns/"
ERRORS_PREFIX = "production/errors/"
DRIFT_PREFIX = "production/drift/"
SAMPLES_PREFIX = "datasets/production/"
SAMPLE_TRIGGER = "schedule:production-sample"
BUCKET_ARN_PARAMETER = "DataBucketArn"
# Retries of the asynchronous deliveries: EventBridge -> function (rule target), then the function's own
# retries of an invocation that failed (Lambda's default count, stated). Both functions may run again:
# the sampler rewrites the same sample-<date>.jsonl (from the event's time) and starts the execution as
# its last call, the watch function's review writes are conditional and a run enters the drift state once.
TARGET_RETRY_ATTEMPTS = 2
TARGET_MAX_EVENT_AGE = Duration.hours(2)
FUNCTION_RETRY_ATTEMPTS = 2
FUNCTION_MAX_EVENT_AGE = Duration.hours(6)


def watch_metric(name: str, dimensions: dict[str, str] | None = None, statistic: str = "Maximum",
                 period: Duration = Duration.days(1)) -> cloudwatch.Metric:
    return cloudwatch.Metric(namespace=METRICS_NAMESPACE, metric_name=name, dimensions_map=dimensions,
                             statistic=statistic, period=period)


class ProductionWatch(NestedStack):
    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig, storage: Storage,
                 functions: EvaluationFunctions, state_machine: sfn.StateMachine, event_bus: events.IEventBus,
                 monitoring: Monitoring) -> None:
        super().__init__(scope, construct_id, description="fmquality production watch: capture, sampling, drift, review",
                         parameters={BUCKET_ARN_PARAMETER: storage.data_bucket.bucket_arn})
        # The bucket's ARN as a named parameter: IAM resources (and cdk-nag's finding ids) read <DataBucketArn>/...
        bucket_arn = CfnParameter(self, BUCKET_ARN_PARAMETER, type="String",
                                  description="ARN of the data bucket").value_as_string
        # What EvaluationFunctions._function reads from its ``self``: the same asset, layers and environment.
        self._config = config
        # The same lambdas/ folder (same asset hash, one upload); a Code instance binds to one stack only.
        self.code = lambda_.Code.from_asset(str(LAMBDA_CODE_DIR), exclude=["*.egg-info", "__pycache__", "tests"],
                                            follow_symlinks=SymlinkFollowMode.ALWAYS)
        self.layers = functions.layers
        self.common_environment = functions.common_environment
        settings = config.production_watch
        prefix = f"fmquality-{config.env_name}"

        def objects(pattern: str) -> str:
            return f"{bucket_arn}/{pattern}"

        # ---- Order-id hashing key (HMAC-SHA256). Rotating it changes every token, so it is rotated by hand.
        self.order_key = secretsmanager.Secret(
            self, "OrderHashKey",
            description="HMAC key that turns order ids into stable tokens before production turns are stored",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            removal_policy=RemovalPolicy.RETAIN,
        )

        # ---- Redaction transform.
        self.transform = EvaluationFunctions._function(self, 
            "RedactTransform", "handlers.redact_transform.handler", memory_mb=512, timeout=Duration.minutes(1),
            environment={"ORDER_HASH_SECRET_ID": self.order_key.secret_arn},
            service_suffix="redact-transform",
            statements=[_statement("ReadOrderHashKey", ["secretsmanager:GetSecretValue"], [self.order_key.secret_arn])],
        )

        # ---- Delivery stream.
        stream_logs = logs.LogGroup(self, "DeliveryLogs", retention=logs.RetentionDays.ONE_MONTH,
                                    removal_policy=RemovalPolicy.DESTROY)
        stream_log_stream = logs.LogStream(self, "DeliveryLogStream", log_group=stream_logs,
                                           removal_policy=RemovalPolicy.DESTROY)
        self.delivery_role = iam.Role(self, "DeliveryRole", assumed_by=iam.ServicePrincipal("firehose.amazonaws.com"),
                                      description="Firehose: write production turns to the data bucket, invoke the redaction")
        self.delivery_role.add_to_policy(_statement("ListDataBucket", ["s3:GetBucketLocation", "s3:ListBucket",
                                                                       "s3:ListBucketMultipartUploads"], [bucket_arn]))
        self.delivery_role.add_to_policy(_statement(
            "WriteTurns", ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
            [objects(f"{TURNS_PREFIX}*"), objects(f"{ERRORS_PREFIX}*")]))
        self.delivery_role.add_to_policy(_statement("InvokeRedaction", ["lambda:InvokeFunction",
                                                                        "lambda:GetFunctionConfiguration"],
                                                    [self.transform.function_arn, f"{self.transform.function_arn}:*"]))
        self.delivery_role.add_to_policy(_statement("DeliveryErrorLogs", ["logs:PutLogEvents"],
                                                    [stream_logs.log_group_arn]))
        self.stream = firehose.CfnDeliveryStream(
            self, "TurnsStream",
            delivery_stream_name=f"{prefix}-turns",
            delivery_stream_type="DirectPut",
            delivery_stream_encryption_configuration_input=firehose.CfnDeliveryStream.DeliveryStreamEncryptionConfigurationInputProperty(
                key_type="AWS_OWNED_CMK"),
            extended_s3_destination_configuration=firehose.CfnDeliveryStream.ExtendedS3DestinationConfigurationProperty(
                bucket_arn=bucket_arn,
                role_arn=self.delivery_role.role_arn,
                prefix=f"{TURNS_PREFIX}dt=!{{partitionKeyFromLambda:dt}}/",
                error_output_prefix=f"{ERRORS_PREFIX}!{{firehose:error-output-type}}/dt=!{{timestamp:yyyy-MM-dd}}/",
                buffering_hints=firehose.CfnDeliveryStream.BufferingHintsProperty(
                    interval_in_seconds=settings.buffer_interval_seconds, size_in_m_bs=settings.buffer_size_mb),
                compression_format="UNCOMPRESSED",
                # The bucket's default encryption (SSE-S3, enforced by the bucket) applies to every object.
                encryption_configuration=firehose.CfnDeliveryStream.EncryptionConfigurationProperty(
                    no_encryption_config="NoEncryption"),
                dynamic_partitioning_configuration=firehose.CfnDeliveryStream.DynamicPartitioningConfigurationProperty(
                    enabled=True, retry_options=firehose.CfnDeliveryStream.RetryOptionsProperty(duration_in_seconds=300)),
                processing_configuration=firehose.CfnDeliveryStream.ProcessingConfigurationProperty(
                    enabled=True,
                    processors=[firehose.CfnDeliveryStream.ProcessorProperty(
                        type="Lambda",
                        parameters=[
                            firehose.CfnDeliveryStream.ProcessorParameterProperty(
                                parameter_name="LambdaArn", parameter_value=self.transform.function_arn),
                            firehose.CfnDeliveryStream.ProcessorParameterProperty(
                                parameter_name="BufferSizeInMBs", parameter_value="1"),
                        ])]),
                cloud_watch_logging_options=firehose.CfnDeliveryStream.CloudWatchLoggingOptionsProperty(
                    enabled=True, log_group_name=stream_logs.log_group_name,
                    log_stream_name=stream_log_stream.log_stream_name),
            ),
        )
        self.stream.node.add_dependency(self.delivery_role)

        # ---- Weekly sampler.
        self.sampler = EvaluationFunctions._function(self, 
            "WatchSampler", "handlers.sampler.handler", memory_mb=1024, timeout=Duration.minutes(10),
            environment={"STATE_MACHINE_ARN": state_machine.state_machine_arn}, service_suffix="watch-sampler",
            statements=[
                iam.PolicyStatement(sid="ListCapturedTurns", actions=["s3:ListBucket"], resources=[bucket_arn],
                                    conditions={"StringLike": {"s3:prefix": [f"{TURNS_PREFIX}*"]}}),
                _statement("ReadCapturedTurns", ["s3:GetObject"], [objects(f"{TURNS_PREFIX}*")]),
                _statement("WriteSample", ["s3:PutObject"], [objects(f"{SAMPLES_PREFIX}sample-*")]),
                _statement("StartSampledRun", ["states:StartExecution"], [state_machine.state_machine_arn]),
            ],
        )
        topic = monitoring.topic
        self.sampler_dead_letters = DeadLetterQueue(
            self, "SamplerDeadLetters", alarm_name=f"{prefix}-dlq-watch-sampler", topic=topic,
            what="The weekly production sample was not drawn (the sampler could not be invoked or failed after its retries).")
        _async_failures_to(self.sampler, self.sampler_dead_letters)
        self.sampler_rule = events.Rule(
            self, "WeeklySample", description="Weekly stratified sample of production turns, then its evaluation",
            schedule=events.Schedule.expression(settings.schedule_expression), enabled=settings.enabled,
            targets=[targets.LambdaFunction(self.sampler, dead_letter_queue=self.sampler_dead_letters.queue,
                                            retry_attempts=TARGET_RETRY_ATTEMPTS, max_event_age=TARGET_MAX_EVENT_AGE)])

        # ---- Drift / review / metrics after each sampled run.
        self.watch = EvaluationFunctions._function(self, 
            "Watch", "handlers.watch.handler", memory_mb=1024, timeout=Duration.minutes(5),
            environment={"ALERTS_TOPIC_ARN": topic.topic_arn}, service_suffix="watch",
            statements=[
                _statement("ReadRunWriteWatch", ["s3:GetObject", "s3:PutObject"], [objects("runs/*")]),
                _statement("DriftReferenceAndState", ["s3:GetObject", "s3:PutObject"],
                           [objects(f"{DRIFT_PREFIX}*")]),
                storage.table_statement("ReviewQueue", ["dynamodb:PutItem", "dynamodb:Query"], [REVIEW_PK_PREFIX]),
                iam.PolicyStatement(sid="PublishWatchMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                                    conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}}),
                _statement("AlertDrift", ["sns:Publish"], [topic.topic_arn]),
                _statement("EncryptAlert", ["kms:Decrypt", "kms:GenerateDataKey*"], [monitoring.topic_key.key_arn]),
            ],
        )
        self.watch_dead_letters = DeadLetterQueue(
            self, "WatchDeadLetters", alarm_name=f"{prefix}-dlq-watch", topic=topic,
            what=("A completed run was not watched: no monitor status, drift or review queue for it (the watch "
                  "function could not be invoked or failed after its retries)."))
        _async_failures_to(self.watch, self.watch_dead_letters)
        self.watch_rule = events.Rule(
            self, "OnEvaluationCompleted", event_bus=event_bus,
            description="Drift, monitor status and review queue of sampled production runs",
            event_pattern=events.EventPattern(source=["fmquality"], detail_type=["EvaluationCompleted"]),
            targets=[targets.LambdaFunction(self.watch, dead_letter_queue=self.watch_dead_letters.queue,
                                            retry_attempts=TARGET_RETRY_ATTEMPTS, max_event_age=TARGET_MAX_EVENT_AGE)])

        # ---- Alarms and dashboard row.
        notify = cw_actions.SnsAction(topic)
        self.alarms: list[cloudwatch.Alarm] = []
        for intent in INTENTS:
            for locale in settings.locales:
                alarm = cloudwatch.Alarm(
                    self, f"Drift-{intent}-{locale}", alarm_name=f"{prefix}-drift-{intent}-{locale}",
                    alarm_description=(f"Production quality drift in {intent} x {locale} (CUSUM or KS on the weekly "
                                       "sample; the watch function's own alert names the shift and the worst items)."),
                    metric=watch_metric("DriftFlag", {"Intent": intent, "Locale": locale}),
                    threshold=1, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    evaluation_periods=1, treat_missing_data=cloudwatch.TreatMissingData.IGNORE)
                alarm.add_alarm_action(notify)
                self.alarms.append(alarm)
        self.kappa_alarm = cloudwatch.Alarm(
            self, "JudgeAgreement", alarm_name=f"{prefix}-judge-agreement-below-{settings.kappa_alarm_threshold:g}",
            alarm_description="Cohen's kappa between the judge's pass/fail and reviewers' verdicts fell below the threshold.",
            metric=watch_metric("JudgeAgreementKappa", statistic="Minimum"), threshold=settings.kappa_alarm_threshold,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD, evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.IGNORE)
        self.kappa_alarm.add_alarm_action(notify)
        self.alarms.append(self.kappa_alarm)

        strata = [(i, loc) for i in INTENTS for loc in settings.locales]
        monitoring.dashboard.add_widgets(
            cloudwatch.TextWidget(markdown="## Production watch\nWeekly stratified sample of real turns: monitor status "
                                           "(0 healthy, 1 warning, 2 critical, 3 insufficient data), drift CUSUM "
                                           "(sigmas), judge agreement.", width=24, height=2))
        monitoring.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Monitor status (overall)", left=[watch_metric("MonitorStatus")],
                                   left_y_axis=cloudwatch.YAxisProps(min=0, max=3), width=6),
            cloudwatch.GraphWidget(title="Drift CUSUM per intent x locale (sigmas)",
                                   left=[watch_metric("DriftCusum", {"Intent": i, "Locale": loc}) for i, loc in strata],
                                   left_annotations=[cloudwatch.HorizontalAnnotation(value=4, label="h")], width=12),
            cloudwatch.GraphWidget(title="Judge agreement (kappa)", left=[watch_metric("JudgeAgreementKappa", statistic="Minimum")],
                                   left_y_axis=cloudwatch.YAxisProps(min=-1, max=1), width=6),
        )


def _async_failures_to(function: lambda_.Function, dead_letters: DeadLetterQueue) -> None:
    """An asynchronous invocation that still fails after the function's retries goes to ``dead_letters``
    (the on-failure destination: the event, the error and the function, in one record)."""
    function.configure_async_invoke(on_failure=destinations.SqsDestination(dead_letters.queue),
                                    retry_attempts=FUNCTION_RETRY_ATTEMPTS, max_event_age=FUNCTION_MAX_EVENT_AGE)


def acknowledge_nag_findings(stack, watch: ProductionWatch) -> None:
    """cdk-nag (AwsSolutions) acknowledgments of the watch's resources, each with its reason."""
    from aws_cdk import Acknowledgment, Validations

    def ack(scope: Construct, rule_id: str, reason: str) -> None:
        Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))

    bucket = f"<{BUCKET_ARN_PARAMETER}>"
    transform = f"<{watch.get_logical_id(watch.transform.node.default_child)}.Arn>"
    xray = ("X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource-level permissions, "
            "so their statement needs Resource '*'")
    ack(watch.transform.role, "AwsSolutions-IAM5[Resource::*]", xray)
    ack(watch.sampler.role, "AwsSolutions-IAM5[Resource::*]", xray)
    ack(watch.watch.role, "AwsSolutions-IAM5[Resource::*]",
        xray + "; cloudwatch:PutMetricData has no resource-level permission either and is limited by a "
        "cloudwatch:namespace = MangaAssist/Evaluation condition")
    ack(watch.sampler.role, f"AwsSolutions-IAM5[Resource::{bucket}/{TURNS_PREFIX}*]",
        "The sampler reads the captured turns of the last 7 days; Firehose names the objects under "
        "production/turns/dt=<day>/ at delivery time (read only, s3:GetObject)")
    ack(watch.sampler.role, f"AwsSolutions-IAM5[Resource::{bucket}/{SAMPLES_PREFIX}sample-*]",
        "The sampler writes datasets/production/sample-<date>.jsonl; the date is only known at run time (s3:PutObject)")
    ack(watch.watch.role, f"AwsSolutions-IAM5[Resource::{bucket}/runs/*]",
        "The watch function reads runs/<run_id>/report.json and results.jsonl of the completed run and writes "
        "runs/<run_id>/watch.json; run ids are only known at run time")
    ack(watch.watch.role, f"AwsSolutions-IAM5[Resource::{bucket}/{DRIFT_PREFIX}*]",
        "The watch function reads the approved drift reference and reads/writes the CUSUM state, both under "
        "production/drift/ (reference.json, state.json)")
    ack(watch.watch.role, "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
        "Publishing to the KMS-encrypted alerts topic needs GenerateDataKey* (the variants SNS uses) on that one key")
    ack(watch.delivery_role, f"AwsSolutions-IAM5[Resource::{bucket}/{TURNS_PREFIX}*]",
        "Firehose writes objects under production/turns/dt=<day>/ with names it generates at delivery time")
    ack(watch.delivery_role, f"AwsSolutions-IAM5[Resource::{bucket}/{ERRORS_PREFIX}*]",
        "Firehose writes records that failed processing under production/errors/ with generated names")
    ack(watch.delivery_role, f"AwsSolutions-IAM5[Resource::{transform}:*]",
        "Firehose invokes the redaction function and may address its versions/aliases (ARN suffix :*); that "
        "one function only")
    ack(watch.order_key, "AwsSolutions-SMG4",
        "The order-id HMAC key must stay stable: rotating it changes every stored order token and breaks the "
        "grouping of a shopper's turns; it is rotated by hand, deliberately, with a new capture period")
