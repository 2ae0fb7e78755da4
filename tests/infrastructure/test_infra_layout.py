"""The house rules of the CDK app (infra/ and app.py): it never imports the Lambda code (lambdas/), the
modules the local engine shares load without aws_cdk, and no function is longer than a screen (each
construct builds its resources in named steps)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "infra").rglob("*.py"), ROOT / "app.py"])
# Pure Python: infra/__init__.py promises these load without jsii.
WITHOUT_CDK = ("infra/__init__.py", "infra/asl.py", "infra/config.py", "infra/profiles.py", "infra/bedrock_models.py")
MAX_FUNCTION_LINES = 60


def _imported_packages(path: Path) -> set[str]:
    """Top-level packages ``path`` imports, at module level or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_infra_never_imports_the_lambda_code(path):
    # Its own copies of the few constants it shares are checked against the core by other tests.
    assert not _imported_packages(path) & {"fmquality", "handlers", "lambdas"}


@pytest.mark.parametrize("name", WITHOUT_CDK)
def test_the_modules_the_local_engine_shares_do_not_import_aws_cdk(name):
    assert not _imported_packages(ROOT / name) & {"aws_cdk", "constructs", "jsii", "cdk_nag"}


def test_no_function_is_longer_than_a_screen():
    long = [f"{_name(path)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in SOURCES
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []
