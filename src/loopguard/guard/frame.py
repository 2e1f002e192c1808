"""Which lines of a result carry content (``ignore_boilerplate``; ``docs/tools.md``): not markup
around a number (an exit-code wrapper), not "no output" lines, not the session's *frame* --
lines at the edges of at least 3 in 4 (and at least 3) of its last 16 *distinct* results (a
prompt, the working directory: what every result carries around different content; one result
returned again and again is not a frame).  A short result that states it printed nothing has
no content.  ``drift`` compares these lines; an empty failure starts no ``error_avoidance`` watch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..results import content_line, says_nothing

if TYPE_CHECKING:
    from .context import Call
    from .state import SessionState

__all__ = ["content_lines"]

_FRAME_RESULTS = 16  # results the session's frame (lines every result carries) is learned from
_FRAME_EDGE = 8  # lines at each end of a result that may be frame
_FRAME_MIN = 3  # a frame line is in at least this many of them, and in 3 of 4 of them


def content_lines(c: Call) -> frozenset[str]:
    """The result's lines that carry content (all its lines without ``ignore_boilerplate``);
    learns the frame from this result's edge lines afterwards."""
    lines = c.result_lines()
    if not c.cfg.ignore_boilerplate:
        return lines
    s = c.s
    need = max(_FRAME_MIN, (3 * len(s.frame_hist) + 3) // 4)
    out = _unframed(s, _unmarked(lines), need)
    if out and len(lines) <= 8 and says_nothing(lines):
        out = frozenset()  # "no output", framed by a prompt: nothing
    if c.digest not in s.frame_digests:
        _learn(s, c.text, c.digest)
    return out


def _unmarked(lines: frozenset[str]) -> frozenset[str]:
    """Lines that are not markup or "no output" (:func:`loopguard.results.content_line`)."""
    if len(lines) <= 8:
        return frozenset(line for line in lines if content_line(line))
    if "<" not in "".join(lines):  # a long result without markup: every line says something
        return lines
    # a long result: only tagged lines can be markup (and no line says "nothing")
    return lines.difference([line for line in lines if "<" in line and not content_line(line, False)])


def _unframed(s: SessionState, out: frozenset[str], need: int) -> frozenset[str]:
    """``out`` without the lines of the session's frame."""
    frame = s.frame
    if not frame:
        return out
    if len(out) <= 32:  # a few lines: look each up
        return frozenset(line for line in out if frame.get(s.h(line), 0) < need)
    # many lines (whose hashes the set already holds): look the frame's lines up
    framed = [h for h, n in frame.items() if n >= need]
    if not framed:
        return out
    by_hash = dict(zip(map(s.h, out), out))
    if len(by_hash) == len(out):
        return out.difference([by_hash[h] for h in framed if h in by_hash])
    drop = frozenset(framed)  # two lines share a hash: line by line
    return frozenset(line for line in out if s.h(line) not in drop)


def _learn(s: SessionState, text: str, digest: str) -> None:
    """Count this (new) result's edge lines into the frame; forget the oldest past 16 results."""
    if len(text) > 4000:  # the edges only (a frame line is short)
        rows = text[:2000].splitlines()[:_FRAME_EDGE] + text[-2000:].splitlines()[-_FRAME_EDGE:]
    else:
        rows = text.splitlines()
        if len(rows) > 2 * _FRAME_EDGE:
            rows = rows[:_FRAME_EDGE] + rows[-_FRAME_EDGE:]
    edge = frozenset(map(s.h, map(str.strip, rows)))
    frame, hist = s.frame, s.frame_hist
    hist.append((digest, edge))
    s.frame_digests.add(digest)
    for h in edge:
        frame[h] = frame.get(h, 0) + 1
    if len(hist) > _FRAME_RESULTS:
        gone, old_edge = hist.popleft()
        s.frame_digests.discard(gone)
        for h in old_edge:
            left = frame[h] - 1
            if left:
                frame[h] = left
            else:
                del frame[h]
