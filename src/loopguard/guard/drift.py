"""The ``drift`` rule: a result that is a near-copy of another call's (spec §5.2; ``docs/rules.md``).

A result whose content lines (:mod:`loopguard.guard.frame`) have Jaccard ``>= overlap_threshold``
with one of the last ``overlap_window`` results of *other* keys (both with at least 3 lines)
is a near-copy -- only when it adds no line absent from those recent results, so an edit whose
confirmation echoes the file with the changed lines is not drift.  A near-copy is no new
information; with ``drift_confirm`` (default) a notice comes when another near-copy follows
within 3 calls (without it, at the first).

The session remembers the content lines of those recent results as hashes (``hash()`` of each
line, never the text): at most ``overlap_window`` results and :data:`~loopguard.guard.state.DRIFT_BYTES`
(1 MiB) of hashes per session.  Past the bytes, the oldest results are forgotten first (a
result's line set holds at most 512 lines, about 50 KB of hashes: some 20 results fit).

*Rewording*: a call of the same tool (not a shell command; not a change unless it failed)
sharing half of its argument words with the previous one (Jaccard) and getting the identical
answer of fewer than 3 content lines is no new information, and a notice from the second in a row.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .. import messages
from .decisions import notice
from .state import DRIFT_BYTES
from .words import arg_words

if TYPE_CHECKING:
    from .context import Call
    from .state import SessionState

__all__ = ["RULE", "after", "reworded"]

RULE = "drift"
_DRIFT_RECUR = 3  # a near-copy is a notice when another came at most this many executions before
_REWORD_SHARE = 0.5  # a reworded call shares at least half of its argument words (Jaccard) with the last one
_INT_BYTES = sys.getsizeof(1 << 62)  # one line hash (an int object of 64 bits)


def hashed_lines(lines: frozenset[str]) -> frozenset[int]:
    """The hashes of ``lines`` (what the session remembers of a result: never its text)."""
    return frozenset(map(hash, lines))


def held_bytes(hashes: frozenset[int]) -> int:
    """The bytes a remembered result's line hashes hold: the set and its int objects."""
    return sys.getsizeof(hashes) + _INT_BYTES * len(hashes)


def _closest(c: Call, lines: frozenset[int]) -> tuple[float, str, frozenset[int]] | None:
    """The most recent other key's result the lines overlap enough: (Jaccard, its tool, its lines)."""
    threshold = c.cfg.overlap_threshold
    for other_key, other_tool, other_lines, _ in reversed(c.s.recent):
        if other_key == c.key or len(other_lines) < 3:
            continue
        small, large = sorted((len(lines), len(other_lines)))
        if small < threshold * large:  # Jaccard <= small/large: cannot reach it
            continue
        shared = len(lines & other_lines)
        overlap = shared / (len(lines) + len(other_lines) - shared)
        if overlap >= threshold:
            return overlap, other_tool, other_lines
    return None


def _adds_a_line(c: Call, lines: frozenset[int], other_lines: frozenset[int]) -> bool:
    """A line absent from every recent result of other keys (decided once, by differences
    that shrink at each step)."""
    rest = lines - other_lines
    for key, _, held, _ in c.s.recent:
        if not rest:
            break
        if key != c.key:
            rest = rest - held
    return bool(rest)


def after(c: Call) -> None:
    """A near-copy of a recent result of another key: no new information; a notice when it recurs."""
    s, cfg = c.s, c.cfg
    hashes = frozenset(map(c.s.h, c.lines))
    closest = _closest(c, hashes) if len(hashes) >= 3 else None
    if closest is not None and not _adds_a_line(c, hashes, closest[2]):
        overlap, other_tool, _ = closest
        c.drift = True
        recurs = s.executions - s.drift_at <= _DRIFT_RECUR
        s.drift_at = s.executions
        if recurs or not cfg.drift_confirm:
            lines = len(c.lines)
            text = messages.render("drift_notice", c.lang, tool=c.tool, other=other_tool, overlap=overlap, lines=lines)
            c.out.append(notice(c.tool, c.index, "drift", RULE, text, {"overlap": round(overlap, 4), "lines": lines}))
    _remember(s, c.key, c.tool, hashes, cfg.overlap_window)


def _remember(s: SessionState, key: str, tool: str, hashes: frozenset[int], window: int) -> None:
    """Add a result's line hashes to the session's recent results: at most ``window`` of them and
    :data:`DRIFT_BYTES` in all (the oldest go first; a result larger than that alone is not kept)."""
    size = held_bytes(hashes)
    if size > DRIFT_BYTES:
        return
    s.recent.append((key, tool, hashes, size))
    s.recent_bytes += size
    while len(s.recent) > window or s.recent_bytes > DRIFT_BYTES:
        s.recent_bytes -= s.recent.popleft()[3]


def reworded(c: Call) -> None:
    """A reworded call (same tool, most argument words shared, other key) with the identical
    short answer (fewer than 3 lines: ``after`` compares the longer ones): no new information
    from the first, a notice from the second on.  (A question, or a change that failed: a
    change's receipt says nothing about whether two changes were the same; not a shell
    command: other commands are other actions, whatever words they share.)"""
    cfg, s = c.cfg, c.s
    if not (cfg.drift_confirm and 0 < len(c.lines) < 3 and not c.drift and c.facts is None):
        return
    if not (c.failure or not c.world):
        return
    words = frozenset(map(s.h, arg_words(c.args)))
    last = s.reworded.get(c.tool)
    count = 0
    if last is not None and last[1] != c.key and last[2] == c.digest and words and last[0]:
        shared = len(words & last[0])
        if shared >= _REWORD_SHARE * (len(words) + len(last[0]) - shared):
            count = last[3] + 1
    s.reworded.remember(c.tool, (words, c.key, c.digest, count))
    if not count:
        return
    c.drift = True
    if count >= 2:
        text = messages.render("reworded_notice", c.lang, tool=c.tool, count=count + 1)
        c.out.append(notice(c.tool, c.index, "drift", RULE, text, {"calls": count + 1, "reworded": True}))
