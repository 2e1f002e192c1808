"""Helpers shared by the stream adapter tests: the dev cases as deltas, and the expected cut worked
out independently of the adapters (a bare TextLoopDetector fed one code point at a time)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from conftest import CASES
from loopguard import Detection, TextConfig, TextLoopDetector, scan_text
from loopguard.messages import pick_language

ZH_REASONING = "010_zh-reasoning-sentence-loop.txt"  # cycle at 1000, cut 333 (index.json: loop_start 289, period 45)
EN_ANSWER = "001_en-verbatim-explanation-paragraph.txt"  # near_cycle at 2000, cut 1260 (loop_start 884, period 379)
RESCUE_KINDS = ("cycle", "pool", "near_cycle")  # session.py _RESCUE_KINDS


def case(name: str) -> str:
    index = {e["file"]: e for e in json.loads((CASES / "index.json").read_text(encoding="utf-8"))}
    assert index[name]["verdict"] == "loop"
    return (CASES / name).read_text(encoding="utf-8")


def split(text: str, sizes: tuple[int, ...] = (7,)) -> list[str]:
    """``text`` in deltas whose lengths cycle through ``sizes`` (code points)."""
    out, at, i = [], 0, 0
    while at < len(text):
        n = sizes[i % len(sizes)]
        out.append(text[at : at + n])
        at, i = at + n, i + 1
    return out


def acting(text: str, channel: str, config: TextConfig | None = None) -> tuple[int, Detection]:
    """Independently: the code point at which the detectors first call for action, and the
    detection that acts there (a rescue kind among that checkpoint's detections first)."""
    det = TextLoopDetector(config or TextConfig())
    seen: list[Detection] = []
    for i, ch in enumerate(text):
        found = det.feed(ch, channel)
        seen += found
        if det.action_required(channel):
            candidates = found or seen
            choice = next((d for d in candidates if d.kind in RESCUE_KINDS), candidates[-1])
            assert choice in scan_text(text, channel=channel, config=config or TextConfig())
            return i + 1, choice
    raise AssertionError("no action")


def boundary(deltas: list[str], position: int) -> tuple[int, int]:
    """(index of the delta whose end is the first boundary >= position, that boundary)."""
    end = 0
    for i, d in enumerate(deltas):
        end += len(d)
        if end >= position:
            return i, end
    raise AssertionError("position past the end")


def marker(channel: str, removed: int, kept: str) -> str:
    if pick_language("auto", kept) == "zh":
        return f"〔已删除 {removed} 字符的重复{'推理' if channel == 'reasoning' else '正文'}〕"
    return f"〔{removed} chars of repeated {'reasoning' if channel == 'reasoning' else 'text'} removed〕"


def expected_kept(original: str, cut: int, channel: str) -> str:
    kept = original[:cut]
    return kept + ("" if kept.endswith("\n") else "\n") + marker(channel, len(original) - cut, kept)


def ns(value: Any) -> Any:
    """Dicts → SimpleNamespace objects (attribute access, like SDK models)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: ns(v) for k, v in value.items()})
    return value


class Upstream:
    """A sync stream that records ``close()`` calls (like the SDK's ``Stream``)."""

    def __init__(self, events: Iterable[Any]) -> None:
        self._it = iter(events)
        self.closes = 0
        self.pulled = 0

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        value = next(self._it)
        self.pulled += 1
        return value

    def close(self) -> None:
        self.closes += 1


class AsyncUpstream:
    """An async stream with an async ``close()`` only (like the SDKs' ``AsyncStream`` / ``AsyncMessageStream``)."""

    def __init__(self, events: Iterable[Any]) -> None:
        self._it = iter(events)
        self.closes = 0

    def __aiter__(self) -> AsyncUpstream:
        return self

    async def __anext__(self) -> Any:
        await asyncio.sleep(0)
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self.closes += 1
