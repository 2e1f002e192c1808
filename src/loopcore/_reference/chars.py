"""Character classes and shared definitions of the reference detectors.

The sets of code points the detectors test against (plain ``frozenset``s and strings: a code
point is in a class when ``ch in CLASS``), the detection kinds in evaluation order, and the
shapes of a finding.

>>> WHITESPACE == {chr(c) for c in range(0x110000) if chr(c).isspace()}
True
"""

from __future__ import annotations

from typing import Any

#: A detector's finding at a checkpoint: ``(start, cut, evidence)``.
Found = tuple[int, int, dict[str, Any]]
#: A raw detection: ``(kind, position, start, cut, evidence)``.
RawDetection = tuple[str, int, int, int, dict[str, Any]]

#: Detection kinds in evaluation order (E, L, S, C, P, N, T).
KINDS = ("exact_tail", "lowdiv_tail", "lowdiv_sliding", "cycle", "pool", "near_cycle", "salad")

#: Exactly the code points for which ``str.isspace()`` is true.
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# P's sentence ends (.pool, spec §2.5)
_STRONG_END = "。！？"  # a sentence always ends after these
_WEAK_END = ".!?…"  # ... only when the next character is whitespace

# hexadecimal digits (records) and ASCII digits (records, N, T, the fences)
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")

# T's marks (.salad)
#: List item markers: one of these, then a space or a tab, at the start of a line.
_ITEM_MARKERS = frozenset("-*+•>")
_OPENERS, _CLOSERS = frozenset("([{"), frozenset(")]}")
#: What may separate the words of a salad: white space and these marks of prose ...
_SENTENCE_MARKS = frozenset(",.;:!?\u2026'\"\u2018\u2019\u201c\u201d-\u2013\u2014")
#: ... (a separator needs a white space, or one of these full-width stops of CJK text,
_WIDE_STOPS = frozenset("\uff0c\u3002\uff1b\uff1a\uff01\uff1f\u3001")
#: ... or is one of these alone: ``don't``, ``well-known``).
_GLUE = frozenset("'\u2019-")
#: A quote mark in a separator, unless it glues two words alone, ends the run.
_QUOTES = frozenset("'\"\u2018\u2019\u201c\u201d")
