"""The direct engine's worker processes (engines.pool): the same results as scoring in this process, in
input order, and every case ends with a result or an error record, also when a worker dies."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

from fmquality.config.rubric import load_rubric
from fmquality.engines.direct import JudgeOptions, make_judge
from fmquality.engines.pool import WORKER_DIED, ArmScoring, score_in_processes
from fmquality.judges.offline import OfflineJudge
from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.run.evaluate import evaluate_case
from fmquality.run.summary import result_line

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "datasets" / "mangaassist" / "golden.jsonl"
CATALOG = REPO / "datasets" / "mangaassist" / "catalog.json"
FATAL_CASE_SUFFIX = "-good"  # the dying judge kills its worker on the first such case it is asked about


class DyingJudge(OfflineJudge):
    """The offline judge, but the process dies (as on a crash in native code) on one chosen case."""

    def __init__(self, fatal_test_id: str) -> None:
        super().__init__()
        self.fatal_test_id = fatal_test_id

    def judge(self, request, rubric):
        if request.case.test_id == self.fatal_test_id:
            os._exit(70)
        return super().judge(request, rubric)


def dying_judge(fatal_test_id: str) -> DyingJudge:
    return DyingJudge(fatal_test_id)


def _cases(count: int):
    return load_dataset(str(GOLDEN), load_catalog(str(CATALOG))).cases[:count]


def _lines_without_run_timing(lines: list[str]) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in ("latency_ms", "duration_ms")} for line in lines]


def test_workers_score_as_this_process_does_in_input_order():
    rubric, cases = load_rubric(), _cases(10)
    scoring = ArmScoring(rubric, partial(make_judge, JudgeOptions(name="offline"), rubric), "pool-test", None,
                         "candidate")
    scored = list(score_in_processes(cases, scoring, workers=2, batch_size=3))
    judge = make_judge(JudgeOptions(name="offline"), rubric)
    here = [result_line(evaluate_case(case, rubric, judge, run_id="pool-test", mode=None, arm="candidate"))
            for case in cases]
    assert [s.index for s in scored] == list(range(len(cases)))
    assert _lines_without_run_timing([s.line for s in scored]) == _lines_without_run_timing(here)
    assert [s.summary.test_id for s in scored] == [c.test_id for c in cases]


def test_a_case_that_kills_its_worker_is_an_error_record_and_the_others_are_scored():
    rubric, cases = load_rubric(), _cases(8)
    fatal = next(c.test_id for c in cases if c.test_id.endswith(FATAL_CASE_SUFFIX))
    scoring = ArmScoring(rubric, partial(dying_judge, fatal), "pool-test", None, "candidate")
    scored = list(score_in_processes(cases, scoring, workers=2, batch_size=2))
    by_id = {s.summary.test_id: s.summary for s in scored}
    assert [s.summary.test_id for s in scored] == [c.test_id for c in cases]  # nothing lost, in order
    assert by_id[fatal].status == "error" and WORKER_DIED in by_id[fatal].error
    assert all(summary.status == "scored" for test_id, summary in by_id.items() if test_id != fatal)
