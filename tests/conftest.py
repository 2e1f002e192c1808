"""Shared fixtures: the shared data folder, both loopcore implementations, hypothesis profiles,
a real ``redis-server`` and the state stores made against it.

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

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

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

#: The tests' Redis reply timeout (seconds) where a test is not about timeouts: the equality
#: tests compare decisions made *with* the store, and a loaded CI machine can stall a reply past
#: the product's default (0.25 s), which would fail open on purpose and make the test flaky.
TEST_SOCKET_TIMEOUT = 10.0

T = TypeVar("T")


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


HOST_TEST_PREFIX = "test_host_"
HOST_TESTS_ALWAYS_COLLECTED = {"test_host_imports.py"}  # runs in every run: no host needed


def _markexpr_selects(config: pytest.Config, marker: str) -> bool:
    """Whether ``-m`` can select a test carrying only ``marker`` (True without ``-m``)."""
    expr = config.option.markexpr
    if not expr:
        return True
    from _pytest.mark.expression import Expression  # pytest's own ``-m`` grammar

    return bool(Expression.compile(expr).evaluate(lambda name, **_: name == marker))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave the host modules out when ``-m`` deselects ``hosts`` (the default run): they skip
    at import without their extra, which would show as a skip in a run that never meant to run
    them."""
    name = collection_path.name
    if name.startswith(HOST_TEST_PREFIX) and name not in HOST_TESTS_ALWAYS_COLLECTED:
        if not _markexpr_selects(config, "hosts"):
            return True
    return None


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


# ------------------------------------------------------------------ redis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real ``redis-server`` for the session (tests keep apart by :func:`prefix`)."""
    from redis_server import RedisServer

    srv = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield srv
    srv.kill()


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """A key prefix of this test's own (from its node id)."""
    return f"t{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:8]}:"


@pytest.fixture
def make_store(redis_server: Any, prefix: str) -> Iterator[Callable[..., Any]]:
    """``make_store(url=None, **options)``: a :class:`loopguard.RedisStore` on the test server
    (or ``url``) with this test's prefix and :data:`TEST_SOCKET_TIMEOUT` unless given; their
    sync clients are closed after the test (the async ones: :func:`arun`)."""
    from loopguard import RedisStore

    made: list[Any] = []

    def make(url: str | None = None, **options: Any) -> Any:
        options.setdefault("prefix", prefix)
        options.setdefault("socket_timeout", TEST_SOCKET_TIMEOUT)
        store = RedisStore(url or redis_server.url, **options)
        made.append(store)
        return store

    make.made = made  # type: ignore[attr-defined]
    yield make
    for store in made:
        store.close()


@pytest.fixture
def arun(make_store: Any) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """``arun(main())``: ``asyncio.run`` that closes, in that loop and even when ``main`` raises,
    the ``redis.asyncio`` client of every store :func:`make_store` made (an unclosed one is
    reported later, in another test, as an unraisable ``ResourceWarning``)."""

    def run(main: Coroutine[Any, Any, T]) -> T:
        async def closing() -> T:
            try:
                return await main
            finally:
                for store in make_store.made:
                    await store.aclose()

        return asyncio.run(closing())

    return run
