"""`python -m bench catalog`: the golden set against store-sized catalogs (issue 12).

The golden dataset is loaded and evaluated against the shipped 54-product catalog and against
catalogs of 5,000 and 50,000 products: the shipped 54 followed by synthetic ones generated from a
seed (``synthetic_catalog``; a smaller catalog is a prefix of a larger one). Each size runs
``--catalog-repeats`` times (3), each time in a fresh subprocess (``python -m bench.catalog_scale
--measure``) so that its peak memory is its own; a size's figures are its fastest run's:

  loading      reading the catalog file, building the ``CatalogIndex``, loading the dataset with it
               (each case gets the entries of the products in play)
  evaluation   ``evaluate_cases`` with the offline judge, concurrency 1 (the direct engine)
  peak memory  the subprocess's peak resident set (VmHWM) after the run, and before loading (imports,
               rubric, lazy language tables) for comparison
  judge input  ``fmquality.run.estimate`` in per-dimension mode: the real Bedrock requests, ~4 chars/token
  Map item     the largest case as Prepare writes it to items.json (compact JSON, UTF-8 bytes)

The synthetic titles never occur in the dataset: a generated series any of whose index keys (title,
series name, Japanese and romaji titles, ASIN) is found in any text of any line is dropped, so the
products in play, and therefore every golden result, must be the same at every size; the parent
checks that field by field (except ``catalog_asins``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ahocorasick

from bench import ROOT, shown, warm_up
from fmquality.language.catalog_index import CatalogIndex, key_of, title_keys
from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.domain.case import CatalogItem

DEFAULT_SIZES = (54, 5000, 50000)
DEFAULT_SEED = 12
TARGETS = {
    "cases_per_s_largest_vs_base_min": 0.5,
    "input_tokens_vs_base_max": 1.10,
    "largest_map_item_max_bytes": 64 * 1024,
}

# -------------------------------------------------------------------------------------------------
# Synthetic catalog
# -------------------------------------------------------------------------------------------------

_ROMAJI = ("a i u e o ka ki ku ke ko sa shi su se so ta chi tsu te to na ni nu ne no ha hi fu he ho ma mi mu "
           "me mo ya yu yo ra ri ru re ro wa ga gi gu ge go za ji zu ze zo da de do ba bi bu be bo pa pi pu "
           "pe po kyo ryu sho jo").split()
_ENGLISH = ("vel mor dra kin thal wyn zor bel cor dun fen gal hal ith lor mar nor quel ran sil tor var wen yor "
            "bra cal del eth fal gor hel jor kal lun mir nel pel rhy sar tam vor xan zen").split()
_NOUNS = ("Chronicles Academy Saga Blade Requiem Frontier Legacy Knights Garden Odyssey Covenant Rhapsody "
          "Horizon Archive Labyrinth Eclipse").split()
_KATAKANA = ("アイウエオカキクケコサシスセソタチツテトナニヌネノ"
             "ハヒフヘホマミムメモヤユヨラリルレロワガギグゲゴザ"
             "ジズゼゾダデドバビブベボパピプペポ")
_KANJI = ("月星風花雪海空夜光影剣刃竜鬼神魔王姫騎士学園物語伝"
          "城島森川山火水雷銀黒白紅蒼翠桜雲霧炎氷鏡夢獣")
_ASIN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_USD = (7.99, 9.99, 10.99, 11.99, 12.99, 13.99, 14.99, 17.99, 19.99, 24.99, 29.99, 39.99)
_JPY = (418, 462, 484, 528, 594, 660, 693, 748, 770, 880, 990, 1320, 1980, 2420)
_AVAILABILITY = (("in_stock", 70), ("out_of_stock", 10), ("preorder", 10), ("limited", 10))


def _romaji_word(rng: random.Random, low: int = 2, high: int = 4) -> str:
    return "".join(rng.choice(_ROMAJI) for _ in range(rng.randint(low, high))).capitalize()


def _romaji_title(rng: random.Random) -> str:
    form = rng.random()
    if form < 0.4:
        return f"{_romaji_word(rng)} no {_romaji_word(rng)}"
    if form < 0.7:
        return f"{_romaji_word(rng)} {_romaji_word(rng)}"
    return _romaji_word(rng, 3, 5)


def _english_title(rng: random.Random) -> str:
    word = "".join(rng.choice(_ENGLISH) for _ in range(rng.randint(2, 3))).capitalize()
    noun = rng.choice(_NOUNS)
    form = rng.random()
    if form < 0.4:
        return f"{word} {noun}"
    if form < 0.6:
        return f"The {word} {noun}"
    if form < 0.8:
        return f"{noun} of {word}"
    return f"{word}: {noun} of the {rng.choice(_NOUNS)}"


def _japanese_title(rng: random.Random) -> str:
    form = rng.random()
    if form < 0.4:
        return "".join(rng.choice(_KATAKANA) for _ in range(rng.randint(4, 7)))
    if form < 0.7:
        return "".join(rng.choice(_KANJI) for _ in range(rng.randint(3, 5)))
    return "".join(rng.choice(_KANJI) for _ in range(2)) + "の" + "".join(rng.choice(_KANJI) for _ in range(2))


def _series(rng: random.Random, genres: list[str]) -> list[dict[str, Any]]:
    """One invented series: one to twelve volumes sharing author, genre, currency and price."""
    romaji = _romaji_title(rng)
    title = _english_title(rng) if rng.random() < 0.5 else romaji
    title_ja = _japanese_title(rng)
    volumes = rng.randint(2, 12) if rng.random() < 0.2 else 1
    author = f"{_romaji_word(rng)} {_romaji_word(rng)}"
    if rng.random() < 0.15:
        currency, price = "JPY", rng.choice(_JPY)
    else:
        currency, price = "USD", rng.choice(_USD)
    genre = rng.choice(genres)
    states, weights = zip(*_AVAILABILITY)
    out = []
    for volume in range(1, volumes + 1):
        many = volumes > 1
        out.append({
            "asin": "B0" + "".join(rng.choice(_ASIN_CHARS) for _ in range(8)),
            "title": f"{title}, Vol. {volume}" if many else title,
            "price": price,
            "currency": currency,
            "availability": rng.choices(states, weights)[0],
            "author": author,
            "title_ja": f"{title_ja} {volume}巻" if many else title_ja,
            "title_romaji": romaji,
            "genre": genre,
        })
    return out


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def dataset_haystack(dataset: str | Path) -> str:
    """Every string of every line of the dataset (queries, answers, conversations, references,
    snapshots, ids...) in the index's compact form, one per line: where a key must not occur."""
    texts: list[str] = []
    for line in Path(dataset).read_bytes().splitlines():
        if line.strip():
            _strings(json.loads(line), texts)
    return "\n".join(key_of(t) for t in texts)


def _keys_found(keys: set[str], haystack: str) -> set[str]:
    """The keys that occur anywhere in ``haystack``, even inside a word: stricter than the index."""
    automaton = ahocorasick.Automaton()
    for key in keys:
        automaton.add_word(key, key)
    automaton.make_automaton()
    return {key for _, key in automaton.iter(haystack)}


def synthetic_catalog(base: list[CatalogItem], size: int, haystack: str, seed: int = DEFAULT_SEED,
                      batch: int = 2000) -> tuple[list[CatalogItem], int]:
    """``base`` followed by synthetic products up to ``size`` items, and how many generated series
    were dropped because one of their keys occurs in ``haystack``. Deterministic for a seed; a
    smaller size gives a prefix of a larger one."""
    rng = random.Random(seed)
    genres = sorted({i.genre for i in base if i.genre})
    taken_keys = {k for item in base for k in title_keys(item)}
    taken_asins = {i.asin for i in base}

    def candidates() -> Iterator[list[CatalogItem]]:
        while True:
            series = [CatalogItem.model_validate(v) for v in _series(rng, genres)]
            keys = set().union(*(title_keys(i) for i in series))
            asins = {i.asin for i in series}
            # Unique titles and ASINs: another series (or a shipped product) never shares a key.
            if keys & taken_keys or asins & taken_asins or len(asins) < len(series):
                continue
            taken_keys.update(keys)
            taken_asins.update(asins)
            yield series

    out = list(base)
    dropped = 0
    stream = candidates()
    while len(out) < size:
        chunk = [next(stream) for _ in range(batch)]
        found = _keys_found(set().union(*(title_keys(i) for s in chunk for i in s)), haystack)
        for series in chunk:
            if any(title_keys(i) & found for i in series):
                dropped += 1
            else:
                out.extend(series)
    return out[:size], dropped


def write_catalog(items: list[CatalogItem], path: Path) -> None:
    path.write_text(json.dumps([i.model_dump(mode="json", exclude_none=True) for i in items], ensure_ascii=False),
                    encoding="utf-8")


# -------------------------------------------------------------------------------------------------
# One size, in its own process
# -------------------------------------------------------------------------------------------------


def _peak_rss_mb() -> float:
    """This process's peak resident set. Not ``ru_maxrss`` where /proc has VmHWM: Linux carries the
    parent's high-water mark across fork and exec into the child's ``ru_maxrss``, so every size
    would report at least the parent's peak (the generator holding 50,000 products, or the judge
    scenario run before it); VmHWM belongs to the process image and starts afresh at exec."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return round(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024, 1)
    except (OSError, StopIteration):
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB, bytes on macOS
        return round(maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def measure(catalog: str, dataset: str, limit: int = 0) -> dict[str, Any]:
    """Load ``dataset`` against the catalog file and evaluate it; the figures of one size and the
    results (for the parent's equality check)."""
    from fmquality.run.estimate import estimate_run
    from fmquality.run.evaluate import evaluate_cases
    from fmquality.judges.offline import OfflineJudge
    from fmquality.config.rubric import load_rubric

    rubric = load_rubric()
    warm_up(load_dataset(dataset).cases[0], rubric)
    rss_before = _peak_rss_mb()

    t0 = time.perf_counter()
    items = load_catalog(catalog)
    t1 = time.perf_counter()
    index = CatalogIndex(items)
    t2 = time.perf_counter()
    loaded = load_dataset(dataset, index)
    t3 = time.perf_counter()
    cases = loaded.cases[:limit] if limit else loaded.cases
    results = evaluate_cases(cases, rubric, OfflineJudge(), concurrency=1)
    t4 = time.perf_counter()
    peak = _peak_rss_mb()

    estimate = estimate_run(cases, rubric, mode="per_dimension")
    # As Prepare writes each item to items.json (S3Adapter.write_json: compact, UTF-8).
    item_bytes = [len(json.dumps(c.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")).encode())
                  for c in cases]
    largest = max(range(len(cases)), key=item_bytes.__getitem__)
    entries = [len(c.catalog) for c in cases]
    return {
        "products": len(items),
        "cases": len(cases),
        "catalog_parse_s": round(t1 - t0, 3),
        "index_build_s": round(t2 - t1, 3),
        "resolve_s": round(t3 - t2, 3),
        "loading_s": round(t3 - t0, 3),
        "evaluate_s": round(t4 - t3, 3),
        "cases_per_s": round(len(cases) / (t4 - t3), 1),
        "whole_run_s": round(t4 - t0, 3),
        "whole_run_cases_per_s": round(len(cases) / (t4 - t0), 1),
        "rss_before_load_mb": rss_before,
        "peak_rss_mb": peak,
        "catalog_entries_per_case": {"mean": round(sum(entries) / len(entries), 2), "max": max(entries)},
        "judge_calls": estimate.calls,
        "mean_input_tokens_per_call": round(estimate.input_tokens / estimate.calls, 1) if estimate.calls else 0,
        "mean_prompt_tokens_per_call": round((estimate.input_tokens + estimate.cache_write_tokens
                                              + estimate.cache_read_tokens) / estimate.calls, 1)
        if estimate.calls else 0,
        "largest_map_item_bytes": item_bytes[largest],
        "largest_map_item_test_id": cases[largest].test_id,
        "results": [r.model_dump(mode="json") for r in results],
    }


# -------------------------------------------------------------------------------------------------
# The scenario
# -------------------------------------------------------------------------------------------------


def _differences(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cases whose results differ, with the fields that differ (``catalog_asins`` left out)."""
    if [r["test_id"] for r in base] != [r["test_id"] for r in other]:
        return [{"test_id": None, "fields": ["test_id order"]}]
    out = []
    for a, b in zip(base, other):
        fields = sorted(k for k in a.keys() | b.keys() if k != "catalog_asins" and a.get(k) != b.get(k))
        if fields:
            out.append({"test_id": a["test_id"], "fields": fields})
    return out


def _run_size(catalog: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.catalog_scale", "--measure", str(catalog), "--dataset", args.dataset,
               "--limit", str(args.limit), "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every size of ``args.catalog_sizes``; the smallest must be the shipped catalog's size."""
    base_items = load_catalog(args.catalog)
    sizes = sorted(set(args.catalog_sizes))
    if sizes[0] != len(base_items):
        raise SystemExit(f"--catalog-sizes: the smallest size must be the shipped catalog's {len(base_items)}")
    started = time.perf_counter()
    items, dropped = synthetic_catalog(base_items, sizes[-1], dataset_haystack(args.dataset), args.catalog_seed)
    generate_s = round(time.perf_counter() - started, 1)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fmq-catalog-") as tmp:
        for size in sizes:
            path = Path(args.catalog)
            if size > len(base_items):
                path = Path(tmp) / f"catalog-{size}.json"
                write_catalog(items[:size], path)
            print(f"catalog of {size:,} products, {args.catalog_repeats} run(s) ...", flush=True)
            runs = [_run_size(path, args, Path(tmp) / f"measured-{size}-{n}.json")
                    for n in range(args.catalog_repeats)]
            # The fastest run's figures (the others met the same work with more noise), the highest
            # peak; every run's results go to the equality check.
            row = min(runs, key=lambda r: r["whole_run_s"])
            row["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
            row["runs"] = len(runs)
            row["whole_run_s_of_runs"] = [r["whole_run_s"] for r in runs]
            row["results_of_runs"] = [r.pop("results") for r in runs]
            row["catalog_file_bytes"] = path.stat().st_size
            rows.append(row)
            print(f"    loading {row['loading_s']} s, evaluation {row['evaluate_s']} s, "
                  f"peak {row['peak_rss_mb']} MB", flush=True)

    base, largest = rows[0], rows[-1]
    reference = base["results_of_runs"][0]
    for row in rows:
        row["differences"] = [d for results in row["results_of_runs"] for d in _differences(reference, results)]
        row["equal_to_base"] = not row["differences"]
        row["catalog_asins_equal_to_base"] = all(
            [r["catalog_asins"] for r in results] == [r["catalog_asins"] for r in reference]
            for results in row["results_of_runs"])
        for figure, ratio in (("cases_per_s", "cases_per_s_vs_base"),
                              ("whole_run_cases_per_s", "whole_run_cases_per_s_vs_base"),
                              ("mean_input_tokens_per_call", "input_tokens_vs_base")):
            row[ratio] = round(row[figure] / base[figure], 3) if base[figure] else None
    for row in rows:
        del row["results_of_runs"]
    b, n = f"{base['products']:,}", f"{largest['products']:,}"
    half, tokens = TARGETS["cases_per_s_largest_vs_base_min"], TARGETS["input_tokens_vs_base_max"]
    limit = TARGETS["largest_map_item_max_bytes"]
    targets = {
        f"evaluation cases/s at {n} >= {half} x at {b}": largest["cases_per_s_vs_base"] >= half,
        f"mean judge input tokens per call at every size <= {tokens} x at {b}":
            all((r["input_tokens_vs_base"] or 1.0) <= tokens for r in rows),
        f"largest Map item at every size < {limit // 1024} KB":
            all(r["largest_map_item_bytes"] < limit for r in rows),
        f"golden results at every size == at {b} (except catalog_asins)": all(r["equal_to_base"] for r in rows),
    }
    return {
        "workload": {
            "dataset": shown(args.dataset),
            "cases": base["cases"],
            "base_catalog": shown(args.catalog),
            "sizes": sizes,
            "seed": args.catalog_seed,
            "synthetic_series_dropped": dropped,
            "generate_s": generate_s,
            "runs_per_size": args.catalog_repeats,
            "engine": "direct, evaluate_cases with the offline judge, concurrency 1; a fresh process per run; "
                      "a size's figures are its fastest run's (peak_rss_mb the highest), every run's results are "
                      "checked against the first run at the smallest size",
            "loading_s": "catalog_parse_s (read + validate the catalog file) + index_build_s (CatalogIndex) + "
                         "resolve_s (load_dataset with the index: parse the lines, resolve the products in play)",
            "whole_run_s": "loading_s + evaluate_s",
            "peak_rss_mb": "peak resident set (VmHWM) of the size's process after the evaluation; rss_before_load_mb "
                           "the same after imports, rubric and warm-up, before the catalog is read",
            "mean_input_tokens_per_call": "fmquality.run.estimate, Bedrock judge, per-dimension mode: uncached input "
                                          "tokens per call (the user message: sub-scores to grade, case data, "
                                          "hints); mean_prompt_tokens_per_call adds the cached static prefix",
            "largest_map_item_bytes": "max over cases of the compact UTF-8 JSON of case.model_dump(mode='json'), "
                                      "as Prepare writes items.json",
        },
        "sizes": rows,
        "targets": targets,
        # Not a target (so `make bench` never fails on it): a short run's whole time at a large catalog is
        # dominated by building the catalog index once (docs/performance.md), which no per-case work changes.
        "informational": {
            f"whole-run cases/s (loading included) at {n} vs at {b}": largest["whole_run_cases_per_s_vs_base"],
        },
    }


def format_summary(result: dict[str, Any]) -> str:
    header = ("products", "load s", "index s", "eval s", "cases/s", "whole s", "whole c/s", "peak MB",
              "in tok/call", "max item B", "== base")
    lines = ["  ".join(f"{h:>11}" for h in header)]
    for r in result["sizes"]:
        cells = (f"{r['products']:,}", r["loading_s"], r["index_build_s"], r["evaluate_s"], r["cases_per_s"],
                 r["whole_run_s"], r["whole_run_cases_per_s"], r["peak_rss_mb"], r["mean_input_tokens_per_call"],
                 f"{r['largest_map_item_bytes']:,}", "yes" if r["equal_to_base"] else "NO")
        lines.append("  ".join(f"{c!s:>11}" for c in cells))
    lines += [f"  {'met' if ok else 'MISSED'}: {name}" for name, ok in result["targets"].items()]
    lines += [f"  info (not a target): {name}: {value}x" for name, value in result.get("informational", {}).items()]
    return "\n".join(lines)


def _worker(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.catalog_scale",
                                description="One size of the catalog scenario (run by `python -m bench catalog`).")
    p.add_argument("--measure", required=True, metavar="CATALOG")
    p.add_argument("--dataset", required=True)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    Path(args.out).write_text(json.dumps(measure(args.measure, args.dataset, args.limit)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
