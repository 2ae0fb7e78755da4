"""End-to-end tests run statemachines/evaluation.asl.json on embedded AWS (moto) with the real handlers.

The synthesized CDK template is shared with the infrastructure tests (one synth per session), so the
metric names asserted here are the ones the deployed alarms use, not a second hand-written list.
"""

from __future__ import annotations

from tests.infrastructure.conftest import evaluation_template, synth  # noqa: F401 - shared fixtures
