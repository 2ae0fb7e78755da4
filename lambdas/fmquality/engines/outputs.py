"""Output files written so that a reader never sees a half-written file or a mix of two runs.

Each file is written to a temporary name beside it and renamed into place (a rename within one
folder is atomic). A run's set of outputs is cleared before the run starts, so a run that is killed
leaves no earlier run's report looking current, and is put in place in an order that ends with
``report.json``: a report present means every file it summarises is there.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# What a run writes into its --out folder, in the order it is put in place (the report last).
RUN_OUTPUTS = ("rejected.jsonl", "results.jsonl", "control_results.jsonl", "report.html", "report.json")


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` completely, or keeps what it held: never a part of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def clear_run_outputs(out: Path) -> None:
    """Remove an earlier run's outputs from ``out`` (checked writable first: an unwritable folder is
    found before any work is done)."""
    out.mkdir(parents=True, exist_ok=True)
    probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-check.", delete=True)
    probe.close()
    for name in RUN_OUTPUTS:
        (out / name).unlink(missing_ok=True)


def put_run_outputs(out: Path, files: dict[str, str | None]) -> None:
    """Write a run's outputs (``name -> text``; None: not written), ``report.json`` last."""
    unknown = set(files) - set(RUN_OUTPUTS)
    if unknown:
        raise ValueError(f"not a run output: {sorted(unknown)}")
    for name in RUN_OUTPUTS:
        if files.get(name) is not None:
            write_atomically(out / name, files[name])
