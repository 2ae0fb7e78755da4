"""Simulate a production week end to end and print the watch's figures.

turns (generate_turns.py) -> capture (the same redaction and partitioned key layout as the Firehose
stream with its transform Lambda, on local disk) -> daily stratified sampling -> a run per day with
the offline judge through the direct engine -> drift per day against a healthy reference week ->
monitor status -> a review round trip (export CSV, fill verdicts, import) updating the judge's kappa.

    PYTHONPATH=lambdas python datasets/production/simulate_week.py [--turns 20160] [--json]

The reference period is a separate healthy week (same generator, another seed, no slide), sampled
and scored the same way, one run per day.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import tempfile
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "lambdas"))

from generate_turns import generate, strip_truth  # noqa: E402

from fmquality.run.dataset import parse_lines  # noqa: E402
from fmquality.run.evaluate import evaluate_cases  # noqa: E402
from fmquality.judges.factory import make_judge  # noqa: E402
from fmquality.production.capture import LocalTurnStore  # noqa: E402
from fmquality.config.watch import WatchConfig  # noqa: E402
from fmquality.config.watch_loader import load_watch_config  # noqa: E402
from fmquality.production.drift import DriftState, build_reference, detect_drift  # noqa: E402
from fmquality.production.monitor import monitor_status  # noqa: E402
from fmquality.production.redact import Redactor  # noqa: E402
from fmquality.adapters.review_queue import LocalReviewQueue  # noqa: E402
from fmquality.production.review import select_for_review  # noqa: E402
from fmquality.production.review_agreement import judge_agreement  # noqa: E402
from fmquality.production.review_exchange import apply_verdicts, export_text, parse_verdicts  # noqa: E402
from fmquality.production.sample import dataset_text, read_turn_files, stratified_sample  # noqa: E402
from fmquality.report.build import build_report, results_to_jsonl  # noqa: E402
from fmquality.config.rubric import load_rubric  # noqa: E402

KEY = "simulation-order-hash-key"


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text.translate({c: c - 0xFEE0 for c in range(0xFF10, 0xFF1A)}))


def leaked_strings(store_root: Path, planted: list[dict[str, str]], extra: list[str]) -> list[dict[str, str]]:
    """Planted strings found anywhere in storage: verbatim, or (cards, phones) as the same digits."""
    blob = "".join(p.read_text(encoding="utf-8") for p in sorted(store_root.rglob("*.jsonl")))
    digits_blob = _digits(blob)
    leaks = [p for p in planted if p["value"] in blob or
             (p["kind"] in ("card", "phone") and len(_digits(p["value"])) >= 10 and _digits(p["value"]) in digits_blob)]
    leaks += [{"kind": "order_id", "where": "page_context", "value": v} for v in extra if v in blob]
    return leaks


def capture_week(turns: list[dict[str, Any]], root: Path, redactor: Redactor) -> dict[str, int]:
    return LocalTurnStore(root, redactor).write(strip_truth(t) for t in turns)


def run_day(store: Path, day: str, config: WatchConfig, rubric, judge, run_dir: Path, run_id: str):
    turns, errors = read_turn_files(LocalTurnStore(store, None).day_files(day))  # type: ignore[arg-type]
    if errors:
        raise ValueError(errors[0])
    d = date.fromisoformat(day)
    sampled, summary = stratified_sample(turns, rate=config.sampling.rate,
                                         min_per_stratum=config.sampling.min_per_stratum,
                                         seed=config.sampling.seed, day_from=d, day_to=d)
    text = dataset_text(sampled)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "dataset.jsonl").write_text(text, encoding="utf-8")
    cases = parse_lines(text.encode("utf-8").splitlines(), str(run_dir / "dataset.jsonl")).cases
    results = evaluate_cases(cases, rubric, judge, run_id=run_id, concurrency=1)
    report = build_report(results, rubric, run_id=run_id, dataset=str(run_dir / "dataset.jsonl"),
                          trigger="schedule:production-sample")
    (run_dir / "results.jsonl").write_text(results_to_jsonl(results), encoding="utf-8")
    (run_dir / "report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    return results, summary


def simulate(turns: int = 20160, workdir: Path | None = None, config: WatchConfig | None = None,
             seed: int = 7, reference_seed: int = 101, slide_day: int = 3, days: int = 7,
             start: date = date(2026, 11, 16), log=print) -> dict[str, Any]:
    config = config or load_watch_config()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="fmq-week-"))
    redactor = Redactor(KEY)
    rubric = load_rubric()
    judge = make_judge("offline", None)

    reference_start = start - timedelta(days=days)
    ref_turns, ref_truth = generate(turns, days, reference_start, reference_seed, slide=None)
    week_turns, truth = generate(turns, days, start, seed, slide_day=slide_day)
    store = workdir / "bucket"
    capture_week(ref_turns, store, redactor)
    written = capture_week(week_turns, store, redactor)
    leaks = leaked_strings(store, truth["planted"] + ref_truth["planted"],
                           sorted(set(truth["context_order_ids"]) | set(ref_truth["context_order_ids"])))
    log(f"captured {len(ref_turns)} reference + {len(week_turns)} watched turns; planted personal-data strings: "
        f"{len(truth['planted']) + len(ref_truth['planted'])}; found in storage: {len(leaks)}")

    ref_runs = []
    for i in range(days):
        day = (reference_start + timedelta(days=i)).isoformat()
        results, _ = run_day(store, day, config, rubric, judge, workdir / "runs" / f"ref-{day}", f"ref-{day}")
        ref_runs.append(results)
    reference = build_reference(ref_runs, config.drift, [f"ref-{(reference_start + timedelta(days=i)).isoformat()}"
                                                         for i in range(days)])

    slide = truth["slide"]
    slid_key = (slide["intent"], slide["locale"])
    state = DriftState()
    per_day: list[dict[str, Any]] = []
    first_flag_day: int | None = None
    false_alarms: list[tuple[str, str, str]] = []
    sample_sizes: dict[str, list[int]] = defaultdict(list)
    last = None
    for i in range(days):
        day = (start + timedelta(days=i)).isoformat()
        run_id = f"prod-{day}"
        run_dir = workdir / "runs" / run_id
        results, summary = run_day(store, day, config, rubric, judge, run_dir, run_id)
        for s in summary.strata:
            sample_sizes[f"{s.intent}|{s.locale}"].append(s.sampled)
        drift, state = detect_drift(results, reference, state, config.drift, run_id)
        monitor = monitor_status(results, config)
        flagged = [(s.intent, s.locale) for s in drift.flagged]
        slid = next((s for s in drift.strata if (s.intent, s.locale) == slid_key), None)
        if slid_key in flagged and first_flag_day is None and i >= slide_day:
            first_flag_day = i
        false_alarms += [(day, a, b) for a, b in flagged if (a, b) != slid_key]
        status = monitor.by_key().get(slid_key)
        per_day.append({"day": day, "sampled": summary.sampled, "population": summary.population,
                        "slid_cusum_sigma": slid.cusum if slid else None,
                        "slid_shift": slid.measures["composite"].shift if slid and slid.measures else None,
                        "slid_ks_p": slid.ks.p_value if slid and slid.ks else None,
                        "slid_status": status.status if status else None,
                        "flagged": [f"{a}|{b}" for a, b in flagged], "monitor": monitor.status})
        log(f"{day}: sampled {summary.sampled}/{summary.population}; {slid_key[0]} x {slid_key[1]}: CUSUM "
            f"{per_day[-1]['slid_cusum_sigma']:.2f} sigma, shift {per_day[-1]['slid_shift']:+.3f}, "
            f"status {per_day[-1]['slid_status']}; flagged {per_day[-1]['flagged'] or 'none'}; overall {monitor.status}")
        last = (run_id, run_dir, results)

    # Review round trip on the last day's run: export, a reviewer fills verdicts, import.
    run_id, run_dir, results = last
    queue = LocalReviewQueue(run_dir)
    queue.add(select_for_review(results, config.review, run_id))
    before = judge_agreement(queue.items(run_id))
    export = run_dir / "review-export.csv"
    export.write_text(export_text(queue.items(run_id), "csv"), encoding="utf-8")
    rows = list(csv.DictReader(export.open(encoding="utf-8")))
    # Stored turns carry keyed tokens, not the producer's turn ids: the reviewer's truth is looked up by token.
    acceptable = {redactor.turn_token(t): ok for t, ok in truth["acceptable"].items()}
    for row in rows:  # the reviewer: the truth of the situation the turn replayed
        ok = acceptable[row["test_id"]]
        row["acceptable"] = "yes" if ok else "no"
        for dim in ("relevance", "factual_accuracy", "consistency", "fluency"):
            row[dim] = "5" if ok else ("2" if row[f"judge_{dim}"] and float(row[f"judge_{dim}"]) < 0.8 else "4")
        row["reviewer"] = "simulated-reviewer"
    filled = run_dir / "review-filled.csv"
    with filled.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    verdicts, errors, _ = parse_verdicts(filled)
    updated, more = apply_verdicts(queue.items(run_id), verdicts, str(filled))
    if errors or more:
        raise ValueError([str(e) for e in errors + more][:3])
    queue.update(updated)
    after = judge_agreement(queue.items(run_id))
    k_all = after.subset("all")
    log(f"review round trip ({run_id}): queue {len(rows)} items, kappa before import: "
        f"{before.subset('all').pass_fail.value} ({before.reviewed} reviewed); after: {k_all.pass_fail.value} "
        f"({after.reviewed} reviewed); weighted kappa per dimension: "
        f"{ {d: k.value for d, k in k_all.dimensions.items()} }")

    days_to_flag = None if first_flag_day is None else first_flag_day - slide_day
    figures = {
        "workdir": str(workdir),
        "turns": len(week_turns), "reference_turns": len(ref_turns), "days_written": written,
        "slide": slide, "sample_size_per_stratum": dict(sorted(sample_sizes.items())),
        "days_after_slide_start_to_flag": days_to_flag,
        "flag_day": None if first_flag_day is None else (start + timedelta(days=first_flag_day)).isoformat(),
        "false_alarms": len(false_alarms), "false_alarm_strata": [f"{d} {a}|{b}" for d, a, b in false_alarms],
        "planted_pii": len(truth["planted"]) + len(ref_truth["planted"]), "pii_in_storage": len(leaks),
        "review": {"queue": len(rows), "kappa_before": before.subset("all").pass_fail.value,
                   "kappa_after": k_all.pass_fail.value, "reviewed": after.reviewed,
                   "weighted_kappa": {d: k.value for d, k in k_all.dimensions.items()}},
        "per_day": per_day,
    }
    log(f"slide in {slide['intent']} x {slide['locale']} from {slide['first_day']}: drift flag "
        f"{'on ' + figures['flag_day'] if figures['flag_day'] else 'never raised'} "
        f"({days_to_flag} day(s) after the slide began; 0 = its first day); false alarms on other strata: "
        f"{len(false_alarms)}; personal-data strings in storage: {len(leaks)}/{figures['planted_pii']}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="simulate a production week of the watch")
    parser.add_argument("--turns", type=int, default=20160, help="turns per week (reference week the same)")
    parser.add_argument("--workdir", help="where the captured turns and runs go (default: a temp folder)")
    parser.add_argument("--min-per-stratum", type=int)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON at the end")
    args = parser.parse_args(argv)
    config = load_watch_config()
    if args.min_per_stratum is not None:
        config = config.model_copy(update={"sampling": config.sampling.model_copy(
            update={"min_per_stratum": args.min_per_stratum})})
    figures = simulate(args.turns, Path(args.workdir) if args.workdir else None, config,
                       log=lambda m: print(m, file=sys.stderr))
    sizes = figures["sample_size_per_stratum"]
    print("sample size per stratum (per day):")
    for key, values in sizes.items():
        print(f"  {key:28s} {values}")
    if args.json:
        print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
