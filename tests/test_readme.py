"""The README's Python examples print exactly what the README shows after them."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
# a block's code holds no fence: a block without "prints" never swallows the next one's
EXAMPLES = re.findall(r"```python\n((?:(?!```).)*?)```\n\nprints\n\n```text\n(.*?)```", README, flags=re.S)


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize(("code", "expected"), EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_readme_example(code: str, expected: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    assert out.getvalue() == expected
