"""Fence masking (spec §2.6): fenced code blocks are removed from what the detectors see.

On the text channel (``skip_code_blocks``) three or more backticks or tildes at the start of a
line (after spaces or tabs only) open a fence: the rest of that line and every line up to
the closing one (at least as many of the same character, then only blanks) are dropped, the
fence lines included.  A code line repeated ``fence_repeat_lines`` times in a row
(:func:`fence_line_counts`) is passed on after all: a loop inside a fence needs more evidence,
never none.  :class:`Fences` is the character state machine; positions still map back to the
original text (:class:`.buffer.Buffer`).

>>> fences, t = Fences(fence_repeat_lines=0), ""
>>> for pos, ch in enumerate("Run:\\n```sh\\nmake\\n```\\nDone."):
...     t += "".join(c for _, c in fences.take(pos, ch))
>>> t
'Run:\\nDone.'
"""

from __future__ import annotations

from .chars import _DIGITS

#: Inside a fenced code block (text channel), a code line identical to the previous ones
#: ``fence_repeat_lines`` times in a row (this copy included; 8 in ``default``, 0 = off) is passed
#: to the detectors, from this copy on -- when it has at most this many code points, at least
#: FENCE_MIN_CHARS of them not blank and at
#: least FENCE_MIN_LETTERS letters (``0, 0, 0, 0,`` rows of a data table never count).
FENCE_MAX_LINE = 256
FENCE_MIN_CHARS = 8
FENCE_MIN_LETTERS = 3


def fence_line_counts(line: str) -> bool:
    """Whether a code line (without its newline) can count towards a repeated run inside a fence:
    ``len(line) <= FENCE_MAX_LINE``, at least ``FENCE_MIN_CHARS`` code points that are not blanks
    (``str.isspace``) and at least ``FENCE_MIN_LETTERS`` letters (alphanumeric, not an ASCII
    digit).

    >>> fence_line_counts('    std::cout << x << std::endl;'), fence_line_counts('    0, 0, 0, 0, 0, 0,')
    (True, False)
    """
    if len(line) > FENCE_MAX_LINE:
        return False
    blank = sum(1 for ch in line if ch.isspace())
    letters = sum(1 for ch in line if ch.isalnum() and ch not in _DIGITS)
    return len(line) - blank >= FENCE_MIN_CHARS and letters >= FENCE_MIN_LETTERS


class Fences:
    """Fence masking of one stream, one original code point at a time (a plain character
    state machine)."""

    def __init__(self, fence_repeat_lines: int) -> None:
        self.fence_repeat_lines = fence_repeat_lines
        self._line_start = True  # only spaces/tabs seen on this line so far
        self._pending: list[tuple[int, str]] = []  # held back fence characters
        self._in_code = False
        self._fence_char = ""
        self._fence_len = 0
        self._code_line: list[str] = []  # current line inside a fence
        self._code_start = 0  # original offset of its first code point
        self._code_prev = ""  # the code line before it
        self._code_run = 0  # how many identical counting code lines end with the previous one
        self._opening_line = False  # dropping the rest of an opening fence line
        self._opening_run = False  # still inside the opening run of fence characters

    def take(self, pos: int, ch: str) -> list[tuple[int, str]]:
        """Take the original code point ``ch`` at offset ``pos``; return what passes on to ``t``,
        each code point with its original offset.  Nothing inside a fence; a backtick or tilde
        at the start of a line is held back until the line shows whether it opens a fence, and
        passed on before the next code point when it does not."""
        out: list[tuple[int, str]] = []
        if self._opening_line:
            if ch == "\n":
                self._opening_line = False
                self._in_code = True
                self._code_line = []
                self._code_start, self._code_prev, self._code_run = pos + 1, "", 0
            elif self._opening_run and ch == self._fence_char:
                self._fence_len += 1
            else:
                self._opening_run = False
            return out
        if self._in_code:
            if ch != "\n":
                self._code_line.append(ch)
                return out
            raw = "".join(self._code_line)
            line = raw.strip(" \t")
            self._code_line = []
            run = len(line) - len(line.lstrip(self._fence_char))
            if run >= self._fence_len and not line[run:].strip():
                self._in_code = False
                self._line_start = True
                return out
            # a code line repeated fence_repeat_lines times in a row is shown to the detectors
            # (from that copy on, with its newline): a loop inside a fence needs more evidence,
            # never none
            if fence_line_counts(raw) and raw == self._code_prev:
                self._code_run += 1
            else:
                self._code_run = 1 if fence_line_counts(raw) else 0
            self._code_prev = raw
            if 0 < self.fence_repeat_lines <= self._code_run:
                for j, c in enumerate(raw):
                    out.append((self._code_start + j, c))
                out.append((pos, "\n"))
            self._code_start = pos + 1
            return out
        if self._pending:
            fence = self._pending[0][1]
            if ch == fence:
                self._pending.append((pos, ch))
                if len(self._pending) == 3:
                    self._pending = []
                    self._opening_line = True
                    self._fence_char = fence
                    self._fence_len = 3
                    self._opening_run = True
                return out
            pending, self._pending = self._pending, []
            out.extend(pending)
            self._line_start = False
        elif self._line_start and ch in "`~":
            self._pending.append((pos, ch))
            return out
        out.append((pos, ch))
        if ch == "\n":
            self._line_start = True
        elif ch not in " \t":
            self._line_start = False
        return out

    def flush(self) -> list[tuple[int, str]]:
        """End of stream: the fence characters still held back (they opened no fence)."""
        pending, self._pending = self._pending, []
        return pending
