"""`python -m bench cores`: the direct engine with the offline judge on every core, and its memory
against the number of cases (issue 19).

The golden set is repeated with new test ids (``-r<n>`` appended) to the sizes the scenario needs.
Each measurement runs in its own process (``python -m bench.cores --measure``), which scores the set
as `fmquality run --engine direct --judge offline` does (``engines.direct.run_direct``, results and
report written to a scratch --out folder):

  throughput   ``--cores-cases`` cases (2,000) with 1 worker, then with 2 workers: cases per second
               of the scoring (the engine's own clock, as the CLI prints it) and of the whole run
               (dataset loaded, scored, report written)
  memory       a 500-case and a 5,000-case run with the default workers (one per core): the peak
               resident set of the run's processes together (the measuring process and every process
               it started), sampled every 20 ms, and the sum of each process's own peak (VmHWM), an
               upper bound of the first

Results must not depend on the workers: the 1-worker and 2-worker runs' results.jsonl and report.json
(timestamps aside) are compared byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import ROOT, shown

DEFAULT_THROUGHPUT_CASES = 2000
DEFAULT_MEMORY_CASES = (500, 5000)
TARGETS = {"speedup_2_workers_min": 1.7, "memory_largest_vs_smallest_max": 1.2}
SAMPLE_EVERY_S = 0.02


# -------------------------------------------------------------------------------------------------
# The workload
# -------------------------------------------------------------------------------------------------


def repeated_dataset(dataset: str, cases: int, path: Path) -> Path:
    """``cases`` lines of ``dataset`` repeated in order, each copy's test id suffixed ``-r<copy>``."""
    lines = [line for line in Path(dataset).read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as out:
        for n in range(cases):
            row = json.loads(lines[n % len(lines)])
            row["test_id"] = f"{row['test_id']}-r{n // len(lines)}"
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# -------------------------------------------------------------------------------------------------
# Memory of a process tree
# -------------------------------------------------------------------------------------------------


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field))
    except (OSError, StopIteration, ValueError):
        return 0


def _parents() -> dict[int, int]:
    """Every visible process's parent (read from /proc/<pid>/stat)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    # The command name is parenthesised and may hold spaces: the fields follow the last ")".
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def _tree(root: int) -> list[int]:
    parents = _parents()
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


class TreeMemory:
    """Samples the resident set of a process (this one by default) and all its descendants while a run
    goes on. Sampling reads /proc under the GIL: to time a process, sample it from another one."""

    def __init__(self, root: int | None = None) -> None:
        self.root = root  # whose tree: this process's by default
        self.peak_kib = 0
        self.hwm_kib: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def _sample(self) -> None:
        pids = _tree(self.root or os.getpid())
        self.peak_kib = max(self.peak_kib, sum(_status_kib(pid, "VmRSS:") for pid in pids))
        for pid in pids:
            self.hwm_kib[pid] = max(self.hwm_kib.get(pid, 0), _status_kib(pid, "VmHWM:"))

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self._sample()

    def __enter__(self) -> "TreeMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def figures(self) -> dict[str, float]:
        return {"peak_rss_mb": round(self.peak_kib / 1024, 1),
                "sum_of_process_peaks_mb": round(sum(self.hwm_kib.values()) / 1024, 1),
                "processes": len(self.hwm_kib)}


# -------------------------------------------------------------------------------------------------
# One run, in its own process
# -------------------------------------------------------------------------------------------------


def _report_digest(path: Path) -> str:
    report = json.loads(path.read_text(encoding="utf-8"))
    for moment in ("started_at", "finished_at"):
        report.pop(moment, None)
    return hashlib.sha256(json.dumps(report, sort_keys=True).encode()).hexdigest()


def measure(dataset: str, catalog: str, workers: int | None, out: Path) -> dict[str, Any]:
    """Score ``dataset`` as `fmquality run --engine direct --judge offline` does; timings, memory and
    digests of the files written."""
    from fmquality.config.rubric import load_rubric
    from fmquality.engines import direct
    from fmquality.run.dataset import load_catalog, load_dataset
    from fmquality.run.prepare import select_cases
    from fmquality.run.subsets import parse_filter

    rubric = load_rubric()
    options = direct.JudgeOptions(name="offline", workers=workers)
    with TreeMemory() as memory:
        t0 = time.perf_counter()
        loaded = load_dataset(dataset, load_catalog(catalog), rubric.profile_spec.categories)
        run = direct.DirectRun(run_id="bench-cores", dataset=dataset, catalog=catalog, trigger="bench",
                               selection=select_cases(loaded.cases, parse_filter(None)), rejected_lines=0,
                               baseline=None, targets={})
        del loaded
        outcome = direct.run_direct(run, rubric, direct.make_judge(options, rubric), options, out)
        whole = time.perf_counter() - t0
    cases = outcome.report.total_cases
    return {
        "cases": cases,
        "workers": workers,
        "scoring_s": round(outcome.seconds, 3),
        "cases_per_s": round(cases / outcome.seconds, 1),
        "whole_run_s": round(whole, 3),
        "whole_run_cases_per_s": round(cases / whole, 1),
        "unscored": outcome.report.unscored_cases,
        "errors": outcome.report.error_cases,
        **memory.figures,
        "results_sha256": hashlib.sha256((out / "results.jsonl").read_bytes()).hexdigest(),
        "report_sha256": _report_digest(out / "report.json"),
    }


def _run(dataset: Path, args: argparse.Namespace, workers: int | None, scratch: Path, label: str) -> dict[str, Any]:
    out, figures = scratch / f"out-{label}", scratch / f"measured-{label}.json"
    command = [sys.executable, "-m", "bench.cores", "--measure", str(dataset), "--catalog", args.catalog,
               "--out", str(out), "--figures", str(figures)]
    if workers is not None:
        command += ["--workers", str(workers)]
    subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(figures.read_text(encoding="utf-8"))


# -------------------------------------------------------------------------------------------------
# The scenario
# -------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    sizes = sorted(set(args.cores_memory_cases))
    with tempfile.TemporaryDirectory(prefix="fmq-cores-") as tmp:
        scratch = Path(tmp)
        throughput_set = repeated_dataset(args.dataset, args.cores_cases, scratch / "throughput.jsonl")
        throughput: dict[str, dict[str, Any]] = {}
        for workers in (1, 2):
            print(f"{args.cores_cases:,} cases with {workers} worker(s) ...", flush=True)
            throughput[str(workers)] = _run(throughput_set, args, workers, scratch, f"w{workers}")
            print(f"    {throughput[str(workers)]['cases_per_s']} cases/s", flush=True)
        memory: dict[str, dict[str, Any]] = {}
        for size in sizes:
            print(f"{size:,} cases, default workers ...", flush=True)
            memory[str(size)] = _run(repeated_dataset(args.dataset, size, scratch / f"memory-{size}.jsonl"), args,
                                     None, scratch, f"m{size}")
            print(f"    peak {memory[str(size)]['peak_rss_mb']} MB", flush=True)
    one, two = throughput["1"], throughput["2"]
    speedup = round(two["cases_per_s"] / one["cases_per_s"], 3)
    whole_speedup = round(two["whole_run_cases_per_s"] / one["whole_run_cases_per_s"], 3)
    small, large = memory[str(sizes[0])], memory[str(sizes[-1])]
    memory_ratio = round(large["peak_rss_mb"] / small["peak_rss_mb"], 3)
    bound_ratio = round(large["sum_of_process_peaks_mb"] / small["sum_of_process_peaks_mb"], 3)
    fastest, flattest = TARGETS["speedup_2_workers_min"], TARGETS["memory_largest_vs_smallest_max"]
    return {
        "workload": {
            "dataset": f"{shown(args.dataset)} repeated with new test ids",
            "catalog": shown(args.catalog),
            "judge": "offline",
            "throughput_cases": args.cores_cases,
            "memory_cases": sizes,
            "cpu_count": os.cpu_count(),
            "cases_per_s": "cases / the engine's scoring time (run_direct's seconds, as the CLI prints them); "
                           "whole_run_cases_per_s: loading the dataset, scoring and writing every file",
            "peak_rss_mb": "the highest sum of VmRSS over the measuring process and its descendants, sampled every "
                           f"{SAMPLE_EVERY_S * 1000:g} ms; sum_of_process_peaks_mb: the sum of each one's VmHWM",
        },
        "throughput": throughput,
        "memory": memory,
        "speedup_2_workers": speedup,
        "whole_run_speedup_2_workers": whole_speedup,
        "memory_ratio": memory_ratio,
        "sum_of_process_peaks_ratio": bound_ratio,
        "targets": {
            f"2 workers >= {fastest} x the cases/s of 1 worker": speedup >= fastest,
            f"peak memory of {sizes[-1]:,} cases <= {flattest} x of {sizes[0]:,}": memory_ratio <= flattest,
            "results.jsonl and report.json identical with 1 and 2 workers":
                one["results_sha256"] == two["results_sha256"] and one["report_sha256"] == two["report_sha256"],
            "every case scored": all(r["unscored"] == 0 and r["errors"] == 0
                                     for r in (*throughput.values(), *memory.values())),
        },
        "bench_wall_s": round(time.perf_counter() - started, 1),
    }


def format_summary(result: dict[str, Any]) -> str:
    lines = [f"{'run':>14}  {'cases':>6}  {'cases/s':>8}  {'whole c/s':>9}  {'peak MB':>8}  {'sum of peaks MB':>15}"]
    rows = [(f"{w} worker(s)", r) for w, r in result["throughput"].items()]
    rows += [(f"{n} cases", r) for n, r in result["memory"].items()]
    for label, r in rows:
        lines.append(f"{label:>14}  {r['cases']:>6}  {r['cases_per_s']:>8}  {r['whole_run_cases_per_s']:>9}  "
                     f"{r['peak_rss_mb']:>8}  {r['sum_of_process_peaks_mb']:>15}")
    lines.append(f"  speedup with 2 workers {result['speedup_2_workers']}x (whole run "
                 f"{result['whole_run_speedup_2_workers']}x); memory ratio {result['memory_ratio']}x "
                 f"(sum of peaks {result['sum_of_process_peaks_ratio']}x)")
    lines += [f"  {'met' if ok else 'MISSED'}: {name}" for name, ok in result["targets"].items()]
    return "\n".join(lines)


def _worker(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cores",
                                description="One run of the cores scenario (run by `python -m bench cores`).")
    p.add_argument("--measure", required=True, metavar="DATASET")
    p.add_argument("--catalog", required=True)
    p.add_argument("--workers", type=int, default=None, help="default: the engine's (one per core)")
    p.add_argument("--out", required=True)
    p.add_argument("--figures", required=True)
    args = p.parse_args(argv)
    figures = measure(args.measure, args.catalog, args.workers, Path(args.out))
    Path(args.figures).write_text(json.dumps(figures), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
