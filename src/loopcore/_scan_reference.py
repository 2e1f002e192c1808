"""The literal pure-Python reference of :mod:`loopcore._scan` (same API, same results).

Positions are Unicode code points.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TokenFinder", "word_lines"]

_TOKEN = re.compile(r"\w+", re.ASCII)
_LETTERS = re.compile(r"[A-Za-z]*")


class TokenFinder:
    """Find the word tokens of a text that are one of ``words`` (see ``loopcore._scan``)."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words: frozenset[str] = frozenset(
            w
            for w in words
            if isinstance(w, str) and w and w.isascii() and w.islower() and all(c.isalnum() or c == "_" for c in w)
        )

    def find(self, text: str, prefix: bool = False) -> list[tuple[int, int]]:
        """The ``(start, end)`` spans of the tokens (or, ``prefix=True``, of their
        leading runs of ASCII letters) of ``text`` that are one of the words."""
        _check_text(text)
        found: list[tuple[int, int]] = []
        for m in _TOKEN.finditer(text):
            start, end = m.span()
            if prefix:
                letters = _LETTERS.match(text, start)
                assert letters is not None  # [A-Za-z]* matches everywhere
                end = letters.end()
            if text[start:end].lower() in self.words:
                found.append((start, end))
        return found


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")


def word_lines(text: str, max_lines: int) -> frozenset[str]:
    """The distinct stripped lines among the first ``max_lines`` lines of ``text``
    that hold a letter or digit."""
    _check_text(text)
    if isinstance(max_lines, bool) or not isinstance(max_lines, int):
        raise TypeError(f"max_lines must be an int, not {type(max_lines).__name__}")
    if max_lines <= 0:
        return frozenset()
    return frozenset(line for line in map(str.strip, text.splitlines()[:max_lines]) if any(c.isalnum() for c in line))
