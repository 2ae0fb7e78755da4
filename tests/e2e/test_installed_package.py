"""The package as `pip install` builds it: the wheel, put on the path of an empty folder outside the
checkout, runs `fmquality run --example` (the shipped golden set, the state machine, the rubric, the
handlers all from the wheel's bundled files). Dependencies come from this environment (the lock)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_built_wheel_runs_the_example_from_any_folder(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--disable-pip-version-check", "-w", str(wheels), str(ROOT)], check=True, timeout=300)
    (wheel,) = wheels.glob("fmquality-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    anywhere = tmp_path / "anywhere"
    anywhere.mkdir()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import fmquality; "
            "assert fmquality.__file__.startswith(sys.argv[1]), fmquality.__file__; "
            "from fmquality.cli.main import main; sys.exit(main(['run', '--example', '--out', 'out', '--quiet']))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code, str(site)], cwd=anywhere, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # the golden set fails its gate by design
    assert (anywhere / "out" / "report.html").is_file() and (anywhere / "out" / "junit.xml").is_file()
    assert not (ROOT / "build").exists()  # building leaves nothing in the checkout
