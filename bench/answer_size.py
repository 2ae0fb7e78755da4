"""`python -m bench size`: scoring time and memory against the size of one answer and of its evidence
(issue 17: cost linear in the input).

One golden case (a product question with its catalog entries) is scored with the offline judge, its
answer replaced by golden answers strung together to 10 KB, 40 KB, 160 KB and 640 KB (different
sentences, so nothing is served from a per-sentence cache); then the same answers with every sentence
end and line break taken out (``run-on``: one sentence, the worst case for per-sentence work); then
its answer kept and its retrieved chunks grown to the same sizes. The rubric's size limits are lifted for the measurement; with the
shipped limits (``limits.max_response_chars``, ``limits.max_evidence_chars``) anything past them
ends as a named error record at once, which the last row shows. Each size runs in its own process
(``python -m bench.answer_size --measure``) so its peak memory is its own.

Linear cost shows as a steady time per 1,000 characters across sizes.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT, warm_up
from bench.catalog_scale import _peak_rss_mb

DEFAULT_SIZES = (10_000, 40_000, 160_000, 640_000)
KINDS = ("answer", "run-on", "evidence")
TARGETS = {"answer_160kb_s_max": 5.0, "per_kchar_growth_max": 2.0}


def _grown(texts: list[str], size: int, seed: int) -> str:
    """``size`` characters of the given texts, picked at random and numbered so no two repeat."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        part = f"{rng.choice(texts)} (note {len(parts)})"
        parts.append(part)
        length += len(part) + 1
    return " ".join(parts)[:size]


def measure(what: str, size: int, dataset: str, catalog: str, limits: str) -> dict[str, Any]:
    from fmquality.run.dataset import load_catalog, load_dataset
    from fmquality.run.evaluate import evaluate_case
    from fmquality.judges.offline import OfflineJudge
    from fmquality.config.rubric import load_rubric

    rubric = load_rubric()
    if limits == "lifted":
        rubric = rubric.model_copy(update={"limits": rubric.limits.model_copy(
            update={"max_response_chars": 10**9, "max_evidence_chars": 10**9})})
    cases = load_dataset(dataset, load_catalog(catalog)).cases
    case = next(c for c in cases if c.intent == "product_question" and c.catalog and c.response)
    warm_up(case, rubric)
    if what in ("answer", "run-on"):
        answer = _grown([c.response for c in cases if c.response], size, 1)
        if what == "run-on":
            answer = re.sub(r"[.!?。！？\n]", " ", answer)
        case = case.model_copy(update={"response": answer})
    else:
        chunks = [chunk for c in cases for chunk in c.retrieved_chunks] or [c.query for c in cases]
        case = case.model_copy(update={"retrieved_chunks": [_grown(chunks, size, 2)]})
    rss_before = _peak_rss_mb()
    started = time.perf_counter()
    result = evaluate_case(case, rubric, OfflineJudge())
    seconds = time.perf_counter() - started
    return {"what": what, "chars": size, "limits": limits, "seconds": round(seconds, 3),
            "ms_per_kchar": round(1000 * seconds / (size / 1000), 3),
            "status": result.status, "error": result.error,
            "rss_before_mb": rss_before, "peak_rss_mb": _peak_rss_mb()}


def _run_one(what: str, size: int, args: argparse.Namespace, out: Path, limits: str = "lifted") -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.answer_size", "--measure", what, str(size), "--dataset", args.dataset,
               "--catalog", args.catalog, "--limits", limits, "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fmq-size-") as tmp:
        for what in KINDS:
            for size in DEFAULT_SIZES:
                print(f"{what} of {size:,} characters ...", flush=True)
                rows.append(_run_one(what, size, args, Path(tmp) / f"{what}-{size}.json"))
        print("answer of 160,000 characters under the shipped limits ...", flush=True)
        shipped = _run_one("answer", 160_000, args, Path(tmp) / "shipped.json", limits="shipped")
    # Per kind: the largest over the smallest time per 1,000 characters, from 40 KB up (below that
    # fixed costs dominate).
    growth = max(max(r["ms_per_kchar"] for r in rows if r["what"] == what and r["chars"] >= 40_000)
                 / min(r["ms_per_kchar"] for r in rows if r["what"] == what and r["chars"] >= 40_000)
                 for what in KINDS)
    return {
        "rows": rows,
        "shipped_limits_160kb": shipped,
        "growth": round(growth, 2),
        "targets": {
            "160 KB answer scored in < 5 s (also as one run-on sentence)": max(
                r["seconds"] for r in rows if r["chars"] == 160_000 and r["what"] != "evidence")
            < TARGETS["answer_160kb_s_max"],
            "time per 1,000 chars varies < 2x from 40 KB up (linear)": growth < TARGETS["per_kchar_growth_max"],
            "past the shipped limit: a named error record": shipped["status"] == "error"
            and "limits.max_response_chars" in (shipped["error"] or ""),
        },
    }


def format_summary(result: dict[str, Any]) -> str:
    lines = ["what      chars       seconds  ms/1k chars  peak MB"]
    for r in result["rows"]:
        lines.append(f"{r['what']:<9} {r['chars']:>9,}  {r['seconds']:>8.2f}  {r['ms_per_kchar']:>11.2f}  "
                     f"{r['peak_rss_mb']:>7.1f}")
    shipped = result["shipped_limits_160kb"]
    lines.append(f"160 KB answer under the shipped limits: {shipped['status']} in {shipped['seconds']} s "
                 f"({shipped['error']})")
    lines += [f"  {'met ' if ok else 'MISSED'} {name}" for name, ok in result["targets"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.answer_size")
    p.add_argument("--measure", nargs=2, required=True, metavar=("WHAT", "CHARS"))
    p.add_argument("--dataset", required=True)
    p.add_argument("--catalog", required=True)
    p.add_argument("--limits", choices=("lifted", "shipped"), default="lifted")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    what, size = args.measure[0], int(args.measure[1])
    if what not in KINDS:
        p.error(f"WHAT is one of {', '.join(KINDS)}")
    row = measure(what, size, args.dataset, args.catalog, args.limits)
    Path(args.out).write_text(json.dumps(row), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
