"""`fmquality estimate`: the judge calls, tokens and cost of a run, before any call is made.

The deterministic checks run for real (they decide which dimensions of which cases need the judge),
and every prompt is built by the real Bedrock prompt builder, so the estimate follows the rubric,
the dataset and the judge mode. Tokens are estimated at about four characters per token. Prompt
caching is assumed to work as Bedrock's does within its 5-minute lifetime: the static prefix (tool
schema + system text) of a distinct prompt shape is written once, then read; a prefix shorter than
the model's minimum cacheable length (the rubric's ``judge.min_cache_tokens``) is never cached, and
a model the table does not list is assumed not to cache. Output tokens are those of a typical verdict
(a short rationale and three evidence quotes), with each call's ``maxTokens`` as the upper bound.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from fmquality.schemes import scheme_for
from fmquality.scoring.plan import plan_case
from fmquality.judges.base import CombinedJudgeRequest
from fmquality.config.pricing import cost_usd
from fmquality.judges.bedrock.prompts import build_combined_prompt, build_prompt
from fmquality.domain.scores import JudgeUsage
from fmquality.domain.case import TestCase

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

CHARS_PER_TOKEN = 4
_TYPICAL_RATIONALE = "x" * 320  # two to four sentences
_TYPICAL_EVIDENCE = ["x" * 60] * 3  # three short quotes


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _typical_verdict(sub_scores: list[str]) -> dict[str, Any]:
    return {"evidence": _TYPICAL_EVIDENCE, "rationale": _TYPICAL_RATIONALE, "levels": {n: 4 for n in sub_scores},
            "confidence": 0.8}


class RunEstimate(BaseModel):
    cases: int
    judge_mode: str
    model_id: str
    rubric_version: str
    cases_needing_judge: int
    calls: int
    calls_per_case: float
    calls_by_dimension: dict[str, int]
    sub_scores_judged: int
    input_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    output_tokens: int
    max_output_tokens: int
    usd_estimate: float | None
    usd_upper_bound: float | None
    price: dict[str, float] | None
    # The model's minimum cacheable prefix (None: not in the rubric's table, no caching assumed) and
    # the smallest static prefix the run sends.
    min_cache_tokens: int | None
    smallest_prefix_tokens: int | None

    def usage(self) -> JudgeUsage:
        return JudgeUsage(calls=self.calls, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                          cache_read_tokens=self.cache_read_tokens, cache_write_tokens=self.cache_write_tokens)


def estimate_run(
    cases: Iterable[TestCase],
    rubric: "Rubric",
    *,
    mode: str | None = None,
    model_id: str | None = None,
    min_cache_tokens: int | None = None,
) -> RunEstimate:
    """``min_cache_tokens`` overrides the rubric's entry for the model."""
    from fmquality.judges.bedrock.judge import BedrockJudge  # the real request builder; no client is created

    mode = mode or rubric.judge.mode
    model_id = model_id or rubric.judge.model_id
    builder = BedrockJudge(model_id)
    if min_cache_tokens is None:
        min_cache_tokens = rubric.judge.min_cache_tokens_for(model_id)
    prefix_sizes: set[int] = set()
    seen_prefixes: set[str] = set()
    by_dimension: Counter[str] = Counter()
    totals = Counter()
    case_count = needing = 0

    def account(params: dict[str, Any], verdict_json: str) -> None:
        tools = json.dumps(params["toolConfig"], sort_keys=True)
        system = "".join(b.get("text", "") for b in params["system"] if "text" in b)
        user = "".join(b["text"] for m in params["messages"] for b in m["content"])
        prefix_tokens = estimate_tokens(tools) + estimate_tokens(system)
        user_tokens = estimate_tokens(user)
        prefix_sizes.add(prefix_tokens)
        if min_cache_tokens is not None and prefix_tokens >= min_cache_tokens:
            key = tools + "\x1d" + system
            if key in seen_prefixes:
                totals["cache_read"] += prefix_tokens
            else:
                seen_prefixes.add(key)
                totals["cache_write"] += prefix_tokens
            totals["input"] += user_tokens
        else:
            totals["input"] += prefix_tokens + user_tokens
        totals["output"] += estimate_tokens(verdict_json)
        totals["max_output"] += params["inferenceConfig"]["maxTokens"]
        totals["calls"] += 1

    scheme = scheme_for(rubric)
    # Combined mode only where the scheme judges that way (the engines ask one dimension at a time otherwise).
    mode = mode if mode != "combined" or scheme.combined_judging else "per_dimension"
    for case in cases:
        case_count += 1
        plans = list(plan_case(scheme, case, rubric).values())
        requests = [p.request for p in plans if p.final is None and p.request is not None]
        if not requests:
            continue
        needing += 1
        totals["sub_scores"] += sum(len(r.sub_scores) for r in requests)
        if mode == "combined":
            prompt = build_combined_prompt(CombinedJudgeRequest(requests=requests), rubric)
            verdict = {d: _typical_verdict(names) for d, names in prompt.sub_scores.items()}
            account(builder.converse_params(prompt, rubric), json.dumps(verdict))
            by_dimension["combined"] += 1
        else:
            for request in requests:
                prompt = build_prompt(request, rubric)
                account(builder.converse_params(prompt, rubric), json.dumps(_typical_verdict(prompt.sub_scores)))
                by_dimension[request.dimension] += 1

    calls = totals["calls"]
    usage = JudgeUsage(calls=calls, input_tokens=totals["input"], output_tokens=totals["output"],
                       cache_read_tokens=totals["cache_read"], cache_write_tokens=totals["cache_write"])
    worst = usage.model_copy(update={"output_tokens": totals["max_output"]})
    price = rubric.judge.price_for(model_id)
    return RunEstimate(
        cases=case_count,
        judge_mode=mode,
        model_id=model_id,
        rubric_version=rubric.version,
        cases_needing_judge=needing,
        calls=calls,
        calls_per_case=round(calls / case_count, 3) if case_count else 0.0,
        calls_by_dimension=dict(by_dimension),
        sub_scores_judged=totals["sub_scores"],
        input_tokens=usage.input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        output_tokens=usage.output_tokens,
        max_output_tokens=worst.output_tokens,
        usd_estimate=round(cost_usd(usage, price), 4) if price else None,
        usd_upper_bound=round(cost_usd(worst, price), 4) if price else None,
        price=price.model_dump() if price else None,
        min_cache_tokens=min_cache_tokens,
        smallest_prefix_tokens=min(prefix_sizes, default=None),
    )


def _caching_line(e: RunEstimate) -> str:
    if e.min_cache_tokens is None:
        return f"prompt caching: {e.model_id} has no judge.min_cache_tokens entry in the rubric: not assumed"
    if e.smallest_prefix_tokens is None:
        return f"prompt caching: prefixes of {e.min_cache_tokens:,}+ tokens are cached for {e.model_id}"
    verdict = ("every static prefix is cached" if e.smallest_prefix_tokens >= e.min_cache_tokens
               else "WARNING: shorter static prefixes are NOT cached")
    return (f"prompt caching: smallest static prefix ~{e.smallest_prefix_tokens:,} tokens, minimum for "
            f"{e.model_id} {e.min_cache_tokens:,}: {verdict}")


def format_estimate(estimate: RunEstimate) -> str:
    e = estimate
    dims = ", ".join(f"{d} {n}" for d, n in sorted(e.calls_by_dimension.items())) or "none"
    lines = [
        f"estimate for {e.cases} cases: judge mode {e.judge_mode}, model {e.model_id}, rubric {e.rubric_version}",
        f"judge calls: {e.calls} ({e.calls_per_case:.2f} per case; {dims}); "
        f"{e.cases - e.cases_needing_judge} case(s) fully settled by the checks; "
        f"{e.sub_scores_judged} sub-scores left to the judge",
        f"input tokens: {e.input_tokens:,} uncached + {e.cache_write_tokens:,} cache write + "
        f"{e.cache_read_tokens:,} cache read",
        _caching_line(e),
        f"output tokens: ~{e.output_tokens:,} expected, at most {e.max_output_tokens:,} (each call's maxTokens)",
    ]
    if e.usd_estimate is None:
        lines.append(f"cost: no price for {e.model_id} in the rubric's judge.prices")
    else:
        p = e.price or {}
        lines.append(
            f"cost: ~${e.usd_estimate:,.4f} expected, at most ${e.usd_upper_bound:,.4f} "
            f"(USD per 1M tokens: input {p['input']}, output {p['output']}, cache read {p['cache_read']}, "
            f"cache write {p['cache_write']}; check them against the current Bedrock price list)"
        )
    lines.append("tokens are estimated at ~4 characters per token; verdicts already in the cache would cost nothing")
    return "\n".join(lines)
