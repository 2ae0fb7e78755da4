"""`python -m bench catalog` end to end on small catalogs (54 and 500 products, 20 golden cases): the
scenario must not rot. Its speed and memory figures are measured by `make bench`, never asserted here;
what holds at any scale is asserted: the shape of the results, the synthetic catalog's properties and
that the golden results do not depend on the catalog's size."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.__main__ import main
from bench.catalog_scale import dataset_haystack, synthetic_catalog
from fmquality.language.catalog_index import title_keys
from fmquality.run.dataset import load_catalog

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "datasets/mangaassist/golden.jsonl"
SHIPPED = ROOT / "datasets/mangaassist/catalog.json"


def test_synthetic_catalog_is_seeded_nested_and_never_named_by_the_dataset():
    base = load_catalog(SHIPPED)
    haystack = dataset_haystack(GOLDEN)
    items, _ = synthetic_catalog(base, 600, haystack, seed=3)
    again, _ = synthetic_catalog(base, 300, haystack, seed=3)
    assert items[:300] == again and items[: len(base)] == base
    synthetic = items[len(base):]
    assert len({i.asin for i in items}) == 600
    assert all(re.fullmatch(r"B0[0-9A-Z]{8}", i.asin) for i in synthetic)
    assert all(i.title_ja and i.title_romaji and i.author and i.genre for i in synthetic)
    assert any(", Vol. " in i.title for i in synthetic) and {i.currency for i in synthetic} == {"USD", "JPY"}
    assert not any(key in haystack for i in synthetic for key in title_keys(i))


def test_bench_catalog_scenario_reports_every_size_and_equal_golden_results(tmp_path):
    out = tmp_path / "results.json"
    main(["catalog", "--catalog-sizes", "54,500", "--catalog-repeats", "1", "--limit", "20", "--out", str(out)])
    results = json.loads(out.read_text(encoding="utf-8"))
    assert "modes" not in results  # the judge scenario was not selected
    scale = results["catalog_scale"]
    assert scale["workload"]["sizes"] == [54, 500] and scale["workload"]["cases"] == 20
    sizes = scale["sizes"]
    assert [s["products"] for s in sizes] == [54, 500]
    for size in sizes:
        for key in ("catalog_parse_s", "index_build_s", "resolve_s", "loading_s", "evaluate_s", "cases_per_s",
                    "whole_run_s", "whole_run_cases_per_s", "peak_rss_mb", "rss_before_load_mb"):
            assert isinstance(size[key], (int, float)) and size[key] >= 0, key
        assert size["judge_calls"] > 0 and size["mean_input_tokens_per_call"] > 0
        assert 0 < size["largest_map_item_bytes"] < 64 * 1024
        assert size["cases"] == 20
        assert size["equal_to_base"] and size["differences"] == [] and size["catalog_asins_equal_to_base"]
        assert size["catalog_entries_per_case"]["max"] < 54
    assert len(scale["targets"]) == 4
    # the whole-run speed at the largest size is a figure, never a target `make bench` can miss
    assert not any("whole-run" in name for name in scale["targets"])
    assert [isinstance(v, float) for v in scale["informational"].values()] == [True]
    assert scale["targets"]["golden results at every size == at 54 (except catalog_asins)"]
