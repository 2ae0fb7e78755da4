"""Files written so that a reader never sees a half-written one: each is written to a temporary name
beside it and renamed into place (a rename within one folder is atomic), with the permissions the
user's umask gives a new file (a temporary file is created 0600, which a published report must not keep).
"""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path
from typing import IO


@cache
def _new_file_mode() -> int:
    """0666 less the process's umask: what ``open(path, "w")`` would have created (read once)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` completely, or keeps what it held: never a part of it."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path, body: bytes) -> None:
    with StreamedFile(path, binary=True) as file:
        file.write(body)
        file.publish()


class StreamedFile:
    """A file written piece by piece under a temporary name beside ``path``; ``publish`` puts it in
    place whole (flushed, synced, renamed), ``discard`` removes it. As a context manager, a block
    that raises discards what was not published."""

    def __init__(self, path: Path, *, binary: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, self.temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(handle, _new_file_mode())
        self._file: IO | None = os.fdopen(handle, "wb") if binary else os.fdopen(handle, "w", encoding="utf-8",
                                                                                 newline="")

    def write(self, data: str | bytes) -> None:
        assert self._file is not None, "written after publish or discard"
        self._file.write(data)

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
