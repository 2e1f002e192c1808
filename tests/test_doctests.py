"""The examples in the public docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "loopguard",
    "loopguard.config",
    "loopguard.text",
    "loopguard.identity",
    "loopguard.brake",
    "loopguard.redact",
    "loopguard.toolruns",
    "loopguard.guard",
    "loopguard.guard.config",
    "loopguard.guard.core",
    "loopguard.guard.state",
    "loopguard.guard.streak",
    "loopguard.guard.wrap",
    "loopguard.results",
    "loopguard.messages",
    "loopguard.session",
    "loopguard.evaluate",
    "loopguard.stream",
    "loopguard.observe",
    "loopguard.integrations.openai",
    "loopguard.integrations.responses",
    "loopguard.integrations.anthropic",
    "loopcore._params",
    "loopcore._reference.chars",
    "loopcore._reference.buffer",
    "loopcore._reference.fences",
    "loopcore._reference.records",
    "loopcore._reference.exact",
    "loopcore._reference.lowdiv",
    "loopcore._reference.cycle",
    "loopcore._reference.pool",
    "loopcore._reference.near",
    "loopcore._reference.salad",
    "loopcore._reference.stream",
    "loopcore._reference.params",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
