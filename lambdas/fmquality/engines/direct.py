"""The direct engine: a run scored in this process (`fmquality run --engine direct`, `fmquality
calibrate`), over the same ``run`` functions as the state machine's handlers: the targets built by
``run.targets``, every case evaluated by ``run.evaluate``, the report assembled by ``run.aggregate`` and
its files put by ``run.layout`` into the --out folder (``engines.outputs.FolderStorage``).

Faster than the state machine (no embedded AWS), and the only engine for the combined judge mode and
scripted verdict files. Target kinds are not checked against a deployment's policy: it runs on the
operator's machine.

On every core: the judges that compute rather than wait (offline, scripted) score the recorded
answers in worker processes (``engines.pool``; ``JudgeOptions.workers``, by default one per core, and
in this process for a run too small to pay for starting them); the Bedrock judge, and any arm whose
answers a target generates, run on threads here, gated by the AIMD controller (they wait on the
network, not the CPU).

Memory flat in the number of cases: each result is written to its results file as it finishes (in
input order, under a temporary name renamed into place at the end) and only its ``ResultSummary``
(``run.summary``: what the report reads) is kept; the report is built from the summaries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fmquality.domain.case import TestCase
from fmquality.domain.report import RunReport
from fmquality.domain.results import Arm, EvaluationResult
from fmquality.engines.outputs import FolderStorage, StreamedFile
from fmquality.engines.pool import ArmScoring, available_cores, score_in_processes
from fmquality.run import layout
from fmquality.adapters.review_queue import LOCAL_QUEUE_FILE, LocalReviewQueue
from fmquality.run.aggregate import RunFacts, assemble_report, report_files
from fmquality.run.baseline import dataset_sha256
from fmquality.run.gate_review import queue_failing_items
from fmquality.run.evaluate import evaluate_cases, iter_evaluated
from fmquality.run.summary import ResultSummary, result_line, summarize
from fmquality.run.prepare import Selection
from fmquality.run.targets import direct_target
from fmquality.targets.aws import default_client_factory
from fmquality.targets.base import Target, TargetSpec

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric
    from fmquality.judges.base import Judge

ENGINE_NAME = "direct"
# Called once per arm with (arm, number of cases); returns what to call as each result comes in.
ArmProgress = Callable[[str, int], Callable[[ResultSummary], None] | None]
# Judges that compute rather than wait: scored in worker processes.
CPU_BOUND_JUDGES = ("offline", "scripted")
# By default a run gets a worker per core only when each has at least this many cases: starting one
# costs about as much as scoring that many.
MIN_CASES_PER_WORKER = 25


@dataclass(frozen=True)
class JudgeOptions:
    """How the cases are judged: the judge, its verdict cache, and how many cases at once."""

    name: str = "offline"
    model_id: str | None = None
    script: str | None = None  # scripted judge: JSON file {"test_id/dimension": verdict | error}
    cache: bool = True
    cache_dir: str | None = None
    concurrency: int = 4
    max_concurrency: int = 64
    mode: str | None = None  # per_dimension | combined (default: the rubric's judge.mode)
    workers: int | None = None  # processes for a CPU-bound judge (default: one per core; 1: this process)


def make_judge(options: JudgeOptions, rubric: "Rubric | None" = None) -> "Judge":
    from fmquality.judges.factory import make_judge as judge_by_name

    judge = judge_by_name(options.name, options.model_id, rubric=rubric)
    if options.name == "scripted" and options.script:
        from fmquality.judges.base import JudgeVerdict

        raw = json.loads(Path(options.script).read_text(encoding="utf-8"))
        for key, entry in raw.items():
            test_id, dimension = key.rsplit("/", 1)
            judge.script[(test_id, dimension)] = entry if isinstance(entry, str) else JudgeVerdict.model_validate(entry)
    # The verdict cache: on by default for Bedrock (calls cost money and quota); the offline judge is
    # free, so caching it is pointless unless a cache folder is asked for explicitly.
    if options.cache and (options.name == "bedrock" or options.cache_dir):
        from fmquality.judges.cache import CachingJudge, LocalVerdictStore

        judge = CachingJudge(judge, LocalVerdictStore(options.cache_dir))
    return judge


def evaluate(cases: list[Any], rubric: "Rubric", judge: "Judge", run_id: str, options: JudgeOptions,
             on_result: Callable[[EvaluationResult], None] | None = None, target: Target | None = None,
             arm: str = "candidate") -> list[EvaluationResult]:
    """Every case of one arm scored in-process, full results kept (answered by ``target`` first, when
    there is one): what `fmquality calibrate` reads."""
    return evaluate_cases(cases, rubric, judge, run_id=run_id, concurrency=max(1, options.concurrency),
                          max_concurrency=max(1, options.max_concurrency), mode=options.mode, on_result=on_result,
                          target=target, arm=arm)


def worker_count(options: JudgeOptions, cases: int, target: Target | None) -> int:
    """The processes that score an arm: 1 (this process) for a judge that waits on the network or an
    arm a target answers; else ``options.workers``, by default one per core when the run is large
    enough (``MIN_CASES_PER_WORKER``)."""
    if options.name not in CPU_BOUND_JUDGES or target is not None:
        return 1
    if options.workers is not None:
        return max(1, min(options.workers, cases))
    return max(1, min(available_cores(), cases // MIN_CASES_PER_WORKER))


def score_arm(cases: list[TestCase], rubric: "Rubric", judge: "Judge", run_id: str, options: JudgeOptions,
              write: Callable[[str], None], on_result: Callable[[ResultSummary], None] | None = None,
              target: Target | None = None, arm: Arm = "candidate") -> list[ResultSummary]:
    """Every case of one arm scored, each results.jsonl line given to ``write`` in input order as it
    is ready; the summaries are kept (``worker_count`` says where the cases are scored)."""
    workers = worker_count(options, len(cases), target)
    summaries: list[ResultSummary] = []
    if workers > 1:
        scoring = ArmScoring(rubric, partial(make_judge, options, rubric), run_id, options.mode, arm)
        for scored in score_in_processes(cases, scoring, workers):
            write(scored.line)
            summaries.append(scored.summary)
            if on_result:
                on_result(scored.summary)
        if len(summaries) != len(cases):
            raise RuntimeError("the engine lost test cases")
        return summaries
    for result in iter_evaluated(cases, rubric, judge, run_id=run_id, concurrency=max(1, options.concurrency),
                                 max_concurrency=max(1, options.max_concurrency), mode=options.mode,
                                 target=target, arm=arm):
        write(result_line(result))
        summaries.append(summarize(result))
        if on_result:
            on_result(summaries[-1])
    return summaries


def parse_target_option(value: str | None, option: str) -> TargetSpec | None:
    """A --target/--control value as a TargetSpec (None when absent); a value starting with "{" is the
    JSON object form. ValueError names the option."""
    if value is None:
        return None
    try:
        raw = json.loads(value) if value.lstrip().startswith("{") else value
        return TargetSpec.parse(raw)
    except ValueError as exc:  # json and pydantic errors are ValueErrors
        raise ValueError(f"{option} {value!r}: {exc}") from exc


@dataclass(frozen=True)
class ArmTarget:
    """The target answering an arm, and the spec as the operator gave it (``ssm:`` before resolving)."""

    target: Target
    requested: TargetSpec


def judge_model_of(options: JudgeOptions, judge: "Judge") -> str | None:
    """The model that judges (a Bedrock judge only: the offline and scripted judges are no model)."""
    return judge.model_id if options.name == "bedrock" else None


def build_targets(values: dict[str, tuple[str | None, str]], rubric: "Rubric",
                  judge_model_id: str | None = None) -> dict[str, ArmTarget]:
    """The arms' targets from ``arm -> (option value, option name)``, ``ssm:`` resolved once for the run;
    an arm without a value has none (the candidate then scores the recorded responses). ValueError on a
    bad spec or a target generating with ``judge_model_id`` (``run.targets.check_judge_is_not_generator``);
    a missing module or an unreachable service propagates (the run could not be done)."""
    built: dict[str, ArmTarget] = {}
    client = None
    for arm, (value, option) in values.items():
        spec = parse_target_option(value, option)
        if spec is None:
            continue
        client = client or default_client_factory(spec.timeout_s)
        try:
            built[arm] = ArmTarget(direct_target(spec, rubric, client, judge_model_id), spec)
        except (ValueError, FileNotFoundError) as exc:
            raise ValueError(f"{option}: {exc}") from exc
        except ImportError as exc:
            raise ImportError(f"{option}: {exc}") from exc
    return built


def target_record(arm: ArmTarget | None) -> dict[str, Any] | None:
    """What report.json says answered: the spec's options (never a header value), id and version (read
    after the run: an endpoint's version is known once it has answered), and the ``ssm:`` parameter."""
    if arm is None:
        return None
    record = arm.target.spec.describe() | {"id": arm.target.id, "version": arm.target.version}
    if arm.requested.kind == "ssm":
        record["resolved_from"] = arm.requested.spec_string()
    return record


@dataclass(frozen=True)
class DirectRun:
    """One run's inputs as the command line gave them, the dataset already read and its subset chosen."""

    run_id: str
    dataset: str
    catalog: str | None
    trigger: str
    selection: Selection
    rejected_lines: int
    baseline: RunReport | None
    targets: dict[str, ArmTarget]


@dataclass(frozen=True)
class DirectOutcome:
    report: RunReport
    results_by_arm: dict[str, list[ResultSummary]]  # the full results are in the --out folder
    seconds: float


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_direct(run: DirectRun, rubric: "Rubric", judge: "Judge", options: JudgeOptions, out: Path,
               progress: ArmProgress | None = None) -> DirectOutcome:
    """Evaluate the candidate, then the control on the same cases (each arm generates and scores), then
    write the report files into ``out``: the results files put in place, then the report."""
    started, t0 = _now(), time.perf_counter()
    arms: list[Arm] = ["candidate"] + (["control"] if "control" in run.targets else [])
    by_arm: dict[str, list[ResultSummary]] = {}
    streams: list[StreamedFile] = []
    try:
        for arm in arms:
            on_result = progress(arm, len(run.selection.cases)) if progress else None
            arm_target = run.targets.get(arm)
            streams.append(StreamedFile(out / (layout.RESULTS if arm == "candidate" else layout.CONTROL_RESULTS)))
            by_arm[arm] = score_arm(run.selection.cases, rubric, judge, run.run_id, options, streams[-1].write,
                                    on_result=on_result, target=arm_target.target if arm_target else None, arm=arm)
        seconds = time.perf_counter() - t0
        report = _report(run, rubric, judge, options, by_arm, started)
        # A failed gate's failing items go to the run folder's review.jsonl; the report links them.
        queued = queue_failing_items(report, by_arm["candidate"], LocalReviewQueue(out), LOCAL_QUEUE_FILE)
        report = report.model_copy(update={"review_queue": queued})
        files = report_files(report, by_arm["candidate"], rubric)  # type: ignore[arg-type] - summaries
        for stream in streams:  # RUN_OUTPUTS order: the results files before the report's
            stream.publish()
        layout.write_outputs(FolderStorage(out), "", files)
    finally:
        for stream in streams:
            stream.discard()
    return DirectOutcome(report, by_arm, seconds)


def _dataset_content(path: str) -> dict[str, str | None]:
    """The dataset's content hash and version, as report.json records them (None: not a readable file)."""
    try:
        sha256 = dataset_sha256(Path(path).read_bytes())
    except OSError:
        return {}
    return {"dataset_sha256": sha256, "dataset_version": f"sha256:{sha256[:12]}"}


def _report(run: DirectRun, rubric: "Rubric", judge: "Judge", options: JudgeOptions,
            by_arm: dict[str, list[ResultSummary]], started: str) -> RunReport:
    facts = RunFacts(
        run_id=run.run_id, dataset=run.dataset, trigger=run.trigger, judge=options.name, engine=ENGINE_NAME,
        started_at=started, finished_at=_now(), rejected_lines=run.rejected_lines, catalog=run.catalog,
        filter_line=run.selection.filter_line, distribution=run.selection.distribution,
        judge_model_id=judge.model_id if options.name == "bedrock" else None, **_dataset_content(run.dataset))
    return assemble_report(by_arm, rubric, facts, baseline=run.baseline,  # type: ignore[arg-type] - summaries
                           target=target_record(run.targets.get("candidate")),
                           control_target=target_record(run.targets.get("control")))
