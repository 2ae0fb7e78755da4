"""A store-sized catalog: each case is scored with the entries of the products in play, and that
changes nothing for the scores: the golden set scores exactly as with the whole snapshot merged
into every case (the way runs worked before)."""

from __future__ import annotations

from pathlib import Path

from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.offline import OfflineJudge

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "datasets/mangaassist/golden.jsonl"


def test_golden_results_equal_a_run_with_the_whole_catalog_merged_into_every_case(rubric):
    catalog = load_catalog(ROOT / "datasets/mangaassist/catalog.json")
    resolved = load_dataset(GOLDEN, catalog).cases
    merged = [case.model_copy(update={"catalog": case.catalog + [i for i in catalog
                                                                 if i.asin not in {c.asin for c in case.catalog}]})
              for case in load_dataset(GOLDEN).cases]
    assert max(len(c.catalog) for c in resolved) < len(catalog) == min(len(c.catalog) for c in merged)
    with_resolved = evaluate_cases(resolved, rubric, OfflineJudge())
    with_merged = evaluate_cases(merged, rubric, OfflineJudge())
    for a, b in zip(with_resolved, with_merged):
        assert a.model_dump(exclude={"catalog_asins"}) == b.model_dump(exclude={"catalog_asins"}), a.test_id
    # The result says which entries the case was scored with.
    assert all(r.catalog_asins == [i.asin for i in c.catalog] for r, c in zip(with_resolved, resolved))
