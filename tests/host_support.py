"""The host packages' end-to-end tests (issue 19): marked ``hosts`` (left out of the default run;
``.ci/run`` installs the extras and runs ``-m hosts`` with ``LOOPGUARD_REQUIRE_HOSTS=1``)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["REQUIRE_HOSTS_ENV", "require_host"]

REQUIRE_HOSTS_ENV = "LOOPGUARD_REQUIRE_HOSTS"


def require_host(module: str, extra: str) -> ModuleType:
    """The host package ``module``, imported; without it the calling test module is skipped
    (naming the extra to install), or fails when ``LOOPGUARD_REQUIRE_HOSTS=1`` (CI: there the
    host tests must run)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f"needs {module} (pip install -e '.[{extra}]'): {exc}"
        if os.environ.get(REQUIRE_HOSTS_ENV) == "1":
            raise RuntimeError(f"{REQUIRE_HOSTS_ENV}=1 but {reason}") from exc
        pytest.skip(reason, allow_module_level=True)
