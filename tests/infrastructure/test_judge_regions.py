"""The regions the judge's cross-region inference profile routes to are configuration
(``judge_model_regions``; ``generation.bedrock_generation_model_regions`` for Generate): validated region
names, default from the profile's geography (us.: us-east-1, us-east-2, us-west-2), and the IAM
resources follow them."""

from __future__ import annotations

import copy
import re

import pytest

from infra.config import ConfigError, parse_config, read_cdk_json_context
from tests.infrastructure.conftest import REGION, as_list, flatten_join, functions_by_handler_env, policy_statements_for_function
from tests.infrastructure.variants import metadata_entries, synth_variant

DEFAULT_US_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
FOUNDATION = re.compile(r"^arn:<AWS::Partition>:bedrock:([a-z0-9-]+)::foundation-model/(.+)$|"
                        r"^arn:aws:bedrock:([a-z0-9-]+)::foundation-model/(.+)$")


@pytest.fixture()
def raw() -> dict:
    return copy.deepcopy(read_cdk_json_context())


def test_the_default_is_the_us_profile_regions(raw):
    assert raw["judge_model_id"].startswith("us.") and raw["judge_model_regions"] is None
    assert parse_config(raw).foundation_model_regions == DEFAULT_US_REGIONS


@pytest.mark.parametrize("regions, message", [
    ([], "at least one region"),
    (["us-east-1", "US East (Ohio)"], "AWS region name"),
    (["us-east-1", "us-east-1"], "twice"),
    (["us-east-1", "us_west_2"], "AWS region name"),
    ("us-east-1", "valid list"),
])
def test_a_bad_region_list_stops_the_synth_and_names_the_key(raw, regions, message):
    raw["judge_model_regions"] = regions
    with pytest.raises(ConfigError, match=rf"fmquality\.judge_model_regions: .*{message}"):
        parse_config(raw)
    raw["judge_model_regions"] = None
    raw["generation"]["bedrock_generation_model_regions"] = regions
    with pytest.raises(ConfigError, match=rf"fmquality\.generation\.bedrock_generation_model_regions: .*{message}"):
        parse_config(raw)


@pytest.mark.parametrize("regions", [["us-east-1"], ["eu-central-2", "ap-southeast-4"], ["us-gov-west-1"]])
def test_region_names_are_accepted(raw, regions):
    raw["judge_model_regions"] = regions
    assert parse_config(raw).foundation_model_regions == tuple(regions)


def _judge_resources(template, dimension: str) -> list[str]:
    _, scorer = functions_by_handler_env(template)[dimension]
    (invoke,) = [s for s in policy_statements_for_function(template, scorer)
                 if "bedrock:InvokeModel" in as_list(s["Action"])]
    return [flatten_join(r) for r in as_list(invoke["Resource"])]


def _foundation_regions(resources: list[str], model: str) -> list[str]:
    out = []
    for resource in resources:
        found = FOUNDATION.match(resource)
        if found:
            region, name = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
            assert name == model
            out.append(region)
    return out


def test_by_default_the_judge_may_invoke_the_profile_and_its_model_in_the_us_regions(evaluation_template, synth):
    config = synth.config
    resources = _judge_resources(evaluation_template, config.profile.dimensions[0])
    assert _foundation_regions(resources, config.foundation_model_id) == list(DEFAULT_US_REGIONS)
    profiles = [r for r in resources if ":inference-profile/" in r]
    assert len(profiles) == 1 and profiles[0].endswith(f":{REGION}:111111111111:inference-profile/{config.judge_model_id}")


@pytest.fixture(scope="module")
def two_regions(tmp_path_factory):
    """Regions that leave out the stack's own (us-east-1): the IAM follows, and synth warns."""
    return synth_variant(tmp_path_factory.mktemp("cdk.regions"), judge_model_regions=["us-east-2", "us-west-2"])


def test_the_judge_grant_follows_the_configured_regions(two_regions):
    config = two_regions.config
    for dimension in config.profile.dimensions:
        resources = _judge_resources(two_regions.evaluation, dimension)
        assert _foundation_regions(resources, config.foundation_model_id) == ["us-east-2", "us-west-2"]
        assert any(":inference-profile/" in r for r in resources)


def test_regions_without_the_stack_region_are_warned_about(two_regions, synth):
    warnings = [data for _, data in metadata_entries(two_regions.evaluation_metadata, "aws:cdk:warning")]
    assert any(REGION in str(w) and "get-inference-profile" in str(w) for w in warnings), warnings
    default_metadata = (synth.outdir / f"{synth.evaluation_stack_name}.metadata.json").read_text()
    assert "fmquality:ProfileRegions" not in default_metadata
