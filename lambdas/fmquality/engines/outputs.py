"""An --out folder: output files written so that a reader never sees a half-written file or a mix of two
runs.

Each file is written to a temporary name beside it and renamed into place (a rename within one folder
is atomic). A results file is written line by line as the cases finish (``StreamedFile``) and renamed
into place with the others once the run is scored. A run's outputs (``run.layout.RUN_OUTPUTS``) are cleared before the run starts, so a run
that is killed leaves no earlier run's report looking current, and are put in place by
``run.layout.write_outputs`` through ``FolderStorage``, ``report.json`` last: a report present means
every file it summarises is there.
"""

from __future__ import annotations

import contextlib
import html
import json
import tempfile
from pathlib import Path
from typing import Any

from fmquality.files import StreamedFile, write_atomically, write_bytes_atomically  # noqa: F401 - this module's API
from fmquality.run.layout import JUDGE_TRACES, RUN_OUTPUTS


class FolderStorage:
    """A folder as the ``run.layout.Storage`` of a run's files: a key is a path inside it. A missing
    file raises FileNotFoundError."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read_bytes(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def read_text_if_exists(self, key: str) -> str | None:
        path = self.root / key
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write_bytes(self, key: str, body: bytes, content_type: str) -> str:
        write_bytes_atomically(self.root / key, body)
        return str(self.root / key)


def clear_run_outputs(out: Path) -> None:
    """Remove an earlier run's outputs from ``out`` (checked writable first: an unwritable folder is
    found before any work is done)."""
    out.mkdir(parents=True, exist_ok=True)
    probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-check.", delete=True)
    probe.close()
    for name in RUN_OUTPUTS:
        (out / name).unlink(missing_ok=True)
    # An earlier run's judge traces (judge/<arm>/<test_id>/<dimension>.json): those files only.
    traces = out / JUDGE_TRACES
    for trace in traces.glob("*/*/*.json"):
        trace.unlink(missing_ok=True)
    for folder in sorted((p for p in traces.glob("**/*") if p.is_dir()), key=lambda p: -len(p.parts)) + [traces]:
        with contextlib.suppress(OSError):  # a folder that holds anything else is kept
            folder.rmdir()


def named_as_given(outputs: dict[str, Any], uploaded: dict[str, Path]) -> dict[str, Any]:
    """A run's files with each embedded copy of a user's file (its URI, a key of ``uploaded``) named by
    the path the user gave, escaped as each file's format needs: a local run's summary, report and
    rejected lines name the user's own dataset, not the embedded bucket."""
    out: dict[str, Any] = {}
    for name, body in outputs.items():
        if not isinstance(body, (str, bytes)):
            out[name] = body  # a file the run did not write
            continue
        text = body.decode("utf-8", errors="surrogateescape") if isinstance(body, bytes) else body
        for uri, path in uploaded.items():
            given = str(path)
            if name.endswith((".json", ".jsonl")):
                given = json.dumps(given)[1:-1]
            elif name.endswith((".xml", ".html")):
                given = html.escape(given)
            text = text.replace(uri, given)
        out[name] = text.encode("utf-8", errors="surrogateescape") if isinstance(body, bytes) else text
    return out
