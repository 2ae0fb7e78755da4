# Set-up is part of every target: .venv is created when missing and filled from the pinned lock files,
# only with what the target needs: `run`, `bench` and `calibrate` the core and the local engines
# (requirements-local.txt); `test` and `synth` everything (requirements-dev.txt: local, CDK, tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
OUT ?= runs/latest
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
export PYTHONPATH := $(CURDIR)/lambdas:$(CURDIR)

.PHONY: run test synth bench calibrate clean

$(RUN_STAMP): requirements.txt requirements-local.txt pyproject.toml setup.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-local.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP) requirements-cdk.txt requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(DEV_STAMP)

# The golden set holds defective answers on purpose (to calibrate the judge), so its gate fails:
# exit 1 is the expected outcome here; only bad input (2) or a broken run (3) fails make.
# `fmquality run --example` says so before it starts and names report.html when it ends.
run: $(RUN_STAMP)
	$(BIN)/fmquality run --example --out $(OUT); status=$$?; test $$status -le 1

# asl-validator (npm, pinned in package.json + package-lock.json) for the ASL tests.
node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch node_modules

test: $(DEV_STAMP) node_modules
	$(BIN)/python -m pytest -n 2 tests

# Writes cdk.out/ and builds the dependency layer with pip for arm64 (needs PyPI, no Docker).
# FMQ_SKIP_LAYER_BUNDLING=1 synthesizes offline with a placeholder layer: never deploy that output.
synth: $(DEV_STAMP)
	$(BIN)/python app.py

bench: $(RUN_STAMP)
	$(BIN)/python -m bench

# Agreement of the scores with human judgments on every set of the plan (missing sets are skipped),
# the defective answers caught per defect family, the checks that fire on acceptable answers, a
# per-intent threshold fit (a diff, never applied) and the offline judge's signal agreement; then the
# sensitivity suite on the labelled sets' acceptable answers, offline and checks alone
# (docs/sensitivity.md), written to calibration/sensitivity/<set>/.
calibrate: $(RUN_STAMP)
	$(BIN)/fmquality calibrate --plan datasets/calibration.yaml --out calibration --fit \
		--signals-out calibration/offline_agreement.yaml
	$(BIN)/fmquality sensitivity --plan datasets/calibration.yaml --sets golden,paraphrase,blind_dev \
		--judge offline --judge scripted --out calibration/sensitivity

clean:
	rm -rf $(VENV) cdk.out runs calibration .pytest_cache node_modules
