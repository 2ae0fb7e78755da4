"""Names, a fake Lambda context, the sample dataset and small helpers shared by the moto tests."""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"
TABLE = "fmq-eval-test"
BUCKET = "fmq-data-test"
BUS = "fmq-bus-test"
DATASET_KEY = "datasets/mangaassist/golden.jsonl"
DATASET_URI = f"s3://{BUCKET}/{DATASET_KEY}"
DATASET_ID = "datasets/mangaassist/golden"


@dataclass
class FakeLambdaContext:
    """What Powertools' inject_lambda_context reads from the Lambda context."""

    function_name: str = "fmquality-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:fmquality-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/fmquality-test"
    log_stream_name: str = "2025/01/01/[$LATEST]test"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def load_event(name: str, **overrides: Any) -> dict[str, Any]:
    event = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
    event.update(copy.deepcopy(overrides))
    return event


# A small dataset of realistic cases: a policy FAQ, a product question with its catalog entry, an
# order-tracking question answered from the page context.
CASES: list[dict[str, Any]] = [
    {
        "test_id": "faq-returns-window",
        "intent": "faq",
        "query": "How long do I have to return a manga?",
        "response": "You can return unopened items within 15 days of delivery, and your refund reaches the "
                    "original payment method within 5-7 business days.",
        "retrieved_chunks": ["Returns: unopened items can be returned within 15 days of delivery. Refunds are "
                             "issued to the original payment method within 5-7 business days."],
        "expected_facts": ["unopened items can be returned within 15 days of delivery"],
        "tags": ["policy", "regression"],
    },
    {
        "test_id": "pq-uzumaki-price",
        "intent": "product_question",
        "query": "How much is Uzumaki and is it in stock?",
        "response": "Uzumaki by Junji Ito is $22.99 and it is in stock, so it can ship right away.",
        "catalog": [{"asin": "B0UZUMAKI1", "title": "Uzumaki", "price": 22.99, "currency": "USD",
                     "availability": "in_stock", "author": "Junji Ito"}],
        "expected_products": ["B0UZUMAKI1"],
        "page_context": {"current_asin": "B0UZUMAKI1"},
    },
    {
        "test_id": "order-eta",
        "intent": "order_tracking",
        "query": "Where is my order?",
        "response": "Your order 112-7 shipped on March 3 and should arrive by March 6.",
        "page_context": {"order": {"order_id": "112-7", "status": "shipped", "ship_date": "March 3", "eta": "March 6"}},
        "expected_facts": ["shipped on March 3", "arrive by March 6"],
        "source_channel": "web",
    },
]


def jsonl(rows: list[Any]) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode("utf-8")


def dimension_score(dimension: str, score: float = 1.0, **extra: Any) -> dict[str, Any]:
    names = {"relevance": ["intent_relevance", "product_relevance"],
             "factual_accuracy": ["fact_coverage", "no_hallucination"],
             "consistency": ["intra_turn", "persona"],
             "fluency": ["grammar", "tone", "formatting"],
             "safety": ["policy_safety"]}[dimension]
    base = {"dimension": dimension, "status": "scored", "score": score, "confidence": 1.0,
            "sub_scores": {n: score for n in names}, "judge_calls": 1,
            "usage": {"calls": 1, "input_tokens": 900, "output_tokens": 100}}
    base.update(extra)
    return base


def all_scores(score: float = 1.0) -> list[dict[str, Any]]:
    from fmquality.schemes.mangaassist import DIMENSIONS

    return [dimension_score(d, score) for d in DIMENSIONS]


def put_dataset(s3, rows: list[Any], key: str = DATASET_KEY) -> str:
    s3.put_object(Bucket=BUCKET, Key=key, Body=jsonl(rows))
    return f"s3://{BUCKET}/{key}"


def read_json(s3, key: str) -> Any:
    return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def read_text(s3, key: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode("utf-8")
