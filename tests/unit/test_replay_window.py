"""run.replay's window on AWS: which day partitions a window reads, and the input's replay block."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from fmquality.run.replay import ReplayRequest, parse_window, window_days


@pytest.mark.parametrize(("start", "end", "days"), [
    ("2026-11-23T10:00:00Z", "2026-11-23T11:00:00Z", [date(2026, 11, 23)]),
    # An end at midnight reads no turn of the next day: the window's end is exclusive.
    ("2026-11-23T22:00:00Z", "2026-11-24T00:00:00Z", [date(2026, 11, 23)]),
    ("2026-11-23T23:30:00Z", "2026-11-25T00:30:00Z", [date(2026, 11, 23), date(2026, 11, 24), date(2026, 11, 25)]),
    # Partitions are UTC days: 08:00 in Tokyo is 23:00 UTC the day before.
    ("2026-11-24T08:00:00+09:00", "2026-11-24T08:30:00+09:00", [date(2026, 11, 23)]),
])
def test_a_window_reads_the_utc_day_partitions_it_overlaps(start, end, days):
    assert window_days(*parse_window(start, end)) == days


def test_the_replay_block_names_its_bad_field():
    with pytest.raises(ValidationError, match="replay.to"):
        ReplayRequest.model_validate({"from": "2026-11-23T10:00:00Z", "to": "2026-11-23T10:00"})
    with pytest.raises(ValidationError, match="extra"):
        ReplayRequest.model_validate({"from": "2026-11-23T10:00:00Z", "to": "2026-11-23T11:00:00Z", "until": 1})
