# Set-up is part of every target: .venv is created when missing and filled from the requirement files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
export PYTHONPATH := $(CURDIR)/lambdas:$(CURDIR)

.PHONY: run test synth bench calibrate clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

# The golden set holds defective answers on purpose (to calibrate the judge), so its gate fails:
# exit 1 is the expected outcome here; only bad input (2) or a broken run (3) fails make.
run: $(STAMP)
	$(BIN)/fmquality run --dataset datasets/mangaassist/golden.jsonl --catalog datasets/mangaassist/catalog.json \
		--out runs/latest; status=$$?; test $$status -le 1

# asl-validator (npm, pinned in package.json + package-lock.json) for the ASL tests.
node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch node_modules

test: $(STAMP) node_modules
	$(BIN)/python -m pytest -n 2 tests

# Writes cdk.out/ and builds the dependency layer with pip for arm64 (needs PyPI, no Docker).
# FMQ_SKIP_LAYER_BUNDLING=1 synthesizes offline with a placeholder layer: never deploy that output.
synth: $(STAMP)
	$(BIN)/python app.py

bench: $(STAMP)
	$(BIN)/python -m bench

# Agreement of the scores with human judgments on every set of the plan (missing sets are skipped),
# the checks that fire on acceptable answers, a per-intent threshold fit (a diff, never applied) and
# the offline judge's signal agreement.
calibrate: $(STAMP)
	$(BIN)/fmquality calibrate --plan datasets/calibration.yaml --out calibration --fit \
		--signals-out calibration/offline_agreement.yaml

clean:
	rm -rf $(VENV) cdk.out runs calibration .pytest_cache node_modules
