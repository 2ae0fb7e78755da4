"""Bedrock model and inference-profile ids as IAM needs them: which is which, the foundation model behind
a profile and the regions a profile routes to (bedrock:InvokeModel is checked on the profile AND on its
foundation model in every destination region).

Pure Python (no aws_cdk, no pydantic): infra.config validates ids and region lists with the checks here,
infra.constructs.evaluation_functions turns them into ARNs.
"""

from __future__ import annotations

import re

# Regions a cross-region inference profile may route to, by its geography prefix. Used only when
# judge_model_regions (bedrock_generation_model_regions) is not set. AWS adds regions to profiles over
# time: list a profile's current destinations with
#   aws bedrock get-inference-profile --region <stack region> \
#       --inference-profile-identifier us.anthropic.claude-haiku-4-5-20251001-v1:0 --query 'models[].modelArn'
# (one foundation-model ARN per destination region) and set the *_regions key when they differ.
PROFILE_GEOGRAPHY_REGIONS: dict[str, tuple[str, ...]] = {
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "eu": ("eu-central-1", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-3"),
    "apac": ("ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-southeast-1", "ap-southeast-2"),
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "au": ("ap-southeast-2", "ap-southeast-4"),
    "ca": ("ca-central-1", "ca-west-1"),
}

# Model providers: a first segment that is a provider means a plain foundation-model id.
_PROVIDERS = frozenset({"amazon", "anthropic", "ai21", "cohere", "meta", "mistral", "stability", "deepseek",
                        "openai", "qwen", "writer", "twelvelabs", "luma", "google", "minimax", "moonshot", "nvidia"})
_MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9.\-:]*$")
# An AWS region name: us-east-1, eu-central-2, ap-southeast-4, us-gov-west-1, cn-north-1, ...
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")


def check_regions(values: list[str] | None) -> list[str] | None:
    """A region list for IAM resources: null (derive it from the profile's geography), else one or more
    distinct region names. An empty list would grant the profile but none of its foundation models."""
    if values is None:
        return None
    if not values:
        raise ValueError("must list at least one region, or be null for the profile's default regions")
    bad = [v for v in values if not isinstance(v, str) or not _REGION.match(v)]
    if bad:
        raise ValueError(f"each entry must be an AWS region name like 'us-east-1'; got {bad}")
    if len(set(values)) != len(values):
        raise ValueError("lists a region twice")
    return values


def check_model_id(value: str) -> str:
    """A Bedrock model id or inference-profile id, else ValueError naming the expected form."""
    if not _MODEL_ID.match(value) or "." not in value:
        raise ValueError(
            f"{value!r} must be a Bedrock model id like 'anthropic.claude-haiku-4-5-20251001-v1:0' or an "
            "inference-profile id like 'us.anthropic.claude-haiku-4-5-20251001-v1:0'"
        )
    return value


def model_is_inference_profile(model_id: str) -> bool:
    """Profile ids put a geography before the provider ('us.anthropic.x'); model ids start with it."""
    first, _, rest = model_id.partition(".")
    return "." in rest and first not in _PROVIDERS


def model_profile_geography(model_id: str) -> str | None:
    return model_id.split(".", 1)[0] if model_is_inference_profile(model_id) else None


def model_foundation_id(model_id: str) -> str:
    """The model id behind a profile ('us.anthropic.x' -> 'anthropic.x'), or the model id itself."""
    return model_id.split(".", 1)[1] if model_is_inference_profile(model_id) else model_id


def model_foundation_regions(model_id: str, regions: list[str] | None) -> tuple[str, ...] | None:
    """Regions for the foundation-model ARNs behind ``model_id``; None means the stack's own region."""
    if regions is not None:
        return tuple(regions)
    if model_is_inference_profile(model_id):
        return PROFILE_GEOGRAPHY_REGIONS.get(model_profile_geography(model_id) or "")
    return None
