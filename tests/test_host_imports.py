"""Host packages stay optional (issue 19): ``import loopguard`` (and its CLI and adapters for
SDK streams) imports none of them, and installing loopguard without extras pulls none."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

HOSTS = ("litellm", "langchain", "langchain_core", "langgraph", "agents", "pydantic_ai", "mcp", "fastmcp")
DISTRIBUTIONS = ("litellm", "langchain", "openai-agents", "pydantic-ai", "pydantic-ai-slim", "mcp", "fastmcp")


def test_import_loopguard_imports_no_host_package() -> None:
    code = (
        "import sys, loopguard, loopguard.cli, loopguard.integrations.openai, loopguard.integrations.anthropic, "
        "loopguard.integrations.responses; "
        f"print(sorted(m for m in {HOSTS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_host_package_is_a_requirement_without_its_extra() -> None:
    requires = metadata.requires("loopguard") or []
    plain = [r for r in requires if "extra ==" not in r]
    names = {r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip().lower() for r in plain}
    assert not names & set(DISTRIBUTIONS), names
