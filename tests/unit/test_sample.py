"""Stratified sampling: size per stratum, reproducibility, and a dataset the loader accepts."""

from datetime import date, datetime, timedelta, timezone

from fmquality.run.dataset import parse_lines
from fmquality.production.capture import TurnRecord
from fmquality.production.sample import dataset_text, stratified_sample


def _turns(counts, day="2026-11-16"):
    out = []
    base = datetime.fromisoformat(day + "T00:00:00+00:00")
    for (intent, locale), n in counts.items():
        for i in range(n):
            out.append(TurnRecord(turn_id=f"{intent}-{locale}-{i:05d}", timestamp=base + timedelta(seconds=i),
                                  locale=locale, intent=intent, query="q?", response="a.", model_id="m",
                                  prompt_version="p", latency_ms=10))
    return out


COUNTS = {("faq", "en-US"): 5000, ("faq", "ja-JP"): 12, ("recommendation", "en-US"): 800}


def test_at_least_rate_and_minimum_per_stratum_capped_by_size():
    sampled, summary = stratified_sample(_turns(COUNTS), rate=0.01, min_per_stratum=30, seed=1)
    sizes = {(s.intent, s.locale): s.sampled for s in summary.strata}
    assert sizes == {("faq", "en-US"): 50, ("faq", "ja-JP"): 12, ("recommendation", "en-US"): 30}
    assert summary.sampled >= 0.01 * summary.population and len(sampled) == summary.sampled


def test_reproducible_from_seed_whatever_the_input_order():
    turns = _turns(COUNTS)
    a, _ = stratified_sample(turns, seed=3)
    b, _ = stratified_sample(list(reversed(turns)), seed=3)
    c, _ = stratified_sample(turns, seed=4)
    assert [t.turn_id for t in a] == [t.turn_id for t in b]
    assert [t.turn_id for t in a] != [t.turn_id for t in c]


def test_window_and_duplicates():
    turns = _turns({("faq", "en-US"): 40}) + _turns({("faq", "en-US"): 40}, day="2026-11-20")
    sampled, summary = stratified_sample(turns + turns[:10], min_per_stratum=100,
                                         day_from=date(2026, 11, 16), day_to=date(2026, 11, 16))
    assert summary.population == 40 and all(t.day == "2026-11-16" for t in sampled)


def test_dataset_is_the_ordinary_format_with_recorded_answer_and_tags():
    sampled, _ = stratified_sample(_turns({("faq", "ja-JP"): 3}), min_per_stratum=3)
    loaded = parse_lines(dataset_text(sampled).encode().splitlines(), "sample.jsonl")
    assert not loaded.errors and len(loaded.cases) == 3
    case = loaded.cases[0]
    # production and the day; the capture time, the answering version and (when known) the tier feed
    # the stream drift's windows and strata.
    assert case.response == "a." and case.tags[:2] == ["production", "dt:2026-11-16"]
    assert case.tags[2].startswith("captured:2026-11-16T") and case.tags[3] == "version:p@m"
    assert case.metadata["model_id"] == "m" and case.locale == "ja-JP"
