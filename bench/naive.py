"""The naive reference evaluator of the benchmark: what a straightforward implementation of the
scoring design (DESIGN section 5) would do with an LLM judge.

For every case it asks the model for every sub-score of every dimension (15 in all), one Converse
call per sub-score, one call at a time: no deterministic checks settle anything, nothing is batched,
nothing is cached, and no prompt-cache point is set. It retries a throttled call after a fixed
pause. It uses the same system text and fenced case data as our judge, so a call costs about the
same tokens; only the number of calls and their scheduling differ.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from fmquality.schemes.mangaassist import render_case
from fmquality.scoring.plan import response_text
from fmquality.domain.errors import InvalidJudgeOutput
from fmquality.judges.bedrock.prompts import fenced_case_text, system_text
from fmquality.judges.bedrock.reply import parse_verdict
from fmquality.judges.bedrock.schema import TOOL_NAME, verdict_tool_spec
from fmquality.schemes.mangaassist import DIMENSIONS, SUB_SCORES
from fmquality.domain.case import TestCase
from fmquality.config.rubric import Rubric


class NaiveEvaluator:
    def __init__(self, client: Any, model_id: str, rubric: Rubric, *, retry_pause_s: float = 1.0,
                 max_attempts: int = 5) -> None:
        self.client = client
        self.model_id = model_id
        self.rubric = rubric
        self.retry_pause_s = retry_pause_s
        self.max_attempts = max_attempts
        self.calls = 0
        self.throttled = 0

    def _ask(self, dimension: str, sub_score: str, case: TestCase) -> float | None:
        user = (
            f"Grade the sub-score {sub_score} of the dimension {dimension} on the levels 1 to 5.\n\n"
            f"{fenced_case_text(render_case(case), response_text(case))}\n\n"
            f"Record the verdict with the {TOOL_NAME} tool."
        )
        params = {
            "modelId": self.model_id,
            "system": [{"text": system_text(dimension, self.rubric)}],
            "messages": [{"role": "user", "content": [{"text": user}]}],
            "inferenceConfig": {"temperature": 0.0, "maxTokens": self.rubric.judge.max_tokens},
            "toolConfig": {"tools": [{"toolSpec": verdict_tool_spec(list(SUB_SCORES[dimension]))}],
                           "toolChoice": {"tool": {"name": TOOL_NAME}}},
        }
        for _ in range(self.max_attempts):
            self.calls += 1
            try:
                reply = self.client.converse(**params)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "ThrottlingException":
                    self.throttled += 1
                    time.sleep(self.retry_pause_s)
                    continue
                return None
            try:
                return parse_verdict(reply, [sub_score]).sub_scores[sub_score]
            except InvalidJudgeOutput:
                return None
        return None

    def evaluate(self, case: TestCase) -> dict[str, Any]:
        """The case's composite from 15 judged sub-scores (None when any of them failed)."""
        weights = self.rubric.weights_for(case.intent)
        dimension_scores: dict[str, float] = {}
        unscored = False
        for dimension in DIMENSIONS:
            values = {name: self._ask(dimension, name, case) for name in SUB_SCORES[dimension]}
            if any(v is None for v in values.values()):
                unscored = True
                continue
            sub_weights = self.rubric.sub_score_weights[dimension]
            total = sum(sub_weights.values())
            dimension_scores[dimension] = sum(v * sub_weights[n] for n, v in values.items()) / total
        composite = None if unscored else sum(weights[d] * dimension_scores[d] for d in DIMENSIONS)
        return {"test_id": case.test_id, "unscored": unscored, "composite": composite}
