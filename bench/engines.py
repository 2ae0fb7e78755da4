"""`python -m bench engines`: the local state-machine engine against the direct engine (issue 19).

The golden set (with its catalog) runs through ``fmquality run`` on each engine, each run in a fresh
process (``python -m bench.engines --measure ENGINE``) so that its peak memory is its own:

  offline   the offline judge: wall time of the command (``cli.main``, imports done) and peak
            resident set of the command's processes together (``cores.TreeMemory``, sampled from the
            bench's own process so that sampling takes no time from the measured one: the direct engine
            scores in worker processes), with the direct engine also at one worker (``--workers 1``,
            the engine the first measurements compared against); the item results of the engines
            must be the same
  standin   the Bedrock judge against ``bench.standin`` (300 ms per call, 20 requests per second,
            the bucket holding one second's worth), reached through ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``
            so each engine builds its client as it always does; a fresh verdict cache per run (the
            CLI's default set-up for Bedrock, nothing cached beforehand): wall time, calls, throttles
            and the most judge calls in flight at once (the stand-in counts them)

Both engines run at their defaults: the direct engine's adaptive concurrency (starts at 4, up to 64),
the state machine's Map at Prepare's default MaxConcurrency.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT, shown
from bench.catalog_scale import _peak_rss_mb
from bench.cores import TreeMemory

ENGINES = ("direct", "stepfunctions-local")
TARGETS = {
    "offline_wall_ratio_max": 3.0,
    "offline_peak_ratio_max": 2.0,
    "standin_in_flight_min": 8,
    "standin_wall_ratio_max": 1.5,
}
# The fields of an item result the two engines must agree on (run_id and timings aside).
COMPARED = ("test_id", "status", "passed", "composite_score", "failure_reasons", "dimension_scores", "error")


def measure(engine: str, judge: str, dataset: str, catalog: str, endpoint: str | None,
            workers: int | None = None) -> dict[str, Any]:
    """One ``fmquality run`` in this process: exit code, wall time, peak memory, item results."""
    if endpoint:
        os.environ.update({"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint, "AWS_ACCESS_KEY_ID": "standin",
                           "AWS_SECRET_ACCESS_KEY": "standin", "AWS_SESSION_TOKEN": "standin",
                           "AWS_DEFAULT_REGION": "us-east-1"})
    from fmquality.cli.main import main

    with tempfile.TemporaryDirectory(prefix="fmq-engines-") as tmp:
        out = Path(tmp) / "out"
        argv = ["run", "--engine", engine, "--judge", judge, "--dataset", dataset, "--catalog", catalog,
                "--out", str(out), "--run-id", f"bench-{engine}", "--quiet", "--cache-dir", str(Path(tmp) / "verdicts")]
        argv += ["--workers", str(workers)] if workers else []
        started = time.perf_counter()
        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
            code = main(argv)
        wall = time.perf_counter() - started
        peak = _peak_rss_mb()  # this process's own; _run_engine samples the tree (workers) from outside
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()] if (out / "results.jsonl").exists() else []
    return {"engine": engine, "judge": judge, "workers": workers, "exit_code": code, "wall_s": round(wall, 3), "peak_rss_mb": peak,
            "cases": len(rows), "unscored": sum(1 for r in rows if r.get("status") != "scored"),
            "results": [{k: r.get(k) for k in COMPARED} for r in rows]}


def _run_engine(engine: str, judge: str, args: argparse.Namespace, out: Path, endpoint: str | None = None,
                workers: int | None = None) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.engines", "--measure", engine, "--judge", judge,
               "--dataset", args.dataset, "--catalog", args.catalog, "--out", str(out)]
    command += ["--workers", str(workers)] if workers else []
    if endpoint:
        command += ["--endpoint", endpoint]
    # The process tree's memory is sampled from here: sampling inside the measured process would take
    # the GIL from an engine that runs on threads (the state machine) and slow it down.
    with subprocess.Popen(command, cwd=ROOT) as child, TreeMemory(root=child.pid) as memory:
        if child.wait() != 0:
            raise subprocess.CalledProcessError(child.returncode, command)
    row = json.loads(out.read_text(encoding="utf-8"))
    row["peak_rss_mb"] = max(row["peak_rss_mb"], round(memory.peak_kib / 1024, 1))
    return row


def _compared(direct: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """The two runs (their item results taken out) and the ratio of their wall times; the item results
    must be the same, keyed by test_id."""
    by_id = [{r["test_id"]: r for r in run.pop("results")} for run in (direct, machine)]
    return {"direct": direct, "stepfunctions_local": machine,
            "wall_ratio": round(machine["wall_s"] / direct["wall_s"], 2),
            "same_item_results": bool(by_id[0]) and by_id[0] == by_id[1]}


def _offline(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    runs = {}
    for engine in ENGINES:
        print(f"offline judge, {engine} ...", flush=True)
        runs[engine] = _run_engine(engine, "offline", args, tmp / f"offline-{engine}.json")
        print(f"    {runs[engine]['wall_s']} s, peak {runs[engine]['peak_rss_mb']} MB", flush=True)
    print("offline judge, direct --workers 1 ...", flush=True)
    one = _run_engine("direct", "offline", args, tmp / "offline-direct-1.json", workers=1)
    print(f"    {one['wall_s']} s, peak {one['peak_rss_mb']} MB", flush=True)
    direct, machine = runs["direct"], runs["stepfunctions-local"]
    same_as_one_worker = {r["test_id"]: r for r in one.pop("results")} == {r["test_id"]: r for r in direct["results"]}
    return {**_compared(direct, machine), "peak_ratio": round(machine["peak_rss_mb"] / direct["peak_rss_mb"], 2),
            "direct_one_worker": one, "wall_ratio_vs_one_worker": round(machine["wall_s"] / one["wall_s"], 2),
            "same_item_results_one_worker": same_as_one_worker}


def _standin(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bench.standin import BedrockStandin

    runs = {}
    with BedrockStandin(latency_s=args.latency_ms / 1000.0, requests_per_second=args.rps, burst=args.burst,
                        keep_bodies=False, max_lifetime_s=3600) as standin:
        for engine in ENGINES:
            standin.reset()
            standin.set_quota(requests_per_second=args.rps, burst=args.burst)  # a full bucket for each
            print(f"Bedrock stand-in ({args.latency_ms:.0f} ms, {args.rps:g} rps), {engine} ...", flush=True)
            row = _run_engine(engine, "bedrock", args, tmp / f"standin-{engine}.json", endpoint=standin.url)
            stats = standin.stats()
            row.update({"judge_calls": stats["ok"], "throttled": stats["throttled"],
                        "max_in_flight": stats["max_in_flight"],
                        "calls_per_case": round(stats["ok"] / row["cases"], 3) if row["cases"] else None})
            runs[engine] = row
            print(f"    {row['wall_s']} s, {row['judge_calls']} calls, {row['throttled']} throttled, "
                  f"at most {row['max_in_flight']} in flight", flush=True)
    return _compared(runs["direct"], runs["stepfunctions-local"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fmq-engines-") as tmp:
        offline = _offline(args, Path(tmp))
        standin = _standin(args, Path(tmp))
    wall, peak = TARGETS["offline_wall_ratio_max"], TARGETS["offline_peak_ratio_max"]
    in_flight, standin_wall = TARGETS["standin_in_flight_min"], TARGETS["standin_wall_ratio_max"]
    targets = {
        f"offline: state machine wall <= {wall:g} x direct": offline["wall_ratio"] <= wall,
        f"offline: state machine peak memory <= {peak:g} x direct": offline["peak_ratio"] <= peak,
        "offline: same item results on both engines (and at 1 worker)": offline["same_item_results"]
        and offline["same_item_results_one_worker"],
        f"stand-in: state machine judge calls in flight >= {in_flight}":
            standin["stepfunctions_local"]["max_in_flight"] >= in_flight,
        f"stand-in: state machine wall <= {standin_wall:g} x direct": standin["wall_ratio"] <= standin_wall,
    }
    return {
        "workload": {
            "dataset": shown(args.dataset), "catalog": shown(args.catalog),
            "command": "fmquality run --engine ENGINE --judge offline|bedrock (defaults otherwise), a fresh process "
                       "per run; wall_s is the command's own time (imports done), peak_rss_mb its VmHWM",
            "standin": {"latency_ms": args.latency_ms, "quota_rps": args.rps, "burst": args.burst or max(1.0, args.rps)},
        },
        "offline": offline,
        "standin": standin,
        "targets": targets,
        "bench_wall_s": round(time.perf_counter() - started, 1),
    }


def format_summary(result: dict[str, Any]) -> str:
    off, sti = result["offline"], result["standin"]
    lines = [f"{'':>28}{'direct':>12}{'state machine':>16}{'ratio':>8}",
             f"{'offline wall s, 1 worker':>28}{off['direct_one_worker']['wall_s']!s:>12}"
             f"{off['stepfunctions_local']['wall_s']!s:>16}{off['wall_ratio_vs_one_worker']!s:>8}"]
    for label, block, figure, ratio in (("offline wall s", off, "wall_s", off["wall_ratio"]),
                                        ("offline peak MB", off, "peak_rss_mb", off["peak_ratio"]),
                                        ("stand-in wall s", sti, "wall_s", sti["wall_ratio"]),
                                        ("stand-in max in flight", sti, "max_in_flight", "")):
        lines.append(f"{label:>28}{block['direct'][figure]!s:>12}{block['stepfunctions_local'][figure]!s:>16}"
                     f"{ratio!s:>8}")
    lines += [f"  {'met' if ok else 'MISSED'}: {name}" for name, ok in result["targets"].items()]
    return "\n".join(lines)


def _worker(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.engines",
                                description="One run of the engines scenario (run by `python -m bench engines`).")
    p.add_argument("--measure", required=True, choices=ENGINES)
    p.add_argument("--judge", required=True, choices=("offline", "bedrock"))
    p.add_argument("--dataset", required=True)
    p.add_argument("--catalog", required=True)
    p.add_argument("--endpoint", help="the Bedrock stand-in's URL (judge bedrock)")
    p.add_argument("--workers", type=int, help="direct engine: scoring processes (default: the engine's)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    figures = measure(args.measure, args.judge, args.dataset, args.catalog, args.endpoint, args.workers)
    Path(args.out).write_text(json.dumps(figures), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
