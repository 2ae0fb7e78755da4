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
import os
import tempfile
from pathlib import Path
from typing import IO

from fmquality.run.layout import JUDGE_TRACES, RUN_OUTPUTS


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` completely, or keeps what it held: never a part of it."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class StreamedFile:
    """A file written piece by piece under a temporary name beside ``path``; ``publish`` puts it in
    place whole (flushed, synced, renamed), ``discard`` removes it. As a context manager, a block
    that raises discards what was not published."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, self.temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self._file: IO[str] | None = os.fdopen(handle, "w", encoding="utf-8", newline="")

    def write(self, text: str) -> None:
        assert self._file is not None, "written after publish or discard"
        self._file.write(text)

    def publish(self) -> None:
        assert self._file is not None, "published twice or after discard"
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            Path(self.temporary).unlink(missing_ok=True)

    def __enter__(self) -> "StreamedFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


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
