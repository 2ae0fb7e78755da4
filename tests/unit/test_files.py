"""Output files are written whole or not at all, with the permissions the user's umask gives a new file
(issue 32: report.html, results.jsonl and the others came out 0600 whatever the umask)."""

from __future__ import annotations

import os
import stat

import pytest

from fmquality import files


@pytest.fixture
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)
        files._new_file_mode.cache_clear()

    before = os.umask(0o022)
    os.umask(before)
    yield set_mask
    os.umask(before)
    files._new_file_mode.cache_clear()


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_published_file_has_the_mode_the_umask_gives(tmp_path, umask, mask, mode):
    umask(mask)
    files.write_atomically(tmp_path / "report.json", "{}")
    with files.StreamedFile(tmp_path / "results.jsonl") as streamed:
        streamed.write("{}\n")
        streamed.publish()
    for name in ("report.json", "results.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode


def test_a_file_discarded_leaves_what_was_there(tmp_path):
    target = tmp_path / "summary.md"
    target.write_text("earlier run", encoding="utf-8")
    with files.StreamedFile(target) as streamed:
        streamed.write("half of a new")
    assert target.read_text(encoding="utf-8") == "earlier run" and len(list(tmp_path.iterdir())) == 1
