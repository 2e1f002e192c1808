"""Type stubs for the compiled extension ``loopcore._scan`` (same API as ``_scan_reference``)."""

from collections.abc import Iterable

from typing_extensions import disjoint_base

@disjoint_base
class TokenFinder:
    words: frozenset[str]
    def __init__(self, words: Iterable[str]) -> None: ...
    def find(self, text: str, prefix: bool = False) -> list[tuple[int, int]]: ...

def word_lines(text: str, max_lines: int) -> frozenset[str]: ...
