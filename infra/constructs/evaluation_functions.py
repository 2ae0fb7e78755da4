"""The evaluation's Lambda functions: Prepare, Generate, one scorer per dimension, ScoreCase (every
dimension with one combined judge call, for runs whose judge mode is combined), Composite, Aggregate.

One method per function says what it is for and builds it: memory, timeout, its environment and the
IAM statements of its role, each with a sid saying what it is for. Every function is built by
``FunctionKit.function`` (infra.constructs.function_kit: code asset, layers, own log group and role).
Handlers and fixed environments come from the shared manifest statemachines/evaluation.functions.json
(infra.asl); the table's partitions per function are listed in infra.constructs.storage.

To add a function: a role in the manifest (its handler and ASL placeholder), a method here, an entry in
``by_role`` (the state machine may invoke it and Monitoring gives it an error alarm), and its wildcard
acknowledgments in ``_acknowledge_nag_findings``.
"""

from __future__ import annotations

from aws_cdk import Annotations, Duration, Stack, Token
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.asl import function_environment, function_handlers
from infra.bedrock_models import model_foundation_id, model_foundation_regions, model_is_inference_profile
from infra.config import FmQualityConfig
from infra.constructs import nag
from infra.constructs.function_kit import FunctionKit, dependency_layers, lambda_code_asset
from infra.constructs.metrics import METRICS_NAMESPACE, publish_metrics_statement
from infra.constructs.policies import statement
from infra.constructs.production_target import ProductionTarget
from infra.constructs.storage import (
    CATALOG_PK_PREFIX,
    DATASET_PK_PREFIX,
    REVIEW_PK_PREFIX,
    RUN_PK_PREFIX,
    VERDICT_PK_PREFIX,
    Storage,
)

# Where the capture stream writes turns (fmquality.production.capture.TURNS_PREFIX): a replay reads them.
CAPTURED_TURNS_PREFIX = "production/turns/"


def scorer_function_name(dimension: str) -> str:
    """The construct name of a dimension's scorer: factual_accuracy -> ScoreFactualAccuracy."""
    return "Score" + "".join(part.capitalize() for part in dimension.replace("-", "_").split("_"))


class EvaluationFunctions(Construct):
    """All the evaluation's functions, their log groups and least-privilege roles."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FmQualityConfig,
        storage: Storage,
        event_bus: events.IEventBus,
        production_target: ProductionTarget,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._storage = storage
        # One scorer function per dimension of the rubric profile (datasets/profiles/<name>.yaml);
        # handlers and environments come from the shared manifest, scorer roles derived per dimension.
        self.dimensions: tuple[str, ...] = config.profile.dimensions
        self._handlers = function_handlers(self.dimensions)
        self._environments = function_environment(self.dimensions)
        self.kit = FunctionKit(
            code=lambda_code_asset(),
            layers=dependency_layers(self, config),
            environment=self._common_environment(event_bus),
            env_name=config.env_name,
            log_retention_days=config.log_retention_days,
        )

        self.prepare = self._prepare(production_target)
        self.generate = self._generate(production_target)
        judge_statements = self._judge_statements()
        self.scorers: dict[str, lambda_.Function] = {
            dimension: self._scorer(dimension, judge_statements) for dimension in self.dimensions
        }
        self.score_case = self._score_case(judge_statements)
        self.composite = self._composite()
        self.aggregate = self._aggregate(event_bus)
        self.by_role: dict[str, lambda_.Function] = {
            "prepare": self.prepare,
            "generate": self.generate,
            **self.scorers,
            "score_case": self.score_case,
            "composite": self.composite,
            "aggregate": self.aggregate,
        }
        self._acknowledge_nag_findings()

    def _common_environment(self, event_bus: events.IEventBus) -> dict[str, str]:
        """What every function reads: where the table, bucket and bus are, the judge, metrics and logs."""
        config, storage = self._config, self._storage
        return {
            "TABLE_NAME": storage.table.table_name,
            "BUCKET_NAME": storage.data_bucket.bucket_name,
            "EVENT_BUS_NAME": event_bus.event_bus_name,
            "JUDGE": config.judge,
            "JUDGE_MODEL_ID": config.judge_model_id,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "LOG_LEVEL": config.log_level,
        }

    # ---- the functions, in the order a run calls them --------------------------------------------
    def _prepare(self, production_target: ProductionTarget) -> lambda_.Function:
        """Prepare: reads the inputs under datasets/, writes runs/<run_id>/, registers the run."""
        config, storage = self._config, self._storage
        return self.kit.function(
            self,
            "Prepare",
            self._handlers["prepare"],
            memory_mb=1024,
            timeout=Duration.minutes(5),
            environment={
                # The Map's default per judge mode (judge_quota / Little's law, infra.config): Prepare
                # picks the run's.
                "DEFAULT_MAX_CONCURRENCY": str(config.max_concurrency_for("per_dimension")),
                "DEFAULT_COMBINED_MAX_CONCURRENCY": str(config.max_concurrency_for("combined")),
                "DEFAULT_TOLERATED_FAILURE_PERCENTAGE": str(config.tolerated_failure_percentage),
                "DEFAULT_TARGET_MAX_CONCURRENCY": str(config.generation.max_concurrency),
                "PRODUCTION_TARGET_PARAMETER": production_target.parameter_name,
                "ALLOWED_TARGET_KINDS": ",".join(config.generation.allowed_target_kinds),
                "REPLAY_BUDGET_USD": str(config.replay_budget_usd),
            },
            statements=[
                # "ssm:<parameter>" specs are resolved once per run, here.
                statement("ReadProductionTarget", ["ssm:GetParameter"], [production_target.parameter_arn]),
                statement("ReadInputs", ["s3:GetObject"], [storage.datasets_arn()]),
                statement("WriteRunFiles", ["s3:PutObject"], [storage.runs_arn()]),
                # Table partitions per function: storage.py. Registers the run, once (conditional write).
                storage.table_statement("RegisterRun", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
                # Its own run id (taken?), a baseline run given by id, the dataset's approved baseline, the
                # CATALOG#LATEST pointer and a snapshot's META.
                storage.table_statement("ReadRunsBaselinesCatalogMeta", ["dynamodb:GetItem"],
                                        [RUN_PK_PREFIX, DATASET_PK_PREFIX, CATALOG_PK_PREFIX]),
                # "catalog": "dynamodb:..." reads a snapshot's items: Query on catalog partitions only.
                storage.table_statement("ReadCatalogSnapshot", ["dynamodb:Query"], [CATALOG_PK_PREFIX]),
                *self._judge_is_not_generator_statements(),
                # A replay reads the captured turns of its window's days (run.replay), read only.
                statement("ListCapturedTurns", ["s3:ListBucket"], [storage.data_bucket.bucket_arn],
                          conditions={"StringLike": {"s3:prefix": [f"{CAPTURED_TURNS_PREFIX}*"]}}),
                statement("ReadCapturedTurns", ["s3:GetObject"],
                          [storage.data_bucket.arn_for_objects(f"{CAPTURED_TURNS_PREFIX}*")]),
            ],
        )

    def _judge_is_not_generator_statements(self) -> list[iam.PolicyStatement]:
        """With a Bedrock judge, Prepare reads a bedrock target's bundle for its model id: a judge may not
        grade its own model's answers (run.targets.check_judge_is_not_generator). Read only."""
        if self._config.judge != "bedrock":
            return []
        statements = [statement("ReadBundleModelIds", ["s3:GetObject", "s3:GetObjectVersion"],
                                [self._storage.bundles_arn()])]
        if self._config.generation.prompt_arns:
            statements.append(statement("ReadPromptModelIds", ["bedrock:GetPrompt"],
                                        prompt_resources(self._config.generation.prompt_arns)))
        return statements

    def _generate(self, production_target: ProductionTarget) -> lambda_.Function:
        """Generate: answers an item from the run's target (and control); each grant is an allow-list
        from config.generation, so a target outside it fails with AccessDenied (an error record)."""
        generation = self._config.generation
        return self.kit.function(
            self,
            "Generate",
            self._handlers["generate"],
            memory_mb=512,
            # Above a target's worst case with the spec's defaults (4 attempts x 30 s + backoff) and the
            # Bedrock client's own retries, like the scorers.
            timeout=Duration.minutes(6),
            environment={
                **self._environments["generate"],
                "PRODUCTION_TARGET_PARAMETER": production_target.parameter_name,
                "BUNDLE_PREFIX": generation.bundle_prefix,
                "ALLOWED_TARGET_KINDS": ",".join(generation.allowed_target_kinds),
                # The models InvokeGenerationModels grants, first the default: recorded on the function so
                # `fmquality doctor` can check them in the deployed region (nothing in the handler reads it).
                "GENERATION_MODEL_IDS": ",".join(generation.bedrock_generation_model_ids),
            },
            statements=self._generate_statements(production_target),
        )

    def _scorer(self, dimension: str, judge_statements: list[iam.PolicyStatement]) -> lambda_.Function:
        """One scorer per dimension: the same handler, DIMENSION (in the manifest's environment) selects
        the scorer."""
        storage = self._storage
        return self.kit.function(
            self,
            scorer_function_name(dimension),
            self._handlers[dimension],
            # The judge call dominates; memory buys CPU for the Japanese segmentation checks.
            memory_mb=512,
            # Above the Bedrock judge's worst case (5 attempts x 60 s read timeout + backoff), so
            # the judge's own retries finish and report before Lambda would cut them off.
            timeout=Duration.minutes(6),
            environment=self._environments[dimension],
            service_suffix=f"score-{dimension.replace('_', '-')}",
            statements=[
                statement("ReadRunRubric", ["s3:GetObject"], [storage.runs_arn()]),
                # A score cut for the state is stored whole first (run.layout.score_for_state): write only.
                statement("WriteJudgeTraces", ["s3:PutObject"], [storage.judge_traces_arn()]),
                storage.table_statement("VerdictCache", ["dynamodb:GetItem", "dynamodb:PutItem"],
                                        [VERDICT_PK_PREFIX]),
                *judge_statements,
            ],
        )

    def _score_case(self, judge_statements: list[iam.PolicyStatement]) -> lambda_.Function:
        """ScoreCase: every dimension of an item, ONE combined judge call, then the item's result. The
        scorers' grants (the run's rubric, the verdict cache, the judge model) and Composite's (the item
        result): it does their work in one invocation."""
        storage = self._storage
        return self.kit.function(
            self,
            "ScoreCase",
            self._handlers["score_case"],
            # Every dimension's checks in one invocation: twice a scorer's memory, for the CPU.
            memory_mb=1024,
            # The scorers' bound: the combined call has the same client, retries and read timeout.
            timeout=Duration.minutes(6),
            environment=self._environments["score_case"],
            service_suffix="score-case",
            statements=[
                statement("ReadRunRubric", ["s3:GetObject"], [storage.runs_arn()]),
                # A score cut for the state is stored whole first (run.layout.score_for_state): write only.
                statement("WriteJudgeTraces", ["s3:PutObject"], [storage.judge_traces_arn()]),
                storage.table_statement("VerdictCache", ["dynamodb:GetItem", "dynamodb:PutItem"],
                                        [VERDICT_PK_PREFIX]),
                storage.table_statement("WriteItemResult", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
                *judge_statements,
            ],
        )

    def _composite(self) -> lambda_.Function:
        """Composite: the item's result; also records per-item error records ("mode": "error")."""
        storage = self._storage
        return self.kit.function(
            self,
            "Composite",
            self._handlers["composite"],
            memory_mb=256,
            timeout=Duration.seconds(30),
            statements=[
                statement("ReadRunRubric", ["s3:GetObject"], [storage.runs_arn()]),
                storage.table_statement("WriteItemResult", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
            ],
        )

    def _aggregate(self, event_bus: events.IEventBus) -> lambda_.Function:
        """Aggregate: report, baseline comparison, metrics, EvaluationCompleted."""
        storage = self._storage
        return self.kit.function(
            self,
            "Aggregate",
            self._handlers["aggregate"],
            memory_mb=1024,
            timeout=Duration.minutes(5),
            statements=[
                statement("ReadWriteRunFiles", ["s3:GetObject", "s3:PutObject"], [storage.runs_arn()]),
                # Its run's and the baseline run's records, every result (Query on the run's pk), error
                # records for items without a result, the outcome. The base table only: nothing reads gsi1.
                storage.table_statement(
                    "ReadResultsCloseRun",
                    ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"],
                    [RUN_PK_PREFIX],
                ),
                # A failed gate's failing items to the review queue (conditional puts, run.gate_review).
                storage.table_statement("QueueFailingItems", ["dynamodb:PutItem"], [REVIEW_PK_PREFIX]),
                publish_metrics_statement("PublishRunMetrics"),
                statement("EmitEvaluationCompleted", ["events:PutEvents"], [event_bus.event_bus_arn]),
            ],
        )

    # ---- Bedrock and target grants ---------------------------------------------------------------
    def _model_arns(self, model_id: str, regions: list[str] | None) -> list[str]:
        """What bedrock:InvokeModel (which also authorizes Converse) needs for one model id.

        For an inference profile: the profile ARN in this region AND the foundation model in every
        region the profile routes to (Bedrock checks both).
        """
        stack = Stack.of(self)
        foundation_regions = model_foundation_regions(model_id, regions) or (stack.region,)
        arns = [
            f"arn:{stack.partition}:bedrock:{region}::foundation-model/{model_foundation_id(model_id)}"
            for region in foundation_regions
        ]
        if model_is_inference_profile(model_id):
            arns.insert(0, stack.format_arn(service="bedrock", resource="inference-profile", resource_name=model_id))
            # A profile routes requests to its source region too: without it there, those calls are denied.
            if not Token.is_unresolved(stack.region) and stack.region not in foundation_regions:
                Annotations.of(self).add_warning_v2(
                    "fmquality:ProfileRegions",
                    f"{model_id}: the regions granted for its foundation model ({', '.join(foundation_regions)}) "
                    f"leave out this stack's region {stack.region}; check the *_regions keys in cdk.json against "
                    "'aws bedrock get-inference-profile'")
        return arns

    def _judge_statements(self) -> list[iam.PolicyStatement]:
        """bedrock:InvokeModel on the configured judge model only."""
        if self._config.judge != "bedrock":
            return []
        arns = self._model_arns(self._config.judge_model_id, self._config.judge_model_regions)
        return [statement("InvokeJudgeModel", ["bedrock:InvokeModel"], arns)]

    def _generate_statements(self, production_target: ProductionTarget) -> list[iam.PolicyStatement]:
        """Generate's grants: each list of config.generation becomes the resources of one statement; an
        empty list leaves its statement out (no permission), never a wildcard."""
        generation = self._config.generation
        statements = [
            # "bedrock:s3://<data bucket>/<bundle_prefix>...?versionId=V": one version of a bundle.
            statement("ReadPromptBundleVersions", ["s3:GetObject", "s3:GetObjectVersion"],
                      [self._storage.bundles_arn()]),
            # runs/<run_id>/targets.json (the run's resolved target and control, written by Prepare).
            statement("ReadRunTargets", ["s3:GetObject"], [self._storage.runs_arn()]),
            statement("ReadProductionTarget", ["ssm:GetParameter"], [production_target.parameter_arn]),
        ]
        model_arns: list[str] = []
        for model_id in generation.bedrock_generation_model_ids:
            model_arns += [a for a in self._model_arns(model_id, generation.bedrock_generation_model_regions)
                           if a not in model_arns]
        if model_arns:
            statements.append(statement("InvokeGenerationModels", ["bedrock:InvokeModel"], model_arns))
        if generation.prompt_arns:
            statements.append(statement("ReadPrompts", ["bedrock:GetPrompt"], prompt_resources(generation.prompt_arns)))
        if generation.chatbot_function_arns:
            statements.append(statement("InvokeChatbotFunctions", ["lambda:InvokeFunction"],
                                        list(generation.chatbot_function_arns)))
        if generation.chatbot_header_secret_arns:
            statements.append(statement("ReadChatbotHeaders", ["secretsmanager:GetSecretValue"],
                                        list(generation.chatbot_header_secret_arns)))
        return statements

    # ---- cdk-nag ---------------------------------------------------------------------------------
    def _acknowledge_nag_findings(self) -> None:
        """The wildcard resources of the grants above, each with why it cannot be narrower."""
        bucket = nag.arn_of(self._storage.data_bucket)
        runs_prefix = nag.wildcard_resource(f"{bucket}/runs/*")
        nag.acknowledge(self.prepare.role, nag.wildcard_resource(f"{bucket}/datasets/*"),
                        "Prepare reads the dataset, catalog and rubric named in the execution input; any key under "
                        "datasets/ of the project's data bucket may be chosen by the caller, nothing outside it")
        if self._config.judge == "bedrock":
            nag.acknowledge(self.prepare.role, nag.wildcard_resource(f"{bucket}/{self._config.generation.bundle_prefix}*"),
                            "Prepare reads the prompt bundle a 'bedrock:s3://...' target names to compare its model "
                            "with the judge's (a judge may not grade its own model); bundle keys come from the caller, "
                            "so the grant is the bundle prefix (read only)")
        nag.acknowledge(self.prepare.role, nag.wildcard_resource(f"{bucket}/{CAPTURED_TURNS_PREFIX}*"),
                        "A replay reads the captured turns of its window, production/turns/dt=<day>/<objects "
                        "Firehose names at delivery>: the days come from the execution input, so the grant is the "
                        "turns prefix (read only, s3:GetObject)")
        nag.acknowledge(self.prepare.role, runs_prefix,
                        "Prepare writes runs/<run_id>/{items.json,rejected.jsonl,rubric.json,targets.json}; the run "
                        "id is the execution name, generated by the callers (`fmquality start`, the EventBridge "
                        "rules, the production sampler, the pipeline) and registered with a conditional write so an "
                        "existing run is never overwritten; it is only known at run time, so the grant is the runs/ "
                        "prefix (write only, s3:PutObject)")
        for role_name in (*self.dimensions, "score_case", "composite"):  # one scorer per profile dimension
            nag.acknowledge(self.by_role[role_name].role, runs_prefix,
                            f"The {role_name} function reads its run's resolved rubric runs/<run_id>/rubric.json; "
                            "the run id is only known at run time (read only, s3:GetObject)")
        judge_traces = nag.wildcard_resource(f"{bucket}/runs/*/judge/*")
        for role_name in (*self.dimensions, "score_case"):
            nag.acknowledge(self.by_role[role_name].role, judge_traces,
                            f"The {role_name} function stores a score whose copy in the state was cut whole at "
                            "runs/<run_id>/judge/<arm>/<test_id>/<dimension>.json; run and test ids are only known at "
                            "run time (write only, s3:PutObject, nothing else under runs/)")
        bundle_prefix = self._config.generation.bundle_prefix
        nag.acknowledge(self.generate.role, nag.wildcard_resource(f"{bucket}/{bundle_prefix}*"),
                        f"Generate reads the prompt-bundle version a 'bedrock:s3://...?versionId=V' target names; "
                        f"bundles live under {bundle_prefix} of the data bucket and their keys come from the caller "
                        "(change event, console), so the grant is that prefix (read only: s3:GetObject, "
                        "s3:GetObjectVersion)")
        nag.acknowledge(self.generate.role, runs_prefix,
                        "Generate reads its run's resolved targets runs/<run_id>/targets.json written by Prepare; the "
                        "run id is only known at run time (read only, s3:GetObject)")
        nag.acknowledge(self.aggregate.role, runs_prefix,
                        "Aggregate reads runs/<run_id>/items.json and the baseline run's report, and writes "
                        "results.jsonl, report.json and report.html under runs/; run ids are only known at run time")
        for name, function in self.by_role.items():
            reason = nag.TRACING_REASON + (nag.METRICS_REASON if name == "aggregate" else "")
            nag.acknowledge(function.role, nag.ANY_RESOURCE, reason)


def prompt_resources(prompt_arns: list[str]) -> list[str]:
    """GetPrompt authorizes on the prompt: a versioned ARN is granted as given and as its prompt."""
    prompts: list[str] = []
    for arn in prompt_arns:
        base = arn.rsplit(":", 1)[0] if arn.count(":") > 5 else arn
        prompts += [a for a in (base, arn) if a not in prompts]
    return prompts
