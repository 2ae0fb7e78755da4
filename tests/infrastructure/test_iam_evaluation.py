"""IAM as AWS evaluates it, offline: every AWS call of every path, against the synthesized role policies.

What is evaluated (one (action, resource) request each, with its condition keys):
  * the calls our handlers made in the embedded-AWS runs (tests/e2e, tests/integration), recorded by
    tests/infrastructure/iam/record.py into iam/recorded_calls.json (regenerate it with
    ``python -m tests.infrastructure.iam.record``), each evaluated against the deployed function's role
    with the resource names of that function's synthesized environment;
  * what the services do with the roles, from the template: each function's log and trace writes, the
    state machine's (its Lambda tasks from the definition, the Distributed Map's ItemReader, ResultWriter,
    child executions), the pipeline's (its action roles, the upload rule's start, Prepare's and
    Generate's read of the candidate bundle the gate's input names).

The evaluator is @cloud-copilot/iam-simulate (npm, pinned), which implements AWS's evaluation logic and
rejects a request whose action, resource type or condition key does not exist. A call the code makes that
its role does not allow fails test_every_recorded_call_is_allowed; a call the tests make on purpose outside
the deployed layout must be denied (EXPECTED_DENIED), so a grant widened to cover it fails too.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import ACCOUNT, REGION
from .iam import evaluate as evaluator
from .iam.calls import Request, UnmodelledCall, requests_for
from .iam.template import Function, Resolver, functions

FIXTURE = Path(__file__).resolve().parent / "iam" / "recorded_calls.json"

pytestmark = pytest.mark.skipif(evaluator.available() is not None, reason=str(evaluator.available()))

# The handler tests' own names for what a deployment names in its configuration: the production target
# parameter a "ssm:" spec names (the deployed inputs: rules, pipeline, schedules name the deployment's).
# The watch test (test_production_watch_aws) calls the core's watch_run with its own bucket, table and
# topic, which the handler takes from its environment.
REBIND = {
    ("ssm", "Name", "/mangaassist/production-target"): "${PRODUCTION_TARGET_PARAMETER}",
    ("s3", "Bucket", "data"): "${BUCKET_NAME}",
    ("dynamodb", "TableName", "table"): "${TABLE_NAME}",
    ("sns", "TopicArn", "arn:aws:sns:us-east-1:123456789012:alerts"): "${ALERTS_TOPIC_ARN}",
}

# Calls the tests make on purpose where the deployed roles must refuse them: (handler, action, resource
# pattern) -> why. Each rule must match at least one recorded call, and every call it matches must be denied.
EXPECTED_DENIED: dict[tuple[str, str, str], str] = {
    ("handlers.prepare.handler", "s3:GetObject", r"arn:aws:s3:::[^/]+/(?!datasets/|runs/|production/turns/).+"):
        "Prepare reads inputs only under datasets/ (docs/running.md); handler tests that keep a catalog or a "
        "rubric at another key test parsing, and on AWS those inputs are refused",
    ("handlers.prepare.handler", "ssm:GetParameter", r"arn:aws:ssm:.*:parameter/(?!mangaassist/dev/production-target$).+"):
        "Prepare resolves only the deployment's production-target parameter; a spec naming another parameter "
        "(canary, missing, sneaky in the handler tests) is refused",
    ("handlers.drift_action.handler", "ssm:PutParameter", r".*"):
        "Restoring the previous production target is off by default (production_watch.online."
        "restore_on_recommendation: false, RESTORE_ENABLED): the handler test turns it on, the deployment grants "
        "no PutParameter until it is configured",
}


@dataclass
class Pair:
    """One evaluated request and where it comes from."""
    role_arn: str
    role_name: str
    request: Request
    origin: str  # "recorded <handler>[dimension] <service>.<operation>" or "derived: <path>"
    handler: str | None = None


# ---- building the pairs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resolver(synth) -> Resolver:
    synth.require_success()
    return Resolver(synth.outdir, ACCOUNT, REGION)


@pytest.fixture(scope="module")
def deployed_functions(resolver) -> list[Function]:
    return functions(resolver)


@pytest.fixture(scope="module")
def recorded() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["calls"]


def _fill(value: Any, environment: dict[str, str], missing: set[str]) -> Any:
    if isinstance(value, list):
        return [_fill(v, environment, missing) for v in value]
    if not isinstance(value, str):
        return value

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environment:
            missing.add(name)
            return match.group(0)
        return environment[name]

    return re.sub(r"\$\{([A-Z0-9_]+)\}", sub, value)


def recorded_pairs(record: dict[str, Any], deployed: list[Function]) -> list[Pair]:
    """The requests of one recorded call, once per deployed function that runs its handler."""
    targets = [f for f in deployed if f.handler == record["handler"]
               and (record["dimension"] is None or f.dimension == record["dimension"])]
    if not targets and record["dimension"] is not None:
        # A scorer of a dimension this deployment's profile does not have (a custom profile's test): its
        # calls do not depend on the dimension, so every deployed scorer must be able to make them.
        targets = [f for f in deployed if f.handler == record["handler"]]
    if not targets:
        raise LookupError(f"no deployed function runs {record['handler']} ({record['dimension']})")
    pairs = []
    for function in targets:
        params = {}
        for name, value in record["params"].items():
            if isinstance(value, str):
                value = REBIND.get((record["service"], name, value), value)
            missing: set[str] = set()
            params[name] = _fill(value, function.environment, missing)
            if missing:
                raise LookupError(f"{function.handler}: the code used {sorted(missing)}, which the deployed "
                                  f"function's environment does not set")
        origin = (f"recorded {record['handler']}{'[' + record['dimension'] + ']' if record['dimension'] else ''} "
                  f"{record['service']}.{record['operation']}")
        for request in requests_for(record["service"], record["operation"], params, region=REGION, account=ACCOUNT):
            pairs.append(Pair(function.role_arn, function.role_name, request, origin, function.handler))
    return pairs


HANDLERS_DIR = Path(__file__).resolve().parents[2] / "lambdas" / "handlers"


def bedrock_pairs(deployed: list[Function], config: Any) -> list[Pair]:
    """The Converse calls the embedded runs cannot record (moto has no bedrock-runtime: the tests answer
    them with stand-ins and stubs): a handler that builds a judge (``handlers.judge_for``) asks its
    function's JUDGE_MODEL_ID when JUDGE is bedrock; Generate answers a bedrock: target with the bundle's
    model, the default generation model for the shipped example bundle."""
    pairs = []
    for function in deployed:
        module = function.handler.split(".")[1]
        source = (HANDLERS_DIR / f"{module}.py").read_text(encoding="utf-8")
        models = []
        if "judge_for(" in source and function.environment.get("JUDGE") == "bedrock":
            models.append(("judge", function.environment["JUDGE_MODEL_ID"]))
        if module == "generate" and config.generation.default_model_id:
            models.append(("default generation model", config.generation.default_model_id))
        for what, model_id in models:
            for request in requests_for("bedrock-runtime", "Converse", {"modelId": model_id}, region=REGION, account=ACCOUNT):
                pairs.append(Pair(function.role_arn, function.role_name, request,
                                  f"derived: {function.handler} Converse with the {what}", function.handler))
    return pairs


# The scorers store a score cut for the state whole (run.layout.score_for_state): only a case whose judge
# prompt or reply passes the state budget makes the call, which the recorded runs may not include.
JUDGE_TRACE_HANDLERS = ("handlers.score_dimension.handler", "handlers.score_case.handler")


def judge_trace_pairs(deployed: list[Function]) -> list[Pair]:
    """Each scorer's (and ScoreCase's) PutObject of a cut score's trace, at the key the code writes."""
    from fmquality.run.layout import judge_trace_key

    pairs = []
    for function in deployed:
        if function.handler not in JUDGE_TRACE_HANDLERS:
            continue
        for arm in ("candidate", "control"):
            key = judge_trace_key("manual-20261207T000000-abcdef", arm, "ja-faq/01", function.dimension or "relevance")
            params = {"Bucket": function.environment["BUCKET_NAME"], "Key": key}
            for request in requests_for("s3", "PutObject", params, region=REGION, account=ACCOUNT):
                pairs.append(Pair(function.role_arn, function.role_name, request,
                                  f"derived: {function.handler} stores a cut score's judge trace", function.handler))
    return pairs


def function_service_pairs(resolver: Resolver, deployed: list[Function]) -> list[Pair]:
    """What Lambda does with each function's role: its log stream in its own group, its traces."""
    pairs = []
    for function in deployed:
        props = resolver.stacks[function.stack].template["Resources"][function.logical_id]["Properties"]
        group = resolver.resolve(function.stack, props["LoggingConfig"]["LogGroup"])
        stream = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:2026/12/07/[$LATEST]0123456789abcdef"
        origin = f"derived: Lambda runs {function.handler}"
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            pairs.append(Pair(function.role_arn, function.role_name, Request(action, stream), origin, function.handler))
        if props.get("TracingConfig", {}).get("Mode") == "Active":
            pairs.append(Pair(function.role_arn, function.role_name, Request("xray:PutTraceSegments", "*"), origin,
                              function.handler))
    return pairs


def delivery_pairs(resolver: Resolver, deployed: list[Function], recorded_so_far: list[Pair]) -> list[Pair]:
    """What Lambda and SNS do with a function's role beyond its code: poll its SQS event source, send a
    failed asynchronous invocation to its on-failure destination, and encrypt what it publishes to a
    KMS-encrypted topic (SNS uses the publisher's kms:GenerateDataKey and kms:Decrypt)."""
    by_name = {resolver.resolve(f.stack, {"Ref": f.logical_id}): f for f in deployed}
    pairs = []
    for stack, _, resource in resolver.resources_of("AWS::Lambda::EventSourceMapping"):
        props = resource["Properties"]
        function = by_name.get(resolver.resolve(stack, props["FunctionName"]))
        source = resolver.resolve(stack, props["EventSourceArn"])
        if function and ":sqs:" in source:
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"):
                pairs.append(Pair(function.role_arn, function.role_name, Request(action, source),
                                  f"derived: Lambda polls {function.handler}'s queue", function.handler))
    for stack, _, resource in resolver.resources_of("AWS::Lambda::EventInvokeConfig"):
        props = resource["Properties"]
        function = by_name.get(resolver.resolve(stack, props["FunctionName"]))
        destination = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        if function and destination:
            arn = resolver.resolve(stack, destination)
            pairs.append(Pair(function.role_arn, function.role_name, Request("sqs:SendMessage", arn),
                              f"derived: Lambda sends {function.handler}'s failed invocation", function.handler))
    topics = {}
    for stack, logical_id, resource in resolver.resources_of("AWS::SNS::Topic"):
        key = resource["Properties"].get("KmsMasterKeyId")
        if key:
            key_arn = resolver.resolve(stack, key)
            if not str(key_arn).startswith("arn:"):
                key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{key_arn}"
            topics[resolver.ref(stack, logical_id)] = key_arn
    for pair in recorded_so_far:
        if pair.request.action == "sns:Publish" and pair.request.resource in topics:
            for action in ("kms:GenerateDataKey", "kms:Decrypt"):
                pairs.append(Pair(pair.role_arn, pair.role_name, Request(action, topics[pair.request.resource]),
                                  f"derived: SNS encrypts what {pair.handler} publishes", pair.handler))
    return pairs


def _walk(states: dict[str, Any]):
    for name, state in states.items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from _walk(branch["States"])
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            yield from _walk(processor["States"])


def state_machine_pairs(resolver: Resolver) -> list[Pair]:
    """What Step Functions does with the state machine's role, read from its definition."""
    ((stack, logical_id, resource),) = resolver.resources_of("AWS::StepFunctions::StateMachine")
    props = resource["Properties"]
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    role_arn, role_name = resolver.role_arn(stack, role_id), resolver._name(stack, role_id)
    substitutions = resolver.resolve(stack, props["DefinitionSubstitutions"])
    definition = json.loads(re.sub(r"\$\{(\w+)\}", lambda m: substitutions[m.group(1)], props["DefinitionString"]))
    machine = resolver.ref(stack, logical_id)
    name = machine.rsplit(":", 1)[1]
    pairs: list[Pair] = []

    def add(action: str, resource: str, what: str) -> None:
        pairs.append(Pair(role_arn, role_name, Request(action, resource), f"derived: state machine {what}"))

    for state_name, state in _walk(definition["States"]):
        if state.get("Resource") == "arn:aws:states:::lambda:invoke":
            add("lambda:InvokeFunction", state["Parameters"]["FunctionName"], f"task {state_name}")
        if state.get("Type") == "Map" and state.get("ItemProcessor", {}).get("ProcessorConfig", {}).get("Mode") == "DISTRIBUTED":
            reader = state["ItemReader"]["Parameters"]
            add("s3:GetObject", f"arn:aws:s3:::{reader['Bucket']}/runs/manual-20261207T000000-abcdef/items.json",
                f"{state_name} ItemReader")
            add("states:StartExecution", machine, f"{state_name} starts its children")
            for child in (f"{name}/{state_name}-label:0b2a4d9e-1111-2222-3333-444455556666",
                          f"{name}:0b2a4d9e-1111-2222-3333-444455556666"):
                for action in ("states:DescribeExecution", "states:StopExecution"):
                    add(action, f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{child}", f"{state_name} manages its children")
            writer = state["ResultWriter"]["Parameters"]
            result = f"arn:aws:s3:::{writer['Bucket']}/{writer['Prefix'].rstrip('/')}/9f0e1d2c-run/manifest.json"
            for action in ("s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"):
                add(action, result, f"{state_name} ResultWriter")
    if props.get("LoggingConfiguration", {}).get("Level", "OFF") != "OFF":
        for action in ("logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
                       "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies",
                       "logs:DescribeLogGroups"):
            add(action, "*", "execution logging (vended log delivery)")
    if props.get("TracingConfiguration", {}).get("Enabled"):
        add("xray:PutTraceSegments", "*", "tracing")
    return pairs


def pipeline_pairs(resolver: Resolver, deployed: list[Function]) -> list[Pair]:
    """What CodePipeline and EventBridge do with the pipeline's roles, and the candidate bundle the gate's
    execution input names, read by Prepare and Generate."""
    ((stack, logical_id, resource),) = resolver.resources_of("AWS::CodePipeline::Pipeline")
    props = resource["Properties"]
    pipeline_name = resolver.ref(stack, logical_id)
    pipeline_arn = f"arn:aws:codepipeline:{REGION}:{ACCOUNT}:{pipeline_name}"
    pipeline_role_id = props["RoleArn"]["Fn::GetAtt"][0]
    pipeline_role = (resolver.role_arn(stack, pipeline_role_id), resolver._name(stack, pipeline_role_id))
    artifacts = resolver.resolve(stack, props["ArtifactStore"]["Location"])
    artifact_object = f"arn:aws:s3:::{artifacts}/{pipeline_name[:20]}/PromptBund/Ab12Cd3"
    pairs: list[Pair] = []

    def add(role: tuple[str, str], action: str, resource_arn: str, what: str) -> None:
        pairs.append(Pair(role[0], role[1], Request(action, resource_arn), f"derived: pipeline {what}"))

    for stage in props["Stages"]:
        for action in stage["Actions"]:
            role_id = action["RoleArn"]["Fn::GetAtt"][0]
            role = (resolver.role_arn(stack, role_id), resolver._name(stack, role_id))
            add(pipeline_role, "sts:AssumeRole", role[0], f"assumes the {action['Name']} action role")
            config = resolver.resolve(stack, action.get("Configuration", {}))
            kind = (action["ActionTypeId"]["Category"], action["ActionTypeId"]["Provider"])
            if kind == ("Source", "S3"):
                bucket, key = config["S3Bucket"], config["S3ObjectKey"]
                add(role, "s3:GetBucketVersioning", f"arn:aws:s3:::{bucket}", "source checks versioning")
                add(role, "s3:GetObjectVersion", f"arn:aws:s3:::{bucket}/{key}", "source reads the bundle version")
                add(role, "s3:PutObject", artifact_object, "source writes its artifact")
            elif kind == ("Invoke", "StepFunctions"):
                machine = config["StateMachineArn"]
                execution = machine.replace(":stateMachine:", ":execution:") + ":pipeline-0123abcd-4567-89ef"
                add(role, "states:StartExecution", machine, "gate starts the evaluation")
                add(role, "states:DescribeExecution", execution, "gate polls the execution it started")
                run_input = json.loads(config["Input"])
                match = re.fullmatch(r"bedrock:s3://([^/]+)/([^?]+)\?versionId=.+", run_input["target"])
                assert match, run_input["target"]
                bundle = f"arn:aws:s3:::{match.group(1)}/{match.group(2)}"
                for function in deployed:
                    if function.handler in ("handlers.prepare.handler", "handlers.generate.handler"):
                        # GetObject with the versionId CodePipeline filled in: s3:GetObjectVersion.
                        pairs.append(Pair(function.role_arn, function.role_name, Request("s3:GetObjectVersion", bundle),
                                          f"derived: pipeline gate input's bundle read by {function.handler}",
                                          function.handler))
            elif kind == ("Deploy", "S3"):
                add(role, "s3:GetObject", artifact_object, "release reads the artifact")
                add(role, "s3:PutObject", f"arn:aws:s3:::{config['BucketName']}/{config['ObjectKey']}",
                    "release publishes the bundle")
    for rule_stack, _, rule in resolver.resources_of("AWS::Events::Rule"):
        for target in rule["Properties"].get("Targets", []):
            if resolver.resolve(rule_stack, target["Arn"]) == pipeline_arn:
                role_id = target["RoleArn"]["Fn::GetAtt"][0]
                add((resolver.role_arn(rule_stack, role_id), resolver._name(rule_stack, role_id)),
                    "codepipeline:StartPipelineExecution", pipeline_arn, "upload rule starts the pipeline")
    return pairs


@pytest.fixture(scope="module")
def pairs(resolver, deployed_functions, recorded, synth) -> list[Pair]:
    found: list[Pair] = []
    for record in recorded:
        found += recorded_pairs(record, deployed_functions)
    found += bedrock_pairs(deployed_functions, synth.config)
    found += judge_trace_pairs(deployed_functions)
    found += delivery_pairs(resolver, deployed_functions, found)
    found += function_service_pairs(resolver, deployed_functions)
    found += state_machine_pairs(resolver)
    found += pipeline_pairs(resolver, deployed_functions)
    unique: dict[tuple, Pair] = {}
    for pair in found:
        unique.setdefault((pair.role_arn, *pair.request.key()), pair)
    return list(unique.values())


@pytest.fixture(scope="module")
def decisions(resolver, pairs) -> list[evaluator.Evaluation]:
    policies: dict[str, list[dict[str, Any]]] = {}
    for pair in pairs:
        if pair.role_name not in policies:
            policies[pair.role_name] = resolver.policies_of_role(pair.role_name)
    resource_policies: dict[str, Any] = {}
    for pair in pairs:
        if pair.request.resource not in resource_policies:
            resource_policies[pair.request.resource] = resolver.resource_policy(pair.request.resource)
    results = evaluator.evaluate([
        {"role_arn": p.role_arn, "action": p.request.action, "resource": p.request.resource,
         "context": p.request.context, "policies": policies[p.role_name],
         "resource_policy": resource_policies[p.request.resource]} for p in pairs])
    counts = Counter(r.decision for r in results)
    print(f"\nIAM evaluation: {len(pairs)} (action, resource) requests over {len(policies)} roles: {dict(counts)}")
    return results


def _expected_denial(pair: Pair) -> tuple[str, str, str] | None:
    for rule in EXPECTED_DENIED:
        handler, action, pattern = rule
        if pair.handler == handler and pair.request.action == action and re.fullmatch(pattern, pair.request.resource):
            return rule
    return None


def _describe(pair: Pair, decision: evaluator.Evaluation) -> str:
    context = f" {pair.request.context}" if pair.request.context else ""
    errors = f" {json.dumps(decision.errors)[:600]}" if decision.errors else ""
    return f"{decision.decision}: {pair.role_name} {pair.request.action} {pair.request.resource}{context} <- {pair.origin}{errors}"


# ---- the tests -----------------------------------------------------------------------------------------


def test_every_request_is_one_the_evaluator_accepts(pairs, decisions):
    """A request with an unknown action, a resource of the wrong type or an unsupported condition key is a
    modelling error here, not a verdict."""
    errors = [_describe(p, d) for p, d in zip(pairs, decisions) if d.decision == "Error"]
    assert not errors, "\n".join(errors)


def test_every_recorded_call_is_allowed(pairs, decisions):
    denied = [_describe(p, d) for p, d in zip(pairs, decisions)
              if d.decision != "Error" and not d.allowed and _expected_denial(p) is None]
    assert not denied, "calls the deployed roles would refuse:\n" + "\n".join(denied)


def test_what_the_deployment_must_refuse_is_refused(pairs, decisions):
    """The tests' calls outside the deployed layout stay denied: a grant widened to allow them fails here."""
    matched: dict[tuple[str, str, str], list[str]] = {rule: [] for rule in EXPECTED_DENIED}
    allowed = []
    for pair, decision in zip(pairs, decisions):
        rule = _expected_denial(pair)
        if rule is not None:
            matched[rule].append(pair.request.resource)
            if decision.allowed:
                allowed.append(_describe(pair, decision))
    assert not allowed, "\n".join(allowed)
    assert all(matched.values()), f"rules that match no recorded call (stale): {[r for r, m in matched.items() if not m]}"


def test_every_function_the_state_machine_and_the_pipeline_roles_are_evaluated(pairs, deployed_functions, resolver):
    roles = {p.role_name for p in pairs}
    assert {f.role_name for f in deployed_functions} <= roles
    ((stack, _, machine),) = resolver.resources_of("AWS::StepFunctions::StateMachine")
    assert resolver._name(stack, machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]) in roles
    pipeline_roles = {resolver._name(s, lid) for s, lid, _ in resolver.resources_of("AWS::IAM::Role")
                      if s.endswith("-Pipeline")}
    # the manual approval's action role is assumed but makes no call of its own
    assert len(pipeline_roles - roles) <= 1, pipeline_roles - roles


def test_every_handler_of_the_gate_made_calls_in_the_recording(recorded, deployed_functions):
    """The recording covers each deployed function's handler (each calls AWS on its path)."""
    assert {f.handler for f in deployed_functions} <= {r["handler"] for r in recorded}


def test_every_recorded_operation_is_modelled(recorded):
    unmodelled = set()
    for record in recorded:
        params = {k: (v if not isinstance(v, str) else v.replace("${", "x").replace("}", "")) for k, v in record["params"].items()}
        try:
            requests_for(record["service"], record["operation"], params, region=REGION, account=ACCOUNT)
        except UnmodelledCall as exc:
            unmodelled.add(str(exc))
        except KeyError:
            pass  # modelled; a parameter the placeholder stand-in does not carry
    assert not unmodelled, sorted(unmodelled)


def test_the_pipeline_bundle_is_readable_by_prepare_and_generate(pairs, decisions):
    """Issue 31 item 1 as the evaluator sees it: both roles may read the gate input's bundle version."""
    readers = {p.handler: d.decision for p, d in zip(pairs, decisions) if p.origin.startswith("derived: pipeline gate input")}
    assert readers == {"handlers.prepare.handler": "Allowed", "handlers.generate.handler": "Allowed"}


def test_bedrock_calls_reach_only_their_own_models(pairs, decisions, synth, resolver, deployed_functions):
    """Issue 31 item 2 as the evaluator sees it: Generate may invoke the default generation model (profile
    and foundation models), the judges their judge model; Generate may not invoke the judge's model."""
    from .iam.calls import model_arns

    converse = {(p.handler, p.request.resource): d.decision for p, d in zip(pairs, decisions)
                if p.request.action == "bedrock:InvokeModel"}
    assert converse and set(converse.values()) == {"Allowed"}
    generated_with = [r for h, r in converse if h == "handlers.generate.handler"]
    assert any(":inference-profile/" in r for r in generated_with) and any(":foundation-model/" in r for r in generated_with)
    generate = next(f for f in deployed_functions if f.handler == "handlers.generate.handler")
    policies = resolver.policies_of_role(generate.role_name)
    borrowed = [{"role_arn": generate.role_arn, "action": "bedrock:InvokeModel", "resource": arn, "policies": policies}
                for arn in model_arns(synth.config.judge_model_id, REGION, ACCOUNT)]
    assert {e.decision for e in evaluator.evaluate(borrowed)} == {"ImplicitlyDenied"}


def test_the_scorers_may_store_judge_traces_and_write_nothing_else_under_runs(pairs, decisions, resolver,
                                                                            deployed_functions):
    """Issue 31 item 5: every scorer and ScoreCase may put runs/<run>/judge/<arm>/<test>/<dimension>.json and
    nothing else of a run (its results, report, items) nor a key outside runs/."""
    traces = {(p.role_name, p.request.resource): d.decision for p, d in zip(pairs, decisions)
              if p.origin.endswith("stores a cut score's judge trace")}
    scorers = [f for f in deployed_functions if f.handler in JUDGE_TRACE_HANDLERS]
    assert {role for role, _ in traces} == {f.role_name for f in scorers} and len(scorers) >= 2
    assert set(traces.values()) == {"Allowed"}
    outside = []
    for function in scorers:
        bucket = function.environment["BUCKET_NAME"]
        for key in ("runs/r1/results.jsonl", "runs/r1/report.json", "runs/r1/items.json", "runs/r1/judgement.json",
                    "judge/candidate/t/relevance.json", "datasets/x/judge/y.json"):
            outside.append({"role_arn": function.role_arn, "action": "s3:PutObject",
                            "resource": f"arn:aws:s3:::{bucket}/{key}",
                            "policies": resolver.policies_of_role(function.role_name)})
    assert {e.decision for e in evaluator.evaluate(outside)} == {"ImplicitlyDenied"}


# ---- the evaluator itself: a removed grant is a denial ------------------------------------------------


def _prepare(resolver, deployed_functions) -> Function:
    return next(f for f in deployed_functions if f.handler == "handlers.prepare.handler")


def test_removing_a_grant_denies_the_call_it_covered(resolver, deployed_functions):
    prepare = _prepare(resolver, deployed_functions)
    policies = resolver.policies_of_role(prepare.role_name)
    dataset = Request("s3:GetObject", f"arn:aws:s3:::{prepare.environment['BUCKET_NAME']}/datasets/mangaassist/golden.jsonl")
    without = [{**p, "policy": {**p["policy"], "Statement": [s for s in p["policy"]["Statement"]
                                                              if s.get("Sid") != "ReadInputs"]}} for p in policies]
    assert without != policies
    with_grant, without_grant = evaluator.evaluate([
        {"role_arn": prepare.role_arn, "action": dataset.action, "resource": dataset.resource, "policies": policies},
        {"role_arn": prepare.role_arn, "action": dataset.action, "resource": dataset.resource, "policies": without},
    ])
    assert with_grant.allowed and without_grant.decision == "ImplicitlyDenied"


def test_the_evaluator_applies_conditions_wildcards_notaction_and_deny():
    role = f"arn:aws:iam::{ACCOUNT}:role/probe"
    table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t"
    keyed = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": table,
         "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["RUN#*"]}}},
        {"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/runs/*"},
        {"Effect": "Allow", "NotAction": "s3:*", "Resource": "arn:aws:sqs:*"},
        {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/runs/secret/*"},
    ]}
    cases = [
        ("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["RUN#1"]}, "Allowed"),
        ("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["VERDICT#1"]}, "ImplicitlyDenied"),
        ("s3:GetObjectVersion", "arn:aws:s3:::b/runs/x", {}, "Allowed"),
        ("s3:GetObject", "arn:aws:s3:::b/datasets/x", {}, "ImplicitlyDenied"),
        ("s3:GetObject", "arn:aws:s3:::b/runs/secret/x", {}, "ExplicitlyDenied"),
        ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:q", {}, "Allowed"),
        ("s3:PutObject", "arn:aws:s3:::b/runs/x", {}, "ImplicitlyDenied"),
    ]
    results = evaluator.evaluate([{"role_arn": role, "action": a, "resource": r, "context": c,
                                   "policies": [{"name": "probe", "policy": keyed}]} for a, r, c, _ in cases])
    assert [r.decision for r in results] == [expected for *_, expected in cases]


# ---- the recorder ---------------------------------------------------------------------------------------


def test_the_recorder_keeps_what_iam_decides_on_and_names_resources_by_variable():
    from .iam.record import call_record

    environment = {"BUCKET_NAME": "fmq-test-bucket", "TABLE_NAME": "fmq-test-table", "LOG_LEVEL": "INFO"}
    put = call_record(("handlers.prepare.handler", None), "s3", "PutObject",
                      {"Bucket": "fmq-test-bucket", "Key": "runs/r1/items.json", "Body": b"secret"}, environment)
    assert put["params"] == {"Bucket": "${BUCKET_NAME}", "Key": "runs/r1/items.json"}
    query = call_record(("handlers.aggregate.handler", None), "dynamodb", "Query",
                        {"TableName": "fmq-test-table", "KeyConditionExpression": "pk = :pk AND begins_with(sk, :s)",
                         "ExpressionAttributeValues": {":pk": {"S": "RUN#r1"}, ":s": {"S": "RESULT#"}}}, environment)
    assert query["params"] == {"TableName": "${TABLE_NAME}", "LeadingKeys": ["RUN#r1"]}
