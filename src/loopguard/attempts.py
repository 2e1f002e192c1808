"""What one attempt (one model request) streamed: :class:`AttemptRecorder` (spec §0, §3).

A :class:`~loopguard.Session` records each attempt's text and tool calls for the
``replay`` rule (bounded: an attempt too long to compare is never a replay), and a
:class:`~loopguard.StreamGuard` records its tool calls with one, to build the pruned outcome
(it keeps the text whole itself, appending each delta to a list per channel: cheaper per
delta than :meth:`AttemptRecorder.add`).  Positions and lengths are Unicode code points.
"""

from __future__ import annotations

from typing import Any

from .text import CHANNELS

__all__ = ["AttemptRecorder"]

#: Deltas kept as separate strings per channel before they are joined into one: one string
#: per 512 deltas keeps memory near one byte per character (a 4-character ``str`` costs ~53).
JOIN_EVERY = 512
_UNBOUNDED = 1 << 62


class AttemptRecorder:
    """The text per channel and the tool calls of one attempt, optionally bounded.

    Parameters
    ----------
    max_chars : int | None
        Code points kept over both channels; ``None`` (default) = all.  A delta that
        would pass the bound *overflows* the recorder: the text and calls kept so far
        are dropped and nothing more of this attempt is kept (the counts go on).
    max_calls : int | None
        Tool calls kept; one more overflows the recorder the same way.  ``None`` = all.

    Attributes
    ----------
    kept : int
        Code points held now (0 once overflowed).
    reasoning_chars : int
        Code points of reasoning recorded (overflow or not).
    wrote_text : bool
        Some answer text had a non-whitespace character.
    call_count : int
        Tool calls recorded (overflow or not).
    overflowed : bool
        A bound was passed: :meth:`text` is ``""`` and :attr:`calls` empty from then on.
    calls : list
        The calls kept, in order (whatever the owner records: ``(tool, args)`` for a
        session, call records for a stream guard).

    Not thread-safe (one recorder per attempt, as its owner).

    Examples
    --------
    >>> rec = AttemptRecorder(max_chars=10)
    >>> rec.add("reasoning", "think ")
    True
    >>> rec.add("text", "answer")  # 12 > 10: overflow
    False
    >>> rec.overflowed, rec.text("reasoning"), rec.reasoning_chars, rec.wrote_text
    (True, '', 6, True)
    """

    __slots__ = (
        "_joined",
        "_limit",
        "calls",
        "call_count",
        "kept",
        "max_calls",
        "max_chars",
        "overflowed",
        "parts",
        "reasoning_chars",
        "wrote_text",
    )

    def __init__(self, max_chars: int | None = None, max_calls: int | None = None) -> None:
        self.max_chars = max_chars
        self._limit = _UNBOUNDED if max_chars is None else max_chars
        self.max_calls = max_calls
        self.parts: dict[str, list[str]] = {channel: [] for channel in CHANNELS}
        # per channel, how many leading parts are joined segments (each JOIN_EVERY deltas):
        # a segment is never joined again, so each code point is copied once
        self._joined = dict.fromkeys(CHANNELS, 0)
        self.calls: list[Any] = []
        self.kept = 0
        self.reasoning_chars = 0
        self.wrote_text = False
        self.call_count = 0
        self.overflowed = False

    def add(self, channel: str, delta: str) -> bool:
        """Record ``delta`` of ``channel`` (``"reasoning"`` or ``"text"``, a ``str``).

        Returns ``False`` when this delta overflowed the recorder (once), else ``True``.
        """
        if channel == "reasoning":
            self.reasoning_chars += len(delta)
        elif not self.wrote_text and delta and not delta.isspace():
            self.wrote_text = True
        if self.overflowed:
            return True
        kept = self.kept + len(delta)
        if kept > self._limit:
            self.overflow()
            return False
        parts = self.parts[channel]
        parts.append(delta)
        self.kept = kept
        joined = self._joined[channel]
        if len(parts) - joined >= JOIN_EVERY:
            parts[joined:] = ["".join(parts[joined:])]
            self._joined[channel] = joined + 1
        return True

    def add_call(self, call: Any) -> bool:
        """Record a tool call; ``False`` when it overflowed the recorder (once), else ``True``."""
        self.call_count += 1
        if self.overflowed:
            return True
        if self.max_calls is not None and len(self.calls) >= self.max_calls:
            self.overflow()
            return False
        self.calls.append(call)
        return True

    def overflow(self) -> None:
        """Drop what is kept and keep nothing more of this attempt."""
        self.parts = {channel: [] for channel in CHANNELS}
        self._joined = dict.fromkeys(CHANNELS, 0)
        self.calls = []
        self.kept = 0
        self.overflowed = True

    def text(self, channel: str) -> str:
        """The recorded text of ``channel`` (``""`` once overflowed)."""
        return "".join(self.parts[channel])
