"""Checked by mypy --strict in test_typing.py: the stubs and annotations users rely on."""

from __future__ import annotations

from typing import Any

import loopcore
from loopguard import Detection, TextConfig, TextLoopDetector, scan_text

stream = loopcore.ChannelStream(**TextConfig().stream_params("text"))
raw: list[tuple[str, int, int, int, dict[str, Any]]] = stream.feed("abc") + stream.finish()
length: int = stream.length + stream.masked_length + stream.memory_bytes
hits: dict[str, int] = stream.hits
implementation: str = loopcore.IMPLEMENTATION

detector = TextLoopDetector("rescue", implementation="cython")
found: list[Detection] = detector.feed("hello", "reasoning") + detector.finish()
positions: list[int] = [d.position for d in found] + [d.cut for d in scan_text("a" * 10)]
as_dicts: list[dict[str, Any]] = [d.to_dict() for d in found]
