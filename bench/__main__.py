"""`make bench` (`python -m bench [judge] [catalog]`, both by default): judge throughput and cost
against the local Bedrock stand-in, and the golden set against store-sized catalogs.

``judge``: the same workload (the golden dataset with its catalog) runs against ``bench.standin`` with a
realistic latency (300 ms per call) and quota (20 requests per second, the bucket holding one
second's worth), four ways:

  (a) per_dimension      our BedrockJudge through the direct engine: at most one call per dimension
                         per case, adaptive (AIMD) concurrency, full-jitter retries, verdict cache on
  (a') cache_rerun       (a) again with the verdict cache warm: no call expected
  (b) combined           the same with one call per case for every open dimension
  (c) naive              bench/naive.py: one call per sub-score (16 per case), one call at a time,
                         on a subset of the cases; its wall time is extrapolated to the whole set.
                         The speedup target is missed when it left any measured case unscored
                         (a baseline that did no work is no baseline)

``catalog``: bench/catalog_scale.py (the golden set against catalogs of 54, 5,000 and 50,000 products).

``aa``: bench/aa.py, the A/A test of the paired gate: candidate and control are the same recorded
answers, reworded per repetition and arm; the share of runs a paired rule fails is its false-positive
rate.

``size``: bench/answer_size.py, scoring time and peak memory against the size of one answer and of
its evidence (10 KB to 640 KB), and what the shipped size limit does with a 160 KB answer.

``engines``: bench/engines.py, the local state-machine engine against the direct engine (offline judge
and the Bedrock stand-in).

``cores``: bench/cores.py, the direct engine with the offline judge on 1 and 2 worker processes, and
its peak memory at 500 and 5,000 cases.

``drift``: bench/drift_sim.py, the stream drift detector on a simulated day and week of judged
traffic: minutes to flag a 10 % and a 2 % drop, false alarms per stratum-week.

All write bench/results.json (the judge's figures at the top level, the catalog's under
``catalog_scale``, the A/A test's under ``aa``, the others under their scenario's name). Not part of
`make test`. See docs/performance.md for the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import ROOT, aa, answer_size, catalog_scale, cores, drift_sim, engines, shown, warm_up
from bench.naive import NaiveEvaluator
from bench.standin import BedrockStandin
from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.judges.cache import CachingJudge, LocalVerdictStore
from fmquality.judges.concurrency import AimdController
from fmquality.report.build import build_report
from fmquality.config.rubric import load_rubric

TARGETS = {
    "utilization_min": 0.9,
    "calls_per_case_max_per_dimension": 5.0,  # one call per dimension at most
    "calls_per_case_max_combined": 1.0,
    "cache_rerun_calls": 0,
    "speedup_vs_naive_min": 20.0,
}


SCENARIOS = ("judge", "catalog", "aa", "size", "engines", "cores", "drift")


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(","))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                   help=f"what to run, of {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--dataset", default=str(ROOT / "datasets/mangaassist/golden.jsonl"))
    p.add_argument("--catalog", default=str(ROOT / "datasets/mangaassist/catalog.json"))
    p.add_argument("--latency-ms", type=float, default=300.0, help="stand-in latency per call (default 300)")
    p.add_argument("--rps", type=float, default=20.0, help="stand-in quota, requests per second (default 20)")
    p.add_argument("--burst", type=float, default=None, help="request bucket size (default: one second's worth)")
    p.add_argument("--concurrency", type=int, default=8, help="where the AIMD controller starts (default 8)")
    p.add_argument("--max-concurrency", type=int, default=64)
    p.add_argument("--naive-cases", type=int, default=20,
                   help="cases the naive evaluator runs (evenly spaced; 0 = all, about 12 minutes)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N cases (quick runs)")
    p.add_argument("--catalog-sizes", type=_sizes, default=catalog_scale.DEFAULT_SIZES, metavar="N,N,...",
                   help="catalog scenario: products per catalog; the smallest is the shipped catalog "
                        "(default 54,5000,50000)")
    p.add_argument("--catalog-seed", type=int, default=catalog_scale.DEFAULT_SEED,
                   help="catalog scenario: seed of the synthetic products")
    p.add_argument("--catalog-repeats", type=int, default=3,
                   help="catalog scenario: runs per size, each in a fresh process (default 3)")
    p.add_argument("--aa-repetitions", type=int, default=aa.DEFAULT_REPETITIONS,
                   help=f"aa scenario: A/A runs (default {aa.DEFAULT_REPETITIONS}; the target needs at least "
                        f"{aa.TARGETS['repetitions_min']})")
    p.add_argument("--aa-seed", type=int, default=aa.DEFAULT_SEED, help="aa scenario: seed of the rewording")
    p.add_argument("--cores-cases", type=int, default=cores.DEFAULT_THROUGHPUT_CASES,
                   help="cores scenario: cases scored with 1 and with 2 workers")
    p.add_argument("--cores-memory-cases", type=_sizes, default=cores.DEFAULT_MEMORY_CASES, metavar="N,N",
                   help="cores scenario: run sizes whose peak memory is compared")
    p.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    return p


def _quota_bound(calls: int, rps: float, burst: float) -> float:
    """The shortest time the quota allows for ``calls``: the bucket starts full (``burst`` calls at
    once), then refills at ``rps``."""
    return round(max(0.0, calls - burst) / rps, 3)


def run_engine(label: str, cases, rubric, judge, standin: BedrockStandin, args, mode: str) -> dict[str, Any]:
    standin.reset()
    standin.set_quota(requests_per_second=args.rps, burst=args.burst)  # a full bucket for every mode
    controller = AimdController(args.concurrency, maximum=args.max_concurrency)
    started = time.perf_counter()
    results = evaluate_cases(cases, rubric, judge, run_id=f"bench-{label}", concurrency=args.concurrency,
                             mode=mode, controller=controller)
    wall = time.perf_counter() - started
    stats = standin.stats()
    report = build_report(results, rubric, run_id=f"bench-{label}", dataset=args.dataset, judge="bedrock",
                          judge_model_id=judge.model_id)
    ids = [r.test_id for r in results]
    admitted = stats["ok"]
    burst = args.burst or max(1.0, args.rps)
    return {
        "cases": len(results),
        "wall_s": round(wall, 3),
        "judge_calls": admitted,
        "calls_per_case": round(admitted / len(results), 3),
        "throttled": stats["throttled"],
        "requests": stats["requests"],
        "unscored": sum(1 for r in results if r.status != "scored"),
        "lost": len({c.test_id for c in cases} - set(ids)),
        "double_counted": len(ids) - len(set(ids)),
        "quota_bound_s": _quota_bound(admitted, args.rps, burst),
        "recorded_judge_attempts": report.judge_usage.calls,
        "cached_verdicts": report.judge_usage.cached_verdicts,
        "input_tokens": report.judge_usage.input_tokens,
        "output_tokens": report.judge_usage.output_tokens,
        "cache_read_tokens": report.judge_usage.cache_read_tokens,
        "cache_write_tokens": report.judge_usage.cache_write_tokens,
        "usd_estimate": report.judge_usage.usd_estimate,
        "max_in_flight": stats["max_in_flight"],
        "controller": controller.snapshot(),
    }


def run_naive(cases, rubric, standin: BedrockStandin, args, model_id: str, total_cases: int) -> dict[str, Any]:
    standin.reset()
    standin.set_quota(requests_per_second=args.rps, burst=args.burst)
    if args.naive_cases and args.naive_cases < len(cases):
        step = len(cases) / args.naive_cases
        subset = [cases[int(i * step)] for i in range(args.naive_cases)]
    else:
        subset = list(cases)
    naive = NaiveEvaluator(standin.client(), model_id, rubric)
    started = time.perf_counter()
    outcomes = [naive.evaluate(case) for case in subset]
    wall = time.perf_counter() - started
    stats = standin.stats()
    per_case = wall / len(subset)
    calls_per_case = stats["ok"] / len(subset)
    scale = total_cases / len(subset)
    from fmquality.config.pricing import usd_estimate
    from fmquality.domain.scores import JudgeUsage

    usage = JudgeUsage(calls=stats["ok"], input_tokens=stats["input_tokens"], output_tokens=stats["output_tokens"],
                       cache_read_tokens=stats["cache_read_tokens"], cache_write_tokens=stats["cache_write_tokens"])
    measured_usd = usd_estimate(usage, rubric, model_id)
    burst = args.burst or max(1.0, args.rps)
    extrapolated = len(subset) < total_cases
    unscored = [o["test_id"] for o in outcomes if o["unscored"]]
    return {
        "cases": total_cases,
        "wall_s": round(per_case * total_cases, 3),
        "judge_calls": round(calls_per_case * total_cases) if extrapolated else stats["ok"],
        "calls_per_case": round(calls_per_case, 3),
        "throttled": stats["throttled"],
        # Of the measured cases: a baseline that scored nothing did no comparable work.
        "scored": len(subset) - len(unscored),
        "unscored": len(unscored),
        "unscored_cases": unscored,
        "quota_bound_s": _quota_bound(round(calls_per_case * total_cases), args.rps, burst),
        "input_tokens": round(stats["input_tokens"] * scale),
        "output_tokens": round(stats["output_tokens"] * scale),
        "usd_estimate": None if measured_usd is None else round(measured_usd * scale, 4),
        "extrapolated": extrapolated,
        "measured": {
            "cases": len(subset),
            "selection": f"{len(subset)} evenly spaced cases of the {total_cases} (every {len(cases) / len(subset):.2f}th)",
            "wall_s": round(wall, 3),
            "judge_calls": stats["ok"],
            "wall_s_per_case": round(per_case, 4),
        },
    }


def _baseline_scored(baseline: dict[str, Any]) -> str:
    """How many of the cases a baseline measured it scored, as the report line states it."""
    measured = baseline["scored"] + baseline["unscored"]
    return f"scored {baseline['scored']}/{measured} measured cases"


def judge_targets(modes: dict[str, Any], utilization: float, speedup: float, rerun_calls: int) -> dict[str, bool]:
    """The judge scenario's targets, met or missed. The speedup is met only against a naive baseline
    that scored every case it measured, and its line says how many it scored."""
    a, naive = modes["per_dimension"], modes["naive"]
    return {
        "utilization >= 0.9": utilization >= TARGETS["utilization_min"],
        "per_dimension unscored == 0 and nothing lost": a["unscored"] == 0 and a["lost"] == 0
        and a["double_counted"] == 0,
        "per_dimension calls_per_case <= 5": a["calls_per_case"] <= TARGETS["calls_per_case_max_per_dimension"],
        "combined calls_per_case <= 1": modes["combined"]["calls_per_case"] <= TARGETS["calls_per_case_max_combined"],
        "cache_rerun_calls == 0": rerun_calls == TARGETS["cache_rerun_calls"],
        f"speedup_vs_naive >= 20, naive baseline {_baseline_scored(naive)} (all needed)":
        speedup >= TARGETS["speedup_vs_naive_min"] and naive["unscored"] == 0,
    }


def judge_throughput(args) -> dict[str, Any]:
    rubric = load_rubric()
    loaded = load_dataset(args.dataset, load_catalog(args.catalog) if args.catalog else None)
    if loaded.errors:
        print(f"{len(loaded.errors)} invalid line(s) in {args.dataset}", file=sys.stderr)
        raise SystemExit(2)
    cases = loaded.cases[: args.limit] if args.limit else loaded.cases
    model_id = rubric.judge.model_id
    latency = args.latency_ms / 1000.0
    warm_up(cases[0], rubric)
    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    with BedrockStandin(latency_s=latency, requests_per_second=args.rps, burst=args.burst, keep_bodies=False,
                        max_lifetime_s=1800) as standin, tempfile.TemporaryDirectory(prefix="fmq-bench-") as tmp:
        client = standin.client(max_pool_connections=args.max_concurrency + 8, read_timeout=30)

        def judge(cache_folder: str) -> CachingJudge:
            # The CLI's default set-up for Bedrock: the real judge behind the local verdict cache.
            return CachingJudge(BedrockJudge(model_id, client), LocalVerdictStore(Path(tmp) / cache_folder))

        per_dimension = judge("per_dimension")
        print(f"(a) per_dimension: {len(cases)} cases ...", flush=True)
        results["per_dimension"] = run_engine("per-dimension", cases, rubric, per_dimension, standin, args,
                                              "per_dimension")
        print(f"    {results['per_dimension']['wall_s']} s", flush=True)
        print("(a') per_dimension again, verdict cache warm ...", flush=True)
        results["per_dimension_cache_rerun"] = run_engine("cache-rerun", cases, rubric, per_dimension, standin,
                                                          args, "per_dimension")
        print(f"    {results['per_dimension_cache_rerun']['wall_s']} s", flush=True)
        print("(b) combined ...", flush=True)
        results["combined"] = run_engine("combined", cases, rubric, judge("combined"), standin, args, "combined")
        print(f"    {results['combined']['wall_s']} s", flush=True)
        print(f"(c) naive on {args.naive_cases or len(cases)} cases ...", flush=True)
        results["naive"] = run_naive(cases, rubric, standin, args, model_id, len(cases))
        print(f"    {results['naive']['measured']['wall_s']} s measured, {_baseline_scored(results['naive'])}",
              flush=True)

    a, naive = results["per_dimension"], results["naive"]
    utilization = round(a["quota_bound_s"] / a["wall_s"], 3)
    speedup = round(naive["wall_s"] / a["wall_s"], 2)
    rerun_calls = results["per_dimension_cache_rerun"]["requests"]
    return {
        "workload": {
            "dataset": shown(args.dataset),
            "cases": len(cases),
            "judge_model_id": model_id,
            "latency_ms": args.latency_ms,
            "quota_rps": args.rps,
            "burst": args.burst or max(1.0, args.rps),
            "initial_concurrency": args.concurrency,
            "max_concurrency": args.max_concurrency,
            "quota_bound_s": "max(0, judge_calls - burst) / quota_rps: the bucket starts full, then refills",
            "judge_calls": "calls the quota admitted (HTTP 200); throttled 429s are counted apart",
            "naive": "one call per sub-score (16 per case), one at a time, no checks, no cache; run on a subset "
                     "and extrapolated per case" if naive["extrapolated"] else "all cases",
            "naive_scored": "scored / unscored count the naive cases measured, not the extrapolated total",
        },
        "modes": results,
        "utilization": utilization,
        "speedup_vs_naive": speedup,
        "cache_rerun_calls": rerun_calls,
        "targets": judge_targets(results, utilization, speedup, rerun_calls),
        "bench_wall_s": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        _parser().error(f"unknown scenario(s) {', '.join(sorted(unknown))}; choose from {', '.join(SCENARIOS)}")
    scenarios = args.scenarios or SCENARIOS
    out: dict[str, Any] = {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
    }
    met = True
    if "judge" in scenarios:
        out.update(judge_throughput(args))
        print(json.dumps({k: out[k] for k in ("utilization", "speedup_vs_naive", "cache_rerun_calls", "targets")},
                         indent=2))
        met = all(out["targets"].values())
    if "catalog" in scenarios:
        out["catalog_scale"] = catalog_scale.run(args)
        print(catalog_scale.format_summary(out["catalog_scale"]))
        met = met and all(out["catalog_scale"]["targets"].values())
    if "aa" in scenarios:
        out["aa"] = aa.run(args)
        print(aa.format_summary(out["aa"]))
        met = met and all(out["aa"]["targets"].values())
    if "size" in scenarios:
        out["answer_size"] = answer_size.run(args)
        print(answer_size.format_summary(out["answer_size"]))
        met = met and all(out["answer_size"]["targets"].values())
    if "engines" in scenarios:
        out["engines"] = engines.run(args)
        print(engines.format_summary(out["engines"]))
        met = met and all(out["engines"]["targets"].values())
    if "cores" in scenarios:
        out["cores"] = cores.run(args)
        print(cores.format_summary(out["cores"]))
        met = met and all(out["cores"]["targets"].values())
    if "drift" in scenarios:  # bench/drift_sim.py: the stream drift detector on simulated traffic
        out["drift"] = drift_sim.run(args)
        print(drift_sim.format_summary(out["drift"]))
        met = met and all(out["drift"]["targets"].values())
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
