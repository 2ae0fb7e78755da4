"""Storage: the single DynamoDB table and the data bucket (with its access-log bucket).

Table keys (single-table design, matching lambdas/fmquality/adapters/dynamodb.py):
  run record       pk=RUN#<run_id>          sk=RUN             gsi1pk=DATASET#<dataset_id>  gsi1sk=<started_at>#<run_id>
  item result      pk=RUN#<run_id>          sk=RESULT#<test_id>  (CONTROL#<test_id>: the control arm)
  baseline         pk=DATASET#<dataset_id>  sk=BASELINE
  cached verdict   pk=VERDICT#<hash>        sk=VERDICT         expires_at (TTL)
  catalog snapshot pk=CATALOG#<version>     sk=LOAD | ITEM#<asin> | META
  latest catalog   pk=CATALOG#LATEST        sk=POINTER         version
  review item      pk=REVIEW#<run_id>       sk=ITEM#<test_id>  (production watch's review queue)
so "every result of a run" is a Query on pk, "the runs of a dataset over time" a Query on gsi1,
"the latest approved baseline" a GetItem and "the items of a catalog snapshot" a Query on pk.

Bucket layout: datasets/... (inputs: golden data, catalogs, rubrics), runs/<run_id>/... (items.json,
rejected.jsonl, rubric.json, targets.json, results.jsonl, report.json, report.html), and the prompt
bundles under ``generation.bundle_prefix`` (default prompt-bundles/). The bucket is versioned: a
"bedrock:s3://<bucket>/<key>?versionId=V" target names one immutable bundle version; noncurrent versions
expire after NONCURRENT_VERSION_DAYS.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.policies import statement

DATASETS_PREFIX = "datasets/"
RUNS_PREFIX = "runs/"
# Under each run: the judge traces of cut scores (fmquality.run.layout.judge_trace_key).
JUDGE_TRACES_DIR = "judge"
# What production watch keeps of shoppers' turns (redacted): the captured turns and the records Firehose
# could not deliver or transform, and the weekly samples drawn from them. Each expires after
# production_watch.retention_days (lifecycle rules below; infra.constructs.production_watch writes there).
CAPTURED_TURNS_PREFIX = "production/turns/"
CAPTURE_ERRORS_PREFIX = "production/errors/"
PRODUCTION_SAMPLES_PREFIX = "datasets/production/sample-"
GSI1 = "gsi1"

# Partition-key prefixes (fmquality.adapters.dynamodb and fmquality.adapters.review_queue write them; infra/
# never imports lambdas/, a test checks they agree). Every function's table grant is limited to the
# prefixes it uses by a dynamodb:LeadingKeys condition (table_statement):
#
#   function          actions                                   partitions   what for
#   Prepare           GetItem                                   RUN#         is the run id taken (register once),
#                                                                            a baseline given by run id
#                     GetItem                                   DATASET#     the dataset's approved baseline
#                     GetItem, Query                            CATALOG#     CATALOG#LATEST pointer, a snapshot's
#                                                                            META, its items ("dynamodb:..." catalog)
#                     PutItem                                   RUN#         registers the run (conditional write)
#   Score<dimension>  GetItem, PutItem                          VERDICT#     the judge's verdict cache
#   and ScoreCase
#   Composite         PutItem                                   RUN#         the item's RESULT#/CONTROL# record
#   Aggregate         GetItem, Query, PutItem, UpdateItem       RUN#         its run and the baseline run's record,
#                                                                            every result (Query on pk), error
#                                                                            records, the run's outcome
#                     PutItem                                   REVIEW#      a failed gate's failing items
#   Watch             PutItem, Query                            REVIEW#      the sampled run's review queue
#   Generate, WatchSampler, RedactTransform: no table access.
#
# No function queries across partitions or reads the gsi1 index (runs of a dataset over time), so none
# keeps a wider grant: every read and write names one partition key. The conditions use ForAllValues,
# which holds vacuously for a request without a partition key (Scan, ListTables, ...): only keyed actions
# (GetItem, PutItem, UpdateItem, Query) are ever granted, never Scan or the batch APIs.
RUN_PK_PREFIX = "RUN#"
DATASET_PK_PREFIX = "DATASET#"
VERDICT_PK_PREFIX = "VERDICT#"
CATALOG_PK_PREFIX = "CATALOG#"
REVIEW_PK_PREFIX = "REVIEW#"


def leading_keys(*prefixes: str) -> dict[str, Any]:
    """The IAM condition that limits DynamoDB item actions to partition keys starting with ``prefixes``."""
    if not prefixes:
        raise ValueError("name at least one partition-key prefix")
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{prefix}*" for prefix in prefixes]}}


TTL_ATTRIBUTE = "expires_at"
# Noncurrent object versions (overwritten datasets, superseded prompt bundles) are kept this long, so a
# run can be repeated against the bundle version a change event or a pipeline named within that window.
NONCURRENT_VERSION_DAYS = 30
# A captured turn's (or sample's) previous version, once the current one has expired (a delete marker
# in this versioned bucket), is removed this many days later: shoppers' data is not kept past the
# retention by the versioning that protects datasets and bundles.
CAPTURED_NONCURRENT_DAYS = 1


def abort_multipart_rule() -> s3.LifecycleRule:
    """Every bucket drops incomplete multipart uploads after a week."""
    return s3.LifecycleRule(id="abort-multipart", abort_incomplete_multipart_upload_after=Duration.days(7))


def private_bucket(scope: Construct, construct_id: str, **props: Any) -> s3.Bucket:
    """A bucket with what every bucket of the project has: no public access, SSE-S3, TLS only, owner-
    enforced objects, retained on stack deletion. ``props``: the rest (versioning, logs, lifecycle).

    SSE-S3, not SSE-KMS: server access logs cannot be delivered to an SSE-KMS bucket.
    """
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
        **props,
    )


class Storage(Construct):
    """The evaluation table, the data bucket and its access-log bucket, and the ARNs grants use."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig) -> None:
        super().__init__(scope, construct_id)
        self.bundle_prefix = config.generation.bundle_prefix
        self.table = self._table()
        self.log_bucket = private_bucket(
            self,
            "AccessLogBucket",
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365)),
                abort_multipart_rule(),
            ],
        )
        self.data_bucket = self._data_bucket(config)

    def _table(self) -> dynamodb.Table:
        """The single table (keys above): on demand, point-in-time recovery, TTL on cached verdicts."""
        table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=TTL_ATTRIBUTE,
            deletion_protection=True,
            # Scores are the history the weekly review and the baselines rely on.
            removal_policy=RemovalPolicy.RETAIN,
        )
        table.add_global_secondary_index(
            index_name=GSI1,
            partition_key=dynamodb.Attribute(name="gsi1pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="gsi1sk", type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        return table

    @staticmethod
    def captured_data_rules(retention_days: int) -> list[s3.LifecycleRule]:
        """Captured turns, capture errors and weekly samples expire ``retention_days`` after they were
        written (current versions), their previous versions a day after that."""
        return [
            s3.LifecycleRule(id=f"expire-{name}", prefix=prefix, expiration=Duration.days(retention_days),
                             noncurrent_version_expiration=Duration.days(CAPTURED_NONCURRENT_DAYS))
            for name, prefix in (("captured-turns", CAPTURED_TURNS_PREFIX),
                                 ("capture-errors", CAPTURE_ERRORS_PREFIX),
                                 ("production-samples", PRODUCTION_SAMPLES_PREFIX))
        ]

    def _data_bucket(self, config: FmQualityConfig) -> s3.Bucket:
        """datasets/, runs/ and the prompt bundles: versioned, logged, run artifacts expire, and so do
        the captured turns and samples (production_watch.retention_days)."""
        return private_bucket(
            self,
            "DataBucket",
            versioned=True,
            server_access_logs_bucket=self.log_bucket,
            server_access_logs_prefix="data-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-run-artifacts",
                    prefix=RUNS_PREFIX,
                    expiration=Duration.days(config.run_artifacts_retention_days),
                ),
                # Datasets and prompt bundles are edited in place; keep a month of history for "what did we
                # score last week" and for re-running a bundle version a change event named.
                s3.LifecycleRule(id="expire-old-versions",
                                 noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS)),
                *self.captured_data_rules(config.production_watch.retention_days),
                abort_multipart_rule(),
            ],
        )

    # ARNs the IAM statements use: grants stay inside the prefix a function actually touches.
    def datasets_arn(self) -> str:
        return self.data_bucket.arn_for_objects(f"{DATASETS_PREFIX}*")

    def runs_arn(self) -> str:
        return self.data_bucket.arn_for_objects(f"{RUNS_PREFIX}*")

    def judge_traces_arn(self) -> str:
        """runs/<run_id>/judge/...: the scores a scorer stored whole because the state's copy was cut."""
        return self.data_bucket.arn_for_objects(f"{RUNS_PREFIX}*/{JUDGE_TRACES_DIR}/*")

    def bundles_arn(self) -> str:
        return self.data_bucket.arn_for_objects(f"{self.bundle_prefix}*")

    def table_statement(self, sid: str, actions: list[str], prefixes: list[str]) -> iam.PolicyStatement:
        """``actions`` on the table's items whose partition key starts with one of ``prefixes`` (the base
        table only: no index)."""
        return statement(sid, actions, [self.table.table_arn], conditions=leading_keys(*prefixes))
