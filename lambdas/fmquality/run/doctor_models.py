"""`fmquality doctor`'s Bedrock checks: is a model the stack is configured with (the judge's, the
generation models) offered and usable in the region, and the quota hint for the judge model.

Pure: the Bedrock and Service Quotas clients are passed in; each check returns ``Finding`` records
(``run.doctor`` defines them and runs the checks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fmquality.run.targets import INFERENCE_PROFILE_PREFIXES

OK, PROBLEM, WARNING, SKIPPED = "ok", "problem", "warning", "skipped"
_NOT_FOUND = frozenset({"ResourceNotFoundException", "ValidationException"})
_DENIED = frozenset({"AccessDeniedException", "AccessDenied", "UnauthorizedOperation"})


@dataclass(frozen=True)
class Finding:
    """One check's outcome: ``status`` ok | problem | warning | skipped; ``fix`` what to do (a problem or
    a warning always says)."""

    check: str
    status: str
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class ModelFacts:
    """What the model checks learnt, for the quota hint: the foundation model's display name."""

    model_id: str
    name: str | None
    is_profile: bool


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(exc).__name__))


def is_inference_profile(model_id: str) -> bool:
    if model_id.startswith("arn:"):
        return ":inference-profile/" in model_id or ":application-inference-profile/" in model_id
    head, dot, rest = model_id.partition(".")
    return bool(dot) and head in INFERENCE_PROFILE_PREFIXES and "." in rest


def _could_not(check: str, what: str, exc: Exception, permission: str) -> Finding:
    return Finding(check, WARNING, f"could not {what}: {error_code(exc)}",
                   f"run doctor with credentials allowed {permission}")


def model_findings(bedrock: Any, model_id: str, role: str, region: str) -> tuple[list[Finding], ModelFacts]:
    """Is ``model_id`` (a foundation model or an inference-profile id) usable in ``region``: the profile
    is ACTIVE there, its foundation model is offered, on demand when it is called by its own id, not
    LEGACY, and the account has access to it. ``role`` names it: "judge model", "generation model"."""
    from botocore.exceptions import BotoCoreError

    try:
        return _model_findings(bedrock, model_id, role, region)
    except BotoCoreError as exc:  # e.g. no Bedrock endpoint in the region
        return [Finding(f"{role} {model_id}", WARNING, f"could not reach Bedrock in {region}: {exc}",
                        f"check that Amazon Bedrock is offered in {region} and reachable from here")], \
            ModelFacts(model_id, None, is_inference_profile(model_id))


def _model_findings(bedrock: Any, model_id: str, role: str, region: str) -> tuple[list[Finding], ModelFacts]:
    from botocore.exceptions import ClientError

    check = f"{role} {model_id}"
    profile = is_inference_profile(model_id)
    facts = ModelFacts(model_id, None, profile)
    foundation_id = model_id
    route = ""
    if profile:
        try:
            described = bedrock.get_inference_profile(inferenceProfileIdentifier=model_id)
        except ClientError as exc:
            if error_code(exc) in _NOT_FOUND:
                return [Finding(check, PROBLEM, f"no inference profile {model_id!r} in {region}",
                                f"choose a profile the region offers (aws bedrock list-inference-profiles --region "
                                f"{region}) and set it in cdk.json, then redeploy")], facts
            return [_could_not(check, "read the inference profile", exc, "bedrock:GetInferenceProfile")], facts
        if described.get("status") != "ACTIVE":
            return [Finding(check, PROBLEM, f"inference profile status {described.get('status')!r} in {region}",
                            "choose an ACTIVE profile (aws bedrock list-inference-profiles) and redeploy")], facts
        arns = [m.get("modelArn", "") for m in described.get("models", [])]
        here = [a for a in arns if f":bedrock:{region}:" in a] or arns
        if not here:
            return [Finding(check, PROBLEM, "the inference profile lists no model", "choose another profile")], facts
        foundation_id = here[0].rsplit("/", 1)[-1]
        regions = sorted({a.split(":")[3] for a in arns if a.count(":") >= 4})
        route = f", routes to {foundation_id} in {', '.join(regions)}"
    findings: list[Finding] = []
    try:
        details = bedrock.get_foundation_model(modelIdentifier=foundation_id)["modelDetails"]
    except ClientError as exc:
        if error_code(exc) in _NOT_FOUND:
            return [Finding(check, PROBLEM, f"foundation model {foundation_id!r} is not offered in {region}",
                            f"choose a model offered in {region} (aws bedrock list-foundation-models --region "
                            f"{region}) or deploy to a region that offers it")], facts
        return [_could_not(check, "read the foundation model", exc, "bedrock:GetFoundationModel")], facts
    facts = ModelFacts(model_id, details.get("modelName"), profile)
    if details.get("modelLifecycle", {}).get("status") == "LEGACY":
        findings.append(Finding(check, WARNING, f"{foundation_id} is LEGACY in {region}: it will be retired",
                                "move to a current model (aws bedrock list-foundation-models) and redeploy"))
    if not profile and "ON_DEMAND" not in details.get("inferenceTypesSupported", ["ON_DEMAND"]):
        return findings + [Finding(
            check, PROBLEM, f"{foundation_id} cannot be invoked on demand by its own id in {region}",
            f"use an inference profile id for it (aws bedrock list-inference-profiles --region {region}, e.g. "
            f"'us.{foundation_id}') in cdk.json, then redeploy")], facts
    access = _access_problem(bedrock, foundation_id, region)
    if isinstance(access, Finding):
        return findings + [Finding(check, access.status, access.detail, access.fix)], facts
    findings.append(Finding(check, OK, f"offered in {region}{route}; {access}"))
    return findings, facts


def _access_problem(bedrock: Any, foundation_id: str, region: str) -> Finding | str:
    """The account's access to the model (GetFoundationModelAvailability): a Finding when it is missing
    or unreadable, else a phrase for the ok line."""
    from botocore.exceptions import ClientError

    try:
        available = bedrock.get_foundation_model_availability(modelId=foundation_id)
    except ClientError as exc:
        return _could_not("", "read the account's access to the model", exc, "bedrock:GetFoundationModelAvailability")
    missing = []
    agreement = available.get("agreementAvailability", {}).get("status")
    if agreement not in (None, "AVAILABLE"):
        missing.append(f"agreement {agreement}")
    for key, good in (("authorizationStatus", "AUTHORIZED"), ("entitlementAvailability", "AVAILABLE"),
                      ("regionAvailability", "AVAILABLE")):
        value = available.get(key)
        if value not in (None, good):
            missing.append(f"{key} {value}")
    if missing:
        return Finding("", PROBLEM,
                       f"{foundation_id}: the account may not invoke it in {region} ({', '.join(missing)})",
                       "enable the model in the Bedrock console of the region (Model access; Anthropic models ask for "
                       "the use-case form once), and in each region its inference profile routes to")
    return "the account has access"


def quota_hint(quotas: Any, facts: ModelFacts, max_concurrency: str | None, region: str) -> Finding:
    """The account's per-minute quota for the judge model (Service Quotas, Amazon Bedrock): requests per
    minute where the account still has one, else tokens per minute (Bedrock now throttles by tokens and
    has dropped its requests-per-minute rows), cross-region for a profile, on-demand for a model id, beside
    the Map concurrency the deployment derived from judge_quota.requests_per_minute. A hint only: skipped
    when the quota cannot be read or named."""
    check = "judge quota"
    if quotas is None or not facts.name:
        return Finding(check, SKIPPED, "the judge model's name is not known: quota not looked up")
    kind = "cross-region" if facts.is_profile else "on-demand"
    name = facts.name.lower()
    try:
        named = [q for page in quotas.get_paginator("list_service_quotas").paginate(ServiceCode="bedrock")
                 for q in page.get("Quotas", []) if name in q.get("QuotaName", "").lower()]
    except Exception as exc:  # noqa: BLE001 - a hint: anything unreadable is skipped, said once
        return Finding(check, SKIPPED, f"Service Quotas not readable: {error_code(exc)}")
    requests = [q for q in named if "requests per minute" in q["QuotaName"].lower()]
    tokens = [q for q in named if "tokens per minute" in q["QuotaName"].lower()]
    found = requests or tokens
    # this kind of inference first, then the model's own quota before its variants ("... 1M Context Length")
    found.sort(key=lambda q: (not q["QuotaName"].lower().startswith(kind), not q["QuotaName"].lower().endswith(name)))
    if not found:
        return Finding(check, SKIPPED, f"no Bedrock per-minute quota named for {facts.name} in {region}")
    quota = found[0]
    value = quota.get("Value")
    shown = f"{value:,.0f}" if isinstance(value, (int, float)) and value == int(value) else str(value)
    concurrency = f"; the Map runs up to {max_concurrency} cases at once" if max_concurrency else ""
    detail = f"{quota['QuotaName']}: {shown} in {region}{concurrency}"
    if requests:
        fix = ("the Map's concurrency is derived from judge_quota.requests_per_minute in cdk.json: set it to "
               f"{shown} if it differs and redeploy")
    else:
        fix = ("Bedrock limits this model by tokens: set judge_quota.requests_per_minute in cdk.json to about "
               f"{shown} over the tokens one judge call counts (input + output, at the model's token burndown "
               "rate) and redeploy")
    if isinstance(value, (int, float)) and value <= 0:
        return Finding(check, WARNING, detail, "request a quota increase (Service Quotas, Amazon Bedrock); " + fix)
    return Finding(check, OK, detail, fix)
