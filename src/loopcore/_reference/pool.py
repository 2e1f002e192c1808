"""P -- phrase pool (spec §2.5; seed 003 pool): a handful of short phrases rotated in any order.

The complete sentences of ``t`` (:func:`split_sentences`).  P holds when, of the last
``pool_window`` of them, at least ``pool_min_coverage`` are *phrases* -- sentences of at most
``pool_max_phrase_chars`` code points occurring at least ``pool_min_occurrences`` times among
them -- and there are ``pool_min_distinct`` to ``pool_max_distinct`` distinct phrases.

>>> split_sentences("Wait. Check it!\\n- a list item.\\nNo end")
[(0, 'Wait.'), (6, 'Check it!')]
"""

from __future__ import annotations

import re
from collections import Counter

from .buffer import Buffer
from .chars import _STRONG_END, _WEAK_END, WHITESPACE, Found
from .params import Params

#: At most this many phrases are listed in a pool detection's evidence (spec §2.5).
MAX_EVIDENCE_PHRASES = 8

_LIST_RE = re.compile(r"[ \t]*(?:[-*+][ \t]|[0-9]{1,9}[.)][ \t])")
_TABLE_RE = re.compile(r"[ \t]*\|")
_QUOTE_RE = re.compile(r"[ \t]*>[ \t]")


#: A ``key: value`` data line (YAML, config dumps, logfmt): an ASCII identifier starting with a
#: lower-case letter or ``_`` (then letters, digits, ``_ . -``) at the start of the line, then
#: ``:`` and a blank or the end of the line.  Capitalised labels (``Wait: …``, ``Answer: …``) are
#: prose, the way reasoning rotates them.  Excluded from the phrase pool with ``pool_skip_key_value``.
_KEY_VALUE_RE = re.compile(r"[ \t]*[a-z_][A-Za-z0-9_.-]*:(?:[ \t]|$)")


def _line_is_excluded(line: str, skip_key_value: bool = False) -> bool:
    """True for list items, table rows and block quotes (spec §2.5), and with
    ``skip_key_value`` for ``key: value`` data lines (loopguard's ``default`` profile)."""
    return bool(
        _LIST_RE.match(line)
        or _TABLE_RE.match(line)
        or _QUOTE_RE.match(line)
        or (skip_key_value and _KEY_VALUE_RE.match(line))
    )


def split_sentences(t: str, skip_key_value: bool = False) -> list[tuple[int, str]]:
    """Complete, counted sentences of ``t`` as ``(start, text)`` pairs.

    ``start`` is the offset in ``t`` of the first non-whitespace character;
    ``text`` is the sentence with surrounding whitespace stripped.  Follows
    spec §2.5: split after ``。！？`` always, after ``. ! ? …`` only when the
    next character is whitespace, at every newline.  A trailing fragment with
    no boundary is not returned.  Sentences without any alphanumeric character
    (symbol/punctuation-only) and sentences on list, table or quote lines are
    not counted; with ``skip_key_value``, neither are ``key: value`` data lines.
    """
    out: list[tuple[int, str]] = []
    lines = t.split("\n")
    offset = 0
    for number, line in enumerate(lines):
        complete_line = number < len(lines) - 1
        excluded = _line_is_excluded(line, skip_key_value)
        pieces: list[tuple[int, int]] = []
        begin = 0
        for i, ch in enumerate(line):
            if ch in _STRONG_END:
                pieces.append((begin, i + 1))
                begin = i + 1
            elif ch in _WEAK_END and i + 1 < len(line) and line[i + 1] in WHITESPACE:
                pieces.append((begin, i + 1))
                begin = i + 1
        if complete_line:
            pieces.append((begin, len(line)))
        for a, b in pieces:
            piece = line[a:b]
            text = piece.strip()
            if not text or excluded or not any(ch.isalnum() for ch in text):
                continue
            lead = len(piece) - len(piece.lstrip())
            out.append((offset + a + lead, text))
        offset += len(line) + 1
    return out


class Pool:
    """P: ``start = cut`` = "prune back from where this batch of phrases first appeared" (003):
    of the retained sentences ``S_1..S_m`` (the last ``4 * pool_window``), the start of the
    first ``S_j`` that is a phrase with at least ``pool_min_coverage`` of ``S_j..S_m`` phrases.
    Evidence: ``coverage``, ``phrases`` (the distinct phrases, at most
    :data:`MAX_EVIDENCE_PHRASES`, each cut to ``pool_max_phrase_chars``)."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer

    def check(self, t: str, final: bool) -> Found | None:
        sentences = split_sentences(t, self.params.pool_skip_key_value)
        size = self.params.pool_window
        if len(sentences) < size:
            return None
        recent = [text for _, text in sentences[-size:]]
        counts = Counter(recent)
        phrases = {
            s
            for s, c in counts.items()
            if len(s) <= self.params.pool_max_phrase_chars and c >= self.params.pool_min_occurrences
        }
        covered = sum(1 for s in recent if s in phrases)
        if covered < self.params.pool_min_coverage * size:
            return None
        if not self.params.pool_min_distinct <= len(phrases) <= self.params.pool_max_distinct:
            return None
        retained = sentences[-4 * size :]
        m = len(retained)
        for j in range(m):
            start, text = retained[j]
            if text not in phrases:
                continue
            inside = sum(1 for _, s in retained[j:] if s in phrases)
            if inside >= self.params.pool_min_coverage * (m - j):
                cut = self.buffer.map(start)
                ordered = list(dict.fromkeys(s for s in recent if s in phrases))[:MAX_EVIDENCE_PHRASES]
                evidence = {
                    "coverage": covered / size,
                    "phrases": tuple(s[: self.params.pool_max_phrase_chars] for s in ordered),
                }
                return cut, cut, evidence
        raise AssertionError("unreachable: the window itself satisfies the coverage")
