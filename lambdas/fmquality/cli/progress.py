"""Progress of a run: a live bar on a terminal, plain lines when stdout is not one (CI logs, `make`
redirected), nothing with --quiet. The lines go to stderr, at most one every ``LINE_INTERVAL_S``
seconds and one when a task completes, so a 40-second run is never 40 seconds of silence."""

from __future__ import annotations

import sys
import time
from typing import Any

LINE_INTERVAL_S = 5.0


class LineProgress:
    """The part of rich's Progress the run uses (add_task, advance, update; a context manager),
    printed as lines: ``scoring candidate: 40/159 items (25%), 12 s``."""

    def __init__(self, label: str, stream: Any = None, interval_s: float = LINE_INTERVAL_S) -> None:
        self.label, self.stream, self.interval_s = label, stream or sys.stderr, interval_s
        self._tasks: dict[int, dict[str, Any]] = {}
        self._started = time.monotonic()

    def __enter__(self) -> "LineProgress":
        self._started = time.monotonic()
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def add_task(self, description: str, total: int | None = None) -> int:
        task_id = len(self._tasks)
        self._tasks[task_id] = {"description": description, "total": total, "completed": 0, "printed_at": None,
                                "finished": False}
        return task_id

    def advance(self, task_id: int, amount: int = 1) -> None:
        task = self._tasks[task_id]
        self.update(task_id, completed=task["completed"] + amount)

    def update(self, task_id: int, completed: int | None = None, total: int | None = None) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task["total"] = total
        if completed is not None:
            task["completed"] = completed
        done = bool(task["total"]) and task["completed"] >= task["total"]
        now = time.monotonic()
        due = task["printed_at"] is None or now - task["printed_at"] >= self.interval_s
        if (done and not task["finished"]) or (due and not task["finished"]):
            task["printed_at"], task["finished"] = now, done
            self._print(task, now)

    def _print(self, task: dict[str, Any], now: float) -> None:
        total = task["total"]
        share = f" ({task['completed'] / total:.0%})" if total else ""
        of_total = f"/{total}" if total else ""
        print(f"{self.label} {task['description']}: {task['completed']}{of_total} items{share}, "
              f"{now - self._started:.0f} s", file=self.stream, flush=True)


def run_progress(label: str, console: Any, quiet: bool) -> Any:
    """A rich bar on a terminal, lines otherwise, a disabled bar with --quiet."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not quiet and not sys.stdout.isatty():
        return LineProgress(label)
    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, disable=quiet)
