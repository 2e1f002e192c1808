"""Shared fixtures: the shared data folder, both loopcore implementations, hypothesis profiles.

The shared data
---------------
Tests marked ``shared_data`` read the labelled cases, the call-hash vectors and the real agent
logs of the project's ``shared`` folder: ``../shared/data``, beside this repository (or the folder
``LOOPGUARD_SHARED_DATA`` names).  Without it those tests are skipped, all with one reason that
says where the data is looked for and how to get it, and the core set runs from the repository
alone.  ``LOOPGUARD_REQUIRE_SHARED_DATA=1`` (set by ``.ci/run``) turns a missing folder into an
error instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import loopcore

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA_ENV = "LOOPGUARD_SHARED_DATA"
REQUIRE_SHARED_DATA_ENV = "LOOPGUARD_REQUIRE_SHARED_DATA"
DATA = Path(os.environ.get(SHARED_DATA_ENV) or ROOT / ".." / "shared" / "data").resolve()
CASES = DATA / "cases"
#: Whether the shared data is there (its case index stands for the whole folder).
SHARED_AVAILABLE = (CASES / "index.json").is_file()
SHARED_REASON = (
    f"shared data not found at {DATA}: these tests need the project's `shared` folder checked out "
    f"beside this repository (../shared/data), or {SHARED_DATA_ENV}=/path/to/shared/data"
)
#: Marks a test (or, as ``pytestmark``, a module) that reads the shared data.
shared_data = pytest.mark.shared_data

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.register_profile("soak", max_examples=20000, deadline=None)
_profile = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(_profile)  # an unknown name raises here, on purpose

IMPLEMENTATIONS = sorted(loopcore.implementations())


def shared_json(relative: str, default: Any) -> Any:
    """The JSON file ``DATA / relative``, or ``default`` when the shared data is absent (for
    module-level parametrisation: the tests themselves are marked ``shared_data`` and skipped)."""
    if not SHARED_AVAILABLE:
        return default
    with open(DATA / relative, encoding="utf-8") as fh:
        return json.load(fh)


def load_index() -> list[dict]:
    """The shared case index (``[]`` when the shared data is absent)."""
    index: list[dict] = shared_json("cases/index.json", [])
    return index


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(REQUIRE_SHARED_DATA_ENV) == "1" and not SHARED_AVAILABLE:
        raise pytest.UsageError(f"{REQUIRE_SHARED_DATA_ENV}=1 but the {SHARED_REASON}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``shared_data`` tests, with the one reason, when the data is absent (before any other
    skip: a parametrisation over the absent cases would otherwise say "empty parameter set")."""
    if not SHARED_AVAILABLE and item.get_closest_marker("shared_data") is not None:
        pytest.skip(SHARED_REASON)


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> str:
    """Each available loopcore implementation ("cython", "python")."""
    return request.param


def pytest_report_header(config: pytest.Config) -> str:
    data = DATA if SHARED_AVAILABLE else f"{DATA} (absent: shared_data tests are skipped)"
    return f"loopcore: live={loopcore.IMPLEMENTATION}, available={IMPLEMENTATIONS}, data={data}"
