"""The benchmark's synthetic catalog: seeded, nested, well-formed and never named by the dataset."""

from __future__ import annotations

import re
from pathlib import Path

from bench.catalog_scale import dataset_haystack, synthetic_catalog
from fmquality.catalog_index import title_keys
from fmquality.dataset import load_catalog

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
