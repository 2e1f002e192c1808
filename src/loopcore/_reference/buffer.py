"""The masked text ``t`` of one stream and its map back to the original text (spec §2, §2.6).

``t`` is the text the detectors see: the channel's original text, one code point at a time,
less what the fence masking (:mod:`.fences`) removes.  Each code point of ``t`` keeps its
offset in the original text, so that detections report original offsets.

>>> buffer = Buffer()
>>> for pos, ch in [(0, "a"), (1, "b"), (9, "c")]:  # the original text's offsets 2-8 were masked
...     buffer.append(pos, ch)
>>> buffer.text(), len(buffer), buffer.map(2), buffer.map(3)
('abc', 3, 9, 10)
"""

from __future__ import annotations

import sys


class Buffer:
    """The masked text ``t``, one code point per item, and the original offset of each."""

    def __init__(self) -> None:
        self._t: list[str] = []  # the masked text, one character per item
        self._orig: list[int] = []  # original offset of each character of t

    def __len__(self) -> int:
        """The length of ``t`` (code points)."""
        return len(self._t)

    def append(self, pos: int, ch: str) -> None:
        """Append ``ch`` to ``t``: the original text's code point at offset ``pos``."""
        self._t.append(ch)
        self._orig.append(pos)

    def text(self) -> str:
        """``t`` as a ``str``."""
        return "".join(self._t)

    def map(self, k: int) -> int:
        """Original offset of ``t`` offset ``k`` (``k == n`` maps past the end)."""
        if k < len(self._t):
            return self._orig[k]
        return self._orig[-1] + 1 if self._t else 0

    @property
    def memory_bytes(self) -> int:
        """Bytes held (the whole text: unbounded)."""
        return sys.getsizeof(self._t) + sys.getsizeof(self._orig) + 8 * len(self._orig)
