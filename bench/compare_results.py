"""Compare two results.jsonl files item by item, field by field (issue 11: a MangaAssist golden run
must give the same item results before and after the profiles change).

    python bench/compare_results.py BEFORE/results.jsonl AFTER/results.jsonl

Fields only the newer file has are accepted when they hold their empty default (None): e.g.
``total_100`` and ``grade``, which only a profile with letter grades fills. Exit 0 when every item
is identical, 1 otherwise (each difference printed as test_id: field.path: before -> after).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def load(path: str) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return {f"{r['test_id']}#{r.get('arm', 'candidate')}": r for r in rows}


def differences(before: Any, after: Any, path: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            where = f"{path}.{key}" if path else key
            if key not in before:
                if after[key] is not None:
                    out.append(f"{where}: (absent) -> {after[key]!r}")
            elif key not in after:
                out.append(f"{where}: {before[key]!r} -> (absent)")
            else:
                out += differences(before[key], after[key], where)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in differences(b, a, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


def compare(before_path: str, after_path: str) -> tuple[int, int, list[str]]:
    before, after = load(before_path), load(after_path)
    problems = [f"{k}: only in {before_path}" for k in sorted(set(before) - set(after))]
    problems += [f"{k}: only in {after_path}" for k in sorted(set(after) - set(before))]
    fields = 0
    for key in sorted(set(before) & set(after)):
        fields += len(before[key])
        problems += [f"{key}: {d}" for d in differences(before[key], after[key])]
    return len(before), fields, problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    items, fields, problems = compare(*argv)
    for p in problems:
        print(p)
    print(f"{items} items, {fields} top-level fields compared: {len(problems)} difference(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
