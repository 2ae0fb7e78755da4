"""Triggers, all through EventBridge.

* ``ProjectEventBus``: the project's custom bus. Release tooling puts change events on it; the
  Aggregate Lambda puts "EvaluationCompleted" (source "fmquality") on it.
* ``Triggers``:
  - a weekly golden run (schedule.enabled, off by default: the weekly run is the production sample,
    see production_watch), answered by the production
    target (``"target": "ssm:<production parameter>"``);
  - one rule per change event (PromptVersionPublished, ModelVersionChanged, KnowledgeBaseRefreshed,
    source from config, default "mangaassist.release") that starts a run of the golden dataset with
    the event's ``detail`` as the candidate and a ``target``/``control`` built from it (below);
  - a rule on the state machine's "Step Functions Execution Status Change" (FAILED, TIMED_OUT,
    ABORTED) that notifies the alerts topic.
Every target has a retry policy (TARGET_RETRY_ATTEMPTS within TARGET_MAX_EVENT_AGE) and a dead-letter
queue with an alarm (infra.constructs.dead_letters): the rules that start runs share one, the alert rule
has its own.

What each change event's ``detail`` must carry, and what the run answers with (``<production>`` is
``generation.production_target_parameter``, default /mangaassist/<env>/production-target):

  PromptVersionPublished  detail.bundle_key (a key under ``generation.bundle_prefix`` of the data
                          bucket, e.g. "prompt-bundles/chatbot.yaml") and detail.bundle_version (the S3
                          VersionId of the uploaded bundle). target: "bedrock:s3://<data bucket>/
                          <bundle_key>?versionId=<bundle_version>"; control: "ssm:<production>".
  ModelVersionChanged     detail.model_id (a model or inference-profile id listed in
                          ``generation.bedrock_generation_model_ids``). target: {"spec": "ssm:<production>",
                          "model_id": <model_id>} (the production prompt on the new model); control:
                          "ssm:<production>".
  KnowledgeBaseRefreshed  nothing required (e.g. knowledge_base_id, ingestion_job_id for the record).
                          target: "ssm:<production>"; no control: both arms would read the same refreshed
                          knowledge base, so the comparison is with the baseline run. Only the
                          cases tagged policy or retrieval run (KB_REFRESH_FILTER): a refreshed knowledge
                          base changes the answers grounded in it, not the others.
Release tooling must send these fields: without them the target is malformed and the run fails (in
Prepare) or EventBridge cannot deliver the input (its retries, then the rule's failure metrics).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import TABLE_CATALOG_INPUT, FmQualityConfig
from infra.constructs.dead_letters import DeadLetterQueue
from infra.constructs.storage import Storage

# The subset the knowledge-base refresh rule scores: the cases about policies and retrieval. Equal to
# fmquality.run.subsets.KB_REFRESH_FILTER (infra/ never imports lambdas/; a test checks they are equal).
KB_REFRESH_FILTER: dict[str, list[str]] = {"tags": ["policy", "retrieval"]}

RELEASE_DETAIL_TYPES: tuple[str, ...] = ("PromptVersionPublished", "ModelVersionChanged", "KnowledgeBaseRefreshed")
FAILED_STATUSES: tuple[str, ...] = ("FAILED", "TIMED_OUT", "ABORTED")
# EventBridge's retry policy for every target here (its default is 185 attempts over 24 hours): a run or
# an alert that cannot be delivered within two hours goes to the dead-letter queue and raises its alarm.
TARGET_RETRY_ATTEMPTS = 3
TARGET_MAX_EVENT_AGE = Duration.hours(2)


class ProjectEventBus(Construct):
    """The project's custom bus: change events from release tooling, EvaluationCompleted from Aggregate."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=f"mangaassist-quality-{config.env_name}")


def release_event_arms(detail_type: str, storage: Storage, production_spec: str) -> dict[str, Any]:
    """The ``target`` (and ``control``) of the run a change event starts, from the event's detail."""
    detail = events.EventField.from_path
    if detail_type == "PromptVersionPublished":
        bundle = (f"bedrock:s3://{storage.data_bucket.bucket_name}/{detail('$.detail.bundle_key')}"
                  f"?versionId={detail('$.detail.bundle_version')}")
        return {"target": bundle, "control": production_spec}
    if detail_type == "ModelVersionChanged":
        return {"target": {"spec": production_spec, "model_id": detail("$.detail.model_id")},
                "control": production_spec}
    if detail_type == "KnowledgeBaseRefreshed":
        return {"target": production_spec, "filter": {k: list(v) for k, v in KB_REFRESH_FILTER.items()}}
    raise ValueError(f"no target rule for {detail_type}")


def s3_uri(storage: Storage, key: str) -> str:
    return f"s3://{storage.data_bucket.bucket_name}/{key}"


def catalog_input(config: FmQualityConfig, storage: Storage) -> str | None:
    """The execution input's "catalog" of the runs the deployment starts (schedule, change events, pipeline)."""
    if config.catalog_source == "table":
        return TABLE_CATALOG_INPUT
    return s3_uri(storage, config.catalog_key) if config.catalog_key else None


class Triggers(Construct):
    """The rules that start runs (schedule, change events) and the alert on executions that end badly.

    To add a trigger: a method that builds its rule with a ``self._start_run`` target (retries and the
    start-run dead-letter queue come with it), called from ``__init__``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FmQualityConfig,
        storage: Storage,
        state_machine: sfn.IStateMachine,
        event_bus: events.IEventBus,
        alerts_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._storage = storage
        self._state_machine = state_machine
        catalog_uri = catalog_input(config, storage)
        self._catalog = {"catalog": catalog_uri} if catalog_uri else {}
        prefix = config.name_prefix
        # Events that could not start a run (schedule and change events; the message names its rule).
        self.start_run_dead_letters = DeadLetterQueue(
            self, "StartRunDeadLetters", alarm_name=f"{prefix}-dlq-start-run", topic=alerts_topic,
            what="EventBridge could not start an evaluation run (weekly schedule or a change event).")
        # Alerts about failed executions that could not be published.
        self.alert_dead_letters = DeadLetterQueue(
            self, "ExecutionAlertDeadLetters", alarm_name=f"{prefix}-dlq-execution-alerts", topic=alerts_topic,
            what="EventBridge could not publish a failed-execution alert to the alerts topic.")
        self.schedule_rule = self._scheduled_run()
        self.release_rules: dict[str, events.Rule] = {
            detail_type: self._release_rule(detail_type, event_bus) for detail_type in RELEASE_DETAIL_TYPES
        }
        self.status_rule = self._execution_alerts(alerts_topic)

    def _start_run(self, run_input: dict[str, Any]) -> targets.SfnStateMachine:
        """A rule target that starts the evaluation with ``run_input``: retried, then dead-lettered."""
        return targets.SfnStateMachine(
            self._state_machine,
            input=events.RuleTargetInput.from_object(run_input),
            **self.start_run_dead_letters.target_options(retry_attempts=TARGET_RETRY_ATTEMPTS,
                                                         max_event_age=TARGET_MAX_EVENT_AGE),
        )

    def _scheduled_run(self) -> events.Rule:
        """Weekly scored run of the configured dataset (schedules live on the default bus), answered by
        what production answers today."""
        config = self._config
        return events.Rule(
            self,
            "ScheduledRun",
            description="Weekly scored run of the configured dataset",
            schedule=events.Schedule.expression(config.schedule.expression),
            enabled=config.schedule.enabled,
            targets=[self._start_run({
                "trigger": "schedule",
                "dataset": s3_uri(self._storage, config.scheduled_dataset_key),
                **self._catalog,
                "baseline": "auto",
                # What production answers today.
                "target": config.production_target_spec,
            })],
        )

    def _release_rule(self, detail_type: str, event_bus: events.IEventBus) -> events.Rule:
        """A change event on the project bus: run the golden dataset with the event's detail as the
        candidate, answered as ``release_event_arms`` says."""
        config = self._config
        return events.Rule(
            self,
            f"On{detail_type}",
            description=f"Start a quality-gate run when {detail_type} is published",
            event_bus=event_bus,
            event_pattern=events.EventPattern(source=[config.release_event_source], detail_type=[detail_type]),
            targets=[self._start_run({
                "trigger": f"event:{detail_type}",
                "dataset": s3_uri(self._storage, config.golden_dataset_key),
                **self._catalog,
                "baseline": "auto",
                "candidate": events.EventField.from_path("$.detail"),
                "source_event_id": events.EventField.event_id,
                **release_event_arms(detail_type, self._storage, config.production_target_spec),
            })],
        )

    def _execution_alerts(self, alerts_topic: sns.ITopic) -> events.Rule:
        """Executions that end badly (FAILED_STATUSES) notify the alerts topic with one line."""
        field = events.EventField.from_path
        return events.Rule(
            self,
            "ExecutionStatusChange",
            description="Notify when an evaluation execution fails, times out or is aborted",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"status": list(FAILED_STATUSES), "stateMachineArn": [self._state_machine.state_machine_arn]},
            ),
            targets=[
                targets.SnsTopic(
                    alerts_topic,
                    message=events.RuleTargetInput.from_text(
                        f"Quality-gate execution {field('$.detail.name')} ended {field('$.detail.status')}: "
                        f"{field('$.detail.error')} ({field('$.detail.cause')}). "
                        f"Execution: {field('$.detail.executionArn')}"
                    ),
                    **self.alert_dead_letters.target_options(retry_attempts=TARGET_RETRY_ATTEMPTS,
                                                             max_event_age=TARGET_MAX_EVENT_AGE),
                )
            ],
        )
