"""Monitoring: alarms on the run metrics, the SNS topic they notify, the weekly-review dashboard.

Metrics (namespace MangaAssist/Evaluation, infra.constructs.metrics). The Aggregate Lambda publishes
once per run with put_metric_data: CompositeScore, DimensionScore_<dimension>, QualityGateResult with
the single dimension Intent; BatchPassRate, BatchAvg_<dimension>, UnscoredCases without dimensions. The
scorers emit JudgeThrottles, JudgeCalls, JudgeCachedVerdicts, JudgeInputTokens, JudgeOutputTokens (EMF,
no dimensions).

To add an alarm: a line in the method of its group below (``_quality_alarms``, ``_run_alarms``,
``_execution_alarms``, ``_function_alarms``, ``_judge_alarms``), built by ``self.book``
(infra.constructs.alarms: run alarms ignore missing data, event alarms treat it as fine); it notifies
the topic and shows in the dashboard's alarm widget. A threshold the deployment should choose goes in
``AlarmConfig`` (infra/config.py). The dashboard has one method per row.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.alarms import AlarmBook
from infra.constructs.evaluation_functions import EvaluationFunctions
from infra.constructs.metrics import per_intent, project_metric

FIVE_MINUTES = Duration.minutes(5)
ONE_DAY = Duration.days(1)
LESS_THAN = cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD


def score_graph(title: str, metrics: list[cloudwatch.IMetric], width: int) -> cloudwatch.GraphWidget:
    """A graph of scores or rates on a 0..1 axis."""
    return cloudwatch.GraphWidget(title=title, left=metrics, left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                                  width=width)


class Monitoring(Construct):
    """The alerts topic (and its key), every alarm of the evaluation, the dashboard."""

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
        self._config = config
        self._prefix = config.name_prefix
        # The rubric profile's categories and dimensions (mangaassist by default) name the metrics.
        self._profile = config.profile
        self.topic_key, self.topic = self._alerts_topic()
        self.book = AlarmBook(self, self.topic)
        self.alarms = self.book.alarms
        self._quality_alarms()
        self._run_alarms()
        self._execution_alarms(state_machine)
        self._function_alarms(functions)
        self._judge_alarms()
        self.dashboard = self._dashboard(state_machine, functions)

    def _alerts_topic(self) -> tuple[kms.Key, sns.Topic]:
        """The topic every alarm and alert rule notifies, encrypted with a key of its own.

        A customer-managed key: CloudWatch alarms and EventBridge cannot publish to a topic encrypted
        with the AWS-managed aws/sns key.
        """
        key = kms.Key(self, "AlertsKey", enable_key_rotation=True, description="Encrypts the fmquality alerts topic")
        for service in ("cloudwatch.amazonaws.com", "events.amazonaws.com"):
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"Publish{service.split('.')[0].capitalize()}",
                    principals=[iam.ServicePrincipal(service)],
                    actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                    resources=["*"],
                    conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
                )
            )
        topic = sns.Topic(
            self,
            "AlertsTopic",
            display_name=f"MangaAssist quality gate alerts ({self._config.env_name})",
            master_key=key,
            enforce_ssl=True,
        )
        if self._config.alert_email:
            topic.add_subscription(subscriptions.EmailSubscription(self._config.alert_email))
        return key, topic

    # ---- alarms, one method per group ------------------------------------------------------------
    def _quality_alarms(self) -> None:
        """Quality per intent x dimension (config; defaults: recommendation relevance < 0.75 for 3 runs,
        faq factual_accuracy < 0.85 for 1 run, every other pair below the rubric's intent threshold)."""
        for rule in self._config.dimension_alarms():
            self.book.run_alarm(
                f"Score-{rule.intent}-{rule.dimension}",
                alarm_name=f"{self._prefix}-{rule.intent}-{rule.dimension}-below-{rule.threshold:g}",
                description=(
                    f"{rule.intent} {rule.dimension} average below {rule.threshold:g} in {rule.runs} "
                    f"consecutive run period(s) of {rule.period_hours} h (periods without a run are ignored)."
                ),
                metric=project_metric(f"DimensionScore_{rule.dimension}", dimensions=per_intent(rule.intent),
                                      period=Duration.hours(rule.period_hours)),
                threshold=rule.threshold,
                comparison=LESS_THAN,
                runs=rule.runs,
            )

    def _run_alarms(self) -> None:
        """Run level: the share of passing items, and items left unscored."""
        alarms = self._config.alarms
        self.book.run_alarm(
            "BatchPassRate",
            alarm_name=f"{self._prefix}-batch-pass-rate-below-{alarms.batch_pass_rate_threshold:g}",
            description="Share of items that passed in a run fell below the configured rate.",
            metric=project_metric("BatchPassRate", statistic="Minimum"),
            threshold=alarms.batch_pass_rate_threshold,
            comparison=LESS_THAN,
        )
        self.book.run_alarm(
            "UnscoredCases",
            alarm_name=f"{self._prefix}-unscored-cases",
            description="A run left items unscored (judge failures or item errors).",
            metric=project_metric("UnscoredCases", statistic="Maximum"),
            threshold=alarms.unscored_cases_threshold,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )

    def _execution_alarms(self, state_machine: sfn.StateMachine) -> None:
        """Executions: failures (includes QualityGateFailed) and timeouts."""
        self.book.event_alarm(
            "ExecutionsFailed",
            alarm_name=f"{self._prefix}-executions-failed",
            description="An evaluation execution failed (a failed quality gate counts too).",
            metric=state_machine.metric_failed(period=FIVE_MINUTES, statistic="Sum"),
        )
        self.book.event_alarm(
            "ExecutionsTimedOut",
            alarm_name=f"{self._prefix}-executions-timed-out",
            description="An evaluation execution hit the state machine's TimeoutSeconds.",
            metric=state_machine.metric_timed_out(period=FIVE_MINUTES, statistic="Sum"),
        )

    def _function_alarms(self, functions: EvaluationFunctions) -> None:
        """Lambda errors, one alarm per function (the alarm name says which step broke)."""
        for role, function in functions.by_role.items():
            self.book.event_alarm(
                f"Errors-{role}",
                alarm_name=f"{self._prefix}-lambda-errors-{role.replace('_', '-')}",
                description=f"The {role} function raised errors (after its retries the item is recorded as an error).",
                metric=function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            )

    def _judge_alarms(self) -> None:
        """Judge throttling (Bedrock quota too small for the Map's concurrency)."""
        self.book.event_alarm(
            "JudgeThrottles",
            alarm_name=f"{self._prefix}-judge-throttles",
            description="Bedrock throttled the judge repeatedly; lower max_concurrency or raise the quota.",
            metric=project_metric("JudgeThrottles", period=FIVE_MINUTES, statistic="Sum"),
            threshold=self._config.alarms.judge_throttles_threshold,
        )

    # ---- dashboard, one method per row -----------------------------------------------------------
    def _dashboard(self, state_machine: sfn.StateMachine, functions: EvaluationFunctions) -> cloudwatch.Dashboard:
        """The weekly-review dashboard: one point per run; the production watch adds its own rows."""
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{self._prefix}-quality",
                                         default_interval=Duration.days(56))
        dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown="# MangaAssist answer quality\nOne point per run (daily average). Gate: QualityGateResult 1 = pass.",
                width=24,
                height=2,
            )
        )
        dashboard.add_widgets(*self._batch_row())
        dashboard.add_widgets(*self._intent_row())
        dashboard.add_widgets(*self._dimension_row())
        dashboard.add_widgets(*self._operations_row(state_machine))
        dashboard.add_widgets(*self._errors_row(functions))
        return dashboard

    def _batch_row(self) -> list[cloudwatch.IWidget]:
        """Batch averages per dimension; pass rate and unscored items."""
        return [
            score_graph("Batch average per dimension",
                        [project_metric(f"BatchAvg_{d}") for d in self._profile.dimensions], width=12),
            cloudwatch.GraphWidget(
                title="Pass rate and unscored items",
                left=[project_metric("BatchPassRate")],
                right=[project_metric("UnscoredCases", statistic="Maximum")],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1),
                width=12,
            ),
        ]

    def _intent_row(self) -> list[cloudwatch.IWidget]:
        """Composite score and gate result per intent."""
        intents = self._profile.categories
        return [
            score_graph("Composite score per intent",
                        [project_metric("CompositeScore", dimensions=per_intent(i)) for i in intents], width=12),
            score_graph("Quality gate per intent (1 = pass)",
                        [project_metric("QualityGateResult", dimensions=per_intent(i), statistic="Minimum")
                         for i in intents], width=12),
        ]

    def _dimension_row(self) -> list[cloudwatch.IWidget]:
        """Each dimension's score per intent."""
        return [
            score_graph(f"{d} per intent",
                        [project_metric(f"DimensionScore_{d}", dimensions=per_intent(i))
                         for i in self._profile.categories], width=6)
            for d in self._profile.dimensions
        ]

    @staticmethod
    def _operations_row(state_machine: sfn.StateMachine) -> list[cloudwatch.IWidget]:
        """Run durations and outcomes; judge calls, throttles and tokens."""
        return [
            cloudwatch.GraphWidget(
                title="Run duration and outcomes",
                left=[state_machine.metric_time(period=ONE_DAY, statistic="Maximum")],
                right=[
                    state_machine.metric_succeeded(period=ONE_DAY, statistic="Sum"),
                    state_machine.metric_failed(period=ONE_DAY, statistic="Sum"),
                    state_machine.metric_timed_out(period=ONE_DAY, statistic="Sum"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Judge calls, throttles and tokens",
                left=[project_metric(name, statistic="Sum")
                      for name in ("JudgeCalls", "JudgeCachedVerdicts", "JudgeThrottles")],
                right=[project_metric(name, statistic="Sum") for name in ("JudgeInputTokens", "JudgeOutputTokens")],
                width=12,
            ),
        ]

    def _errors_row(self, functions: EvaluationFunctions) -> list[cloudwatch.IWidget]:
        """Lambda errors per function; the status of every alarm above."""
        return [
            cloudwatch.GraphWidget(
                title="Lambda errors",
                left=[fn.metric_errors(period=Duration.hours(1), statistic="Sum", label=role)
                      for role, fn in functions.by_role.items()],
                width=12,
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=12),
        ]
