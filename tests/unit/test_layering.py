"""The house rules of lambdas/fmquality (README, "Layout"): no import cycles, and no module imports a
layer above its own. Every import counts, also one inside a function (a lazy import hides an arrow,
it does not remove it)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lambdas" / "fmquality"

# Lowest first. A module may import its own layer and the layers below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("domain", "retry", "files"),
    ("config", "stats"),
    ("sensitivity",),
    ("language",),
    ("claims",),
    ("scoring", "judges.base"),
    ("schemes",),
    ("judges",),
    ("targets",),
    ("report",),
    ("production", "adapters"),
    ("run",),
    ("engines",),
    ("cli",),
)
MAX_LINES = 450  # "no module of the core over ~400 lines"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("fmquality"):
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def layer_of(name: str) -> int | None:
    inner = name.removeprefix("fmquality.")
    best: tuple[int, int] | None = None  # (prefix length, layer): the most specific prefix wins
    for layer, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if inner == prefix or inner.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
    return None if best is None else best[1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != "fmquality" and layer_of(m) is None] == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_module_imports_a_layer_above_its_own():
    upward = defaultdict(list)
    for name, targets in graph().items():
        for target in targets:
            if name != "fmquality" and target != "fmquality" and layer_of(target) > layer_of(name):
                upward[name].append(target)
    assert dict(upward) == {}


def test_no_module_of_the_core_is_long():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_the_checker_sees_a_cycle_and_an_upward_arrow():
    """The checks above can fail: a made-up graph with both faults is caught."""
    edges = {"fmquality.domain.case": {"fmquality.run.dataset"}, "fmquality.run.dataset": {"fmquality.domain.case"}}
    assert cycles(edges) == [["fmquality.domain.case", "fmquality.run.dataset"]]
    assert layer_of("fmquality.run.dataset") > layer_of("fmquality.domain.case")
    assert layer_of("fmquality.judges.base") < layer_of("fmquality.schemes.mangaassist") < layer_of("fmquality.judges.offline")
