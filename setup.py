"""What pyproject.toml cannot say statically: the package list and where the bundled files come from.

The installed ``fmquality`` carries, under ``fmquality/bundled/``, the files a repository checkout has
beside the package and the default engine reads at run time (``fmquality.engines.shipped``):

    fmquality/bundled/statemachines/   statemachines/ (the ASL, its functions manifest, expand.py)
    fmquality/bundled/lambda_code/handlers/   lambdas/handlers/ (imported as ``handlers`` by the local engine)
    fmquality/bundled/datasets/        the shipped rubrics, the golden set and its catalog (--example)

They are mapped, not copied: the repository layout stays as it is. The build runs in a temporary
folder, so ``pip install .`` leaves no build/ folder in the repository.
"""

import atexit
import shutil
import tempfile

from setuptools import find_packages, setup

BUNDLED = {
    "fmquality.bundled.statemachines": "statemachines",
    "fmquality.bundled.lambda_code.handlers": "lambdas/handlers",
    "fmquality.bundled.datasets": "datasets",
}

build_base = tempfile.mkdtemp(prefix="fmquality-build-")
atexit.register(shutil.rmtree, build_base, ignore_errors=True)

setup(
    packages=find_packages("lambdas", include=["fmquality", "fmquality.*"]) + list(BUNDLED),
    package_dir={"": "lambdas", **BUNDLED},
    options={"build": {"build_base": build_base}},
)
