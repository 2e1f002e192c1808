"""Shared fixtures: the shared data folder, both loopcore implementations, hypothesis profiles."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import loopcore

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / ".." / "shared" / "data").resolve()
CASES = DATA / "cases"

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.register_profile("soak", max_examples=20000, deadline=None)
_profile = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(_profile)  # an unknown name raises here, on purpose

IMPLEMENTATIONS = sorted(loopcore.implementations())


def load_index() -> list[dict]:
    with open(CASES / "index.json", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> str:
    """Each available loopcore implementation ("cython", "python")."""
    return request.param


def pytest_report_header(config: pytest.Config) -> str:
    return f"loopcore: live={loopcore.IMPLEMENTATION}, available={IMPLEMENTATIONS}, data={DATA}"
