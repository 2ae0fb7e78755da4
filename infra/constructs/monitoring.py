"""Monitoring: alarms on the run metrics, the SNS topic they notify, the weekly-review dashboard.

Metrics (namespace MangaAssist/Evaluation). The Aggregate Lambda publishes once per run with
put_metric_data: CompositeScore, DimensionScore_<dimension>, QualityGateResult with the single
dimension Intent; BatchPassRate, BatchAvg_<dimension>, UnscoredCases without dimensions. The scorers
emit JudgeThrottles, JudgeCalls, JudgeCachedVerdicts, JudgeInputTokens, JudgeOutputTokens (EMF,
no dimensions).

Run metrics arrive once per run, not continuously: the alarms treat missing data as "ignore" so a
week without runs keeps the last state instead of flapping to INSUFFICIENT_DATA or OK.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.scorer_functions import METRICS_NAMESPACE, EvaluationFunctions

INTENT_DIMENSION = "Intent"
FIVE_MINUTES = Duration.minutes(5)


def run_metric(name: str, *, intent: str | None = None, period: Duration = Duration.days(1),
               statistic: str = "Average") -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={INTENT_DIMENSION: intent} if intent else None,
        period=period,
        statistic=statistic,
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FmQualityConfig,
        functions: EvaluationFunctions,
        state_machine: sfn.StateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        prefix = f"fmquality-{config.env_name}"
        # The rubric profile's categories and dimensions (mangaassist by default) name the metrics.
        self._profile = config.profile
        stack = Stack.of(self)

        # A customer-managed key: CloudWatch alarms and EventBridge cannot publish to a topic encrypted
        # with the AWS-managed aws/sns key.
        self.topic_key = kms.Key(
            self,
            "AlertsKey",
            enable_key_rotation=True,
            description="Encrypts the fmquality alerts topic",
        )
        for service in ("cloudwatch.amazonaws.com", "events.amazonaws.com"):
            self.topic_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"Publish{service.split('.')[0].capitalize()}",
                    principals=[iam.ServicePrincipal(service)],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
                )
            )
        self.topic = sns.Topic(
            self,
            "AlertsTopic",
            display_name=f"MangaAssist quality gate alerts ({config.env_name})",
            master_key=self.topic_key,
            enforce_ssl=True,
        )
        if config.alert_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alert_email))
        notify = cw_actions.SnsAction(self.topic)

        self.alarms: list[cloudwatch.Alarm] = []

        def add(alarm: cloudwatch.Alarm) -> cloudwatch.Alarm:
            alarm.add_alarm_action(notify)
            self.alarms.append(alarm)
            return alarm

        # ---- Quality per intent x dimension (config; defaults: recommendation relevance < 0.75 for
        # 3 runs, faq factual_accuracy < 0.85 for 1 run).
        for rule in config.dimension_alarms():
            add(
                cloudwatch.Alarm(
                    self,
                    f"Score-{rule.intent}-{rule.dimension}",
                    alarm_name=f"{prefix}-{rule.intent}-{rule.dimension}-below-{rule.threshold:g}",
                    alarm_description=(
                        f"{rule.intent} {rule.dimension} average below {rule.threshold:g} in {rule.runs} "
                        f"consecutive run period(s) of {rule.period_hours} h (periods without a run are ignored)."
                    ),
                    metric=run_metric(
                        f"DimensionScore_{rule.dimension}", intent=rule.intent, period=Duration.hours(rule.period_hours)
                    ),
                    threshold=rule.threshold,
                    comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                    evaluation_periods=rule.runs,
                    datapoints_to_alarm=rule.runs,
                    treat_missing_data=cloudwatch.TreatMissingData.IGNORE,
                )
            )

        def once_per_run(construct_id: str, name: str, description: str, metric: cloudwatch.IMetric,
                         threshold: float, comparison: cloudwatch.ComparisonOperator) -> None:
            # Run metrics arrive once per run: one datapoint decides, and a week without runs is ignored.
            add(cloudwatch.Alarm(self, construct_id, alarm_name=f"{prefix}-{name}", alarm_description=description,
                                 metric=metric, threshold=threshold, comparison_operator=comparison,
                                 evaluation_periods=1, treat_missing_data=cloudwatch.TreatMissingData.IGNORE))

        def on_events(construct_id: str, name: str, description: str, metric: cloudwatch.IMetric,
                      threshold: float = 1) -> None:
            # Event counts over five minutes: no events means all is well.
            add(cloudwatch.Alarm(
                self, construct_id, alarm_name=f"{prefix}-{name}", alarm_description=description, metric=metric,
                threshold=threshold,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1, treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING))

        # ---- Run level.
        once_per_run(
            "BatchPassRate", f"batch-pass-rate-below-{config.alarms.batch_pass_rate_threshold:g}",
            "Share of items that passed in a run fell below the configured rate.",
            run_metric("BatchPassRate", statistic="Minimum"), config.alarms.batch_pass_rate_threshold,
            cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        )
        once_per_run(
            "UnscoredCases", "unscored-cases", "A run left items unscored (judge failures or item errors).",
            run_metric("UnscoredCases", statistic="Maximum"), config.alarms.unscored_cases_threshold,
            cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )

        # ---- Executions: failures (includes QualityGateFailed) and timeouts.
        on_events("ExecutionsFailed", "executions-failed",
                  "An evaluation execution failed (a failed quality gate counts too).",
                  state_machine.metric_failed(period=FIVE_MINUTES, statistic="Sum"))
        on_events("ExecutionsTimedOut", "executions-timed-out",
                  "An evaluation execution hit the state machine's TimeoutSeconds.",
                  state_machine.metric_timed_out(period=FIVE_MINUTES, statistic="Sum"))

        # ---- Lambda errors, one alarm per function (the alarm name says which step broke).
        for role, function in functions.by_role.items():
            on_events(f"Errors-{role}", f"lambda-errors-{role.replace('_', '-')}",
                      f"The {role} function raised errors (after its retries the item is recorded as an error).",
                      function.metric_errors(period=FIVE_MINUTES, statistic="Sum"))

        # ---- Judge throttling (Bedrock quota too small for the Map's concurrency).
        on_events("JudgeThrottles", "judge-throttles",
                  "Bedrock throttled the judge repeatedly; lower max_concurrency or raise the quota.",
                  run_metric("JudgeThrottles", period=FIVE_MINUTES, statistic="Sum"),
                  config.alarms.judge_throttles_threshold)

        self.dashboard = self._dashboard(prefix, state_machine, functions)

    # ---------------------------------------------------------------------------------------------
    def _dashboard(self, prefix: str, state_machine: sfn.StateMachine, functions: EvaluationFunctions) -> cloudwatch.Dashboard:
        day = Duration.days(1)
        intents, dimensions = self._profile.categories, self._profile.dimensions
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{prefix}-quality", default_interval=Duration.days(56))
        dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown="# MangaAssist answer quality\nOne point per run (daily average). Gate: QualityGateResult 1 = pass.",
                width=24,
                height=2,
            )
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Batch average per dimension",
                left=[run_metric(f"BatchAvg_{d}", period=day) for d in dimensions],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Pass rate and unscored items",
                left=[run_metric("BatchPassRate", period=day)],
                right=[run_metric("UnscoredCases", period=day, statistic="Maximum")],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Composite score per intent",
                left=[run_metric("CompositeScore", intent=i, period=day) for i in intents],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Quality gate per intent (1 = pass)",
                left=[run_metric("QualityGateResult", intent=i, period=day, statistic="Minimum") for i in intents],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                width=12,
            ),
        )
        dashboard.add_widgets(
            *[
                cloudwatch.GraphWidget(
                    title=f"{d} per intent",
                    left=[run_metric(f"DimensionScore_{d}", intent=i, period=day) for i in intents],
                    left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                    width=6,
                )
                for d in dimensions
            ]
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Run duration and outcomes",
                left=[state_machine.metric_time(period=day, statistic="Maximum")],
                right=[
                    state_machine.metric_succeeded(period=day, statistic="Sum"),
                    state_machine.metric_failed(period=day, statistic="Sum"),
                    state_machine.metric_timed_out(period=day, statistic="Sum"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Judge calls, throttles and tokens",
                left=[run_metric("JudgeCalls", period=day, statistic="Sum"),
                      run_metric("JudgeCachedVerdicts", period=day, statistic="Sum"),
                      run_metric("JudgeThrottles", period=day, statistic="Sum")],
                right=[run_metric("JudgeInputTokens", period=day, statistic="Sum"),
                       run_metric("JudgeOutputTokens", period=day, statistic="Sum")],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Lambda errors",
                left=[fn.metric_errors(period=Duration.hours(1), statistic="Sum", label=role)
                      for role, fn in functions.by_role.items()],
                width=12,
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=12),
        )
        return dashboard

