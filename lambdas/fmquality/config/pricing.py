"""What judge tokens cost: the rubric's ``judge.prices`` (USD per 1M tokens) applied to a usage.

Bedrock reports ``inputTokens`` WITHOUT the cached part, and the cache read and write tokens
separately, so the four counters are priced independently and nothing is counted twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmquality.domain.scores import JudgeUsage

if TYPE_CHECKING:
    from fmquality.config.rubric import ModelPrice, Rubric

PER_TOKENS = 1_000_000


def cost_usd(usage: JudgeUsage, price: "ModelPrice") -> float:
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / PER_TOKENS


def usage_tokens(usage: JudgeUsage) -> int:
    return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def usd_estimate(usage: JudgeUsage, rubric: "Rubric", model_id: str | None) -> float | None:
    """The cost of ``usage`` for ``model_id``, rounded to 1/100 of a cent. 0 when no token was used
    (the offline judge, or every verdict from the cache); None when tokens were used but the model
    has no price in the rubric (unknown is not free)."""
    if usage_tokens(usage) == 0:
        return 0.0
    price = rubric.judge.price_for(model_id)
    return None if price is None else round(cost_usd(usage, price), 4)


def judge_model_id(judge_label: str, rubric: "Rubric") -> str | None:
    """The priced model behind a report's judge label: "bedrock:<model id>" names it, plain
    "bedrock" uses the rubric's pinned model, any other judge has none."""
    name, _, model = judge_label.partition(":")
    if name != "bedrock":
        return None
    return model or rubric.judge.model_id
