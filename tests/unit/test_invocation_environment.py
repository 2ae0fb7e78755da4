"""Each invocation the local engine runs sees its own function's variables, whatever runs beside it
(the handlers run at once on moto's threads; nothing process-wide is swapped)."""

from __future__ import annotations

import os
import threading

from fmquality.config.environment import function_environment, invocation_environment
from handlers.env import ScorerEnv, load_env


def test_concurrent_invocations_each_read_their_own_dimension(monkeypatch):
    monkeypatch.setenv("TABLE_NAME", "the-process-table")
    barrier, seen = threading.Barrier(4), {}
    common = {"BUCKET_NAME": "b", "EVENT_BUS_NAME": "e"}

    def invoke(dimension: str) -> None:
        with invocation_environment({**common, "DIMENSION": dimension}):
            barrier.wait()  # every invocation is inside its own environment at the same time
            seen[dimension] = load_env(ScorerEnv).dimension, function_environment()["TABLE_NAME"]

    threads = [threading.Thread(target=invoke, args=(d,))
               for d in ("relevance", "factual_accuracy", "consistency", "fluency")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Its own DIMENSION; what the function does not set (TABLE_NAME here) shows through from the process.
    assert seen == {d: (d, "the-process-table") for d in ("relevance", "factual_accuracy", "consistency", "fluency")}
    assert "DIMENSION" not in os.environ and function_environment() is os.environ
