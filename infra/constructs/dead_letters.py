"""Dead-letter queues for what is delivered asynchronously, each with an alarm to the alerts topic.

What lands where (each queue holds messages for 14 days, SQS-managed encryption, TLS only):
  * an EventBridge rule target that could not be delivered after its retry policy (or at once, on an
    error no retry fixes: a missing permission, a deleted target). The message is the event (or the
    rule's input) with attributes RULE_ARN, TARGET_ARN, ERROR_CODE and ERROR_MESSAGE;
  * an asynchronous Lambda invocation (EventBridge invokes functions asynchronously) that failed after
    the function's own retries: the on-failure destination's record (requestContext with the function
    and "condition", requestPayload: the event, responsePayload: the error).

An alarm on ApproximateNumberOfMessagesVisible > 0 notifies the alerts topic: a message here is a run
that never started, an alert never sent, a sample never drawn or a sampled run never watched. Read the
messages, fix the cause, start the work again by hand (``fmquality start``, re-send the event, invoke the
function with the requestPayload), then purge the queue; the alarm returns to OK when it is empty.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.alarms import AlarmBook
from infra.constructs.nag import acknowledge

RETENTION = Duration.days(14)  # SQS's maximum: time to notice, fix and replay
ALARM_PERIOD = Duration.minutes(5)  # SQS publishes queue metrics every 5 minutes


class DeadLetterQueue(Construct):
    """One SQS dead-letter queue and its alarm."""

    def __init__(self, scope: Construct, construct_id: str, *, alarm_name: str, what: str, topic: sns.ITopic) -> None:
        """``what``: the sentence the alarm description starts with, naming what failed to be delivered."""
        super().__init__(scope, construct_id)
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
        )
        # An empty, idle queue publishes no datapoints: an event alarm (missing data is not breaching).
        self.alarm = AlarmBook(self, topic).event_alarm(
            "Alarm",
            alarm_name=alarm_name,
            description=(
                f"{what} Its dead-letter queue holds the undelivered event or failed invocation (14 days): read "
                "it, fix the cause, replay by hand, then purge the queue."
            ),
            metric=self.queue.metric_approximate_number_of_messages_visible(period=ALARM_PERIOD, statistic="Maximum"),
            threshold=0,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )
        acknowledge(self.queue, "AwsSolutions-SQS3",
                    "This queue is itself a dead-letter queue (of an EventBridge rule target or a Lambda on-failure "
                    "destination, which cdk-nag does not recognize as DLQ users); nothing consumes it automatically, "
                    "so a DLQ of its own would only move the undelivered messages one step further")

    def target_options(self, *, retry_attempts: int, max_event_age: Duration) -> dict[str, Any]:
        """The keyword arguments of an EventBridge rule target (aws_events_targets) that delivers through
        this queue: its retry policy, then this queue for what is still undelivered."""
        return {"dead_letter_queue": self.queue, "retry_attempts": retry_attempts, "max_event_age": max_event_age}
