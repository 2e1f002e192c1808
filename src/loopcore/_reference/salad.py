"""T -- salad (loopguard's own detector): random picks from a handful of symbols or words, in no
fixed order and so with no period for C or N to find.

A symbol salad (emoji, kaomoji) is a window of few distinct code points with few letters,
blanks and digits; a word salad is a run of words from a handful, separated as prose separates
them, in no fixed order -- not code, markup, data, a list or a table (:func:`_inside_brackets`,
:func:`_item_line`).  The full rules are :meth:`Salad._symbol_salad`'s and
:meth:`Salad._word_salad`'s docstrings.

>>> _inside_brackets("f(a, b", 6), _inside_brackets("f(a) b", 6), _item_line("- milk", 0, 6)
(True, False, True)
"""

from __future__ import annotations

from collections import Counter

from .buffer import Buffer
from .chars import (
    _CLOSERS,
    _DIGITS,
    _GLUE,
    _ITEM_MARKERS,
    _OPENERS,
    _QUOTES,
    _SENTENCE_MARKS,
    _WIDE_STOPS,
    Found,
)
from .params import Params

#: T's word: this many alphanumeric code points in a row end the text before a salad.
SALAD_WORD = 3
#: T looks at the last this many code points first (prose fails there within a few words).
SALAD_GATE = 50
#: T holds back on a window with at least this share of ASCII digits: numbers carry content (a
#: LaTeX enumeration, ``$2 + 1 + 1$, $1 + 2 + 1$, ...``, has few distinct symbols and few
#: letters but new values), a salad of symbols has none.
SALAD_MAX_DIGITS = 0.02
#: T's word salad looks back this many code points (at most half as many tokens fit in it).
SALAD_WORD_WINDOW = 1200
#: ... and trims leading tokens whose word occurs fewer times than this in the run (the prose words
#: the run took in before the salad began).
SALAD_WORD_REPEAT = 3
#: ... and needs at least this many distinct word pairs per distinct word: a salad's words follow
#: one another in no fixed order, a repeated line's (a log, a template) in one order.
SALAD_PAIRS_PER_WORD = 2
#: ... and looks this far back for an open bracket (a data literal, :func:`_inside_brackets`).
SALAD_BRACKET_REACH = 10 * SALAD_WORD_WINDOW
#: A list item or table row is a line of at most this many code points.
SALAD_MAX_ITEM_LINE = 256


def _inside_brackets(t: str, end: int) -> bool:
    """Whether ``t[:end]`` ends inside an open bracket ``( [ {`` of its paragraph: going back
    at most :data:`SALAD_BRACKET_REACH` code points, and not past a blank line (``\\n``, then
    only spaces, tabs or ``\\r``, then ``\\n``), an opener no closer after it matches.  (The
    same as counting forward from the paragraph's start, a closer with none open ignored.)"""
    depth, after_newline = 0, False  # after_newline: only blanks since a \n (to the right)
    for k in range(end - 1, max(0, end - SALAD_BRACKET_REACH) - 1, -1):
        ch = t[k]
        if ch == "\n":
            if after_newline:
                return False
            after_newline = True
        elif ch not in " \t\r":
            after_newline = False
            if ch in _CLOSERS:
                depth += 1
            elif ch in _OPENERS:
                if not depth:
                    return True
                depth -= 1
    return False


def _item_start(t: str, i: int, end: int) -> bool:
    """Whether ``t[i]`` begins, after spaces or tabs only, a list item line ending at ``end``."""
    k = i
    while k > 0 and t[k - 1] in " \t" and i - k < SALAD_MAX_ITEM_LINE:
        k -= 1
    return (k == 0 or t[k - 1] == "\n") and _item_line(t, k, end)


def _item_line(t: str, start: int, end: int) -> bool:
    """Whether ``t[start:end]`` is a list item line (T's word salad: :data:`SALAD_MAX_ITEM_LINE`)."""
    if end - start > SALAD_MAX_ITEM_LINE:
        return False
    k = start
    while k < end and t[k] in " \t":
        k += 1
    return k + 1 < end and t[k] in _ITEM_MARKERS and t[k + 1] in " \t"


class Salad:
    """T: no state across checkpoints; ``start = cut`` (a salad is kept up to its start)."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer

    def check(self, t: str, final: bool) -> Found | None:
        """T -- salad: random picks from a handful of symbols (:meth:`_symbol_salad`) or, when
        ``salad_max_words`` is not 0, of words (:meth:`_word_salad`); no fixed period."""
        found = self._symbol_salad(t)
        if found is None and self.params.salad_max_words:
            found = self._word_salad(t)
        return found

    def _symbol_salad(self, t: str) -> Found | None:
        """A salad of symbols (emoji, kaomoji): no words.

        The last ``min(SALAD_GATE, w)`` code points and the window ``t[n-w:n]``,
        ``w = salad_window``, each under ``salad_max_alnum`` alphanumeric; the window with
        fewer than ``salad_max_unique``
        distinct code points (``str.isalnum`` counts alphanumerics) and under
        ``salad_max_space`` whitespace (``str.isspace``) and under :data:`SALAD_MAX_DIGITS`
        ASCII digits.
        ``start = cut`` = the end of the window's last run of at least
        :data:`SALAD_WORD` alphanumeric code points (the last word before the salad), or the
        window's start.  Evidence: ``unit`` (``"symbol"``), ``unique``, ``alnum`` (the share).
        """
        n, w = len(t), self.params.salad_window
        if n < w:
            return None
        gate = t[n - min(SALAD_GATE, w) :]
        if sum(1 for ch in gate if ch.isalnum()) >= self.params.salad_max_alnum * len(gate):
            return None
        window = t[n - w :]
        alnum = sum(1 for ch in window if ch.isalnum())
        if alnum >= self.params.salad_max_alnum * w:
            return None
        if sum(1 for ch in window if ch.isspace()) >= self.params.salad_max_space * w:
            return None
        if sum(1 for ch in window if ch in _DIGITS) >= SALAD_MAX_DIGITS * w:
            return None  # numbers: an enumeration, not a salad
        unique = len(set(window))
        if unique >= self.params.salad_max_unique:
            return None
        cut, run = n - w, 0
        for i in range(n - w, n):
            run = run + 1 if t[i].isalnum() else 0
            if run >= SALAD_WORD:
                cut = i + 1
        return self.buffer.map(cut), self.buffer.map(cut), {"unit": "symbol", "unique": unique, "alnum": alnum / w}

    def _word_salad(self, t: str) -> Found | None:
        """T's word salad: random picks from a handful of words, no fixed order.

        The walk goes back from ``n`` over at most :data:`SALAD_WORD_WINDOW` code points, word
        by word.  A *word* is a maximal run of ``str.isalnum`` code points; the one touching
        ``n`` may go on and is left out; one Latin letter alone (below U+0250) is a symbol and
        skipped.  Words must be separated as prose separates them: white space
        (``str.isspace``) or a CJK full-width stop (:data:`_WIDE_STOPS`) with only
        :data:`_SENTENCE_MARKS` beside it, or one :data:`_GLUE` mark alone (``don't``).

        The walk (the *run*) ends:

        - at the ``salad_max_words + 1``-th distinct word;
        - before a word with a digit (numbers are values: an enumeration);
        - at a tab or any code point that is neither white space nor a sentence mark
          (brackets, ``_``, ``=``, ``|``, ``\\``...: code, markup, data, a table, a TSV);
        - before a separator of marks alone (``a,b``), or one with a quote mark (:data:`_QUOTES`)
          unless that mark alone glues two words (quoted words are strings of data);
        - at a list item line (at most :data:`SALAD_MAX_ITEM_LINE` code points starting, after
          spaces, with ``-``, ``*``, ``+``, ``•`` or ``>`` and a space or tab), whether the
          walk meets the item's newline or its marker, and at a line of one word (a column of
          values): the line's words are dropped; so are the window's first line's when it may
          be an item (its visible part is that short).

        Leading words that occur fewer than :data:`SALAD_WORD_REPEAT` times in the run are
        dropped (the prose before the salad).  It holds when the run keeps ``salad_min_words``
        words, with at least :data:`SALAD_PAIRS_PER_WORD` distinct pairs of consecutive words per
        distinct word (a repeated line or template has about one), and its first word is not
        inside an open bracket (:func:`_inside_brackets`: a data literal).  ``start = cut`` = the
        run's first word.  Evidence: ``unit`` (``"word"``), ``unique`` (distinct words),
        ``tokens``.
        """
        n = len(t)
        lo = max(0, n - SALAD_WORD_WINDOW)
        tokens: list[tuple[int, str]] = []  # (start, word), from the end back
        words: set[str] = set()
        mark, line_end, i = 0, n, n
        while i > lo and t[i - 1].isalnum():  # the last word may go on
            i -= 1
        gap, spaced, quoted = 0, False, False  # the separator after the token the walk reaches next
        while True:
            if i <= lo:
                if (line_end - lo <= SALAD_MAX_ITEM_LINE) if lo else _item_line(t, 0, line_end):
                    del tokens[mark:]
                break
            ch = t[i - 1]
            if ch.isalnum():
                glued = gap == 1 and t[i] in _GLUE
                if tokens and not (spaced or glued):
                    break  # words glued by symbols: code, a path, a formula
                if quoted and not glued:
                    break  # quoted words: strings of data ("yes", "no", ...)
                j = i - 1
                while j > lo and t[j - 1].isalnum():
                    j -= 1
                word, i = t[j:i], j
                if j == lo and lo:
                    continue  # the window cut it
                if any(c.isdigit() for c in word):
                    break
                gap, spaced, quoted = 0, False, False
                if len(word) == 1 and word < "\u0250":
                    continue  # one Latin letter is a symbol (a variable, a base, a move), not a word
                if word not in words:
                    if len(words) == self.params.salad_max_words:
                        break
                    words.add(word)
                tokens.append((j, word))
                continue
            i -= 1
            if ch == "\t" or not (ch.isspace() or ch in _WIDE_STOPS or ch in _SENTENCE_MARKS):
                # a symbol of code, markup, data or a table (a tab: a TSV); a list item's marker
                # drops its line
                if _item_start(t, i, line_end):
                    del tokens[mark:]
                break
            if ch.isspace() or ch in _WIDE_STOPS:
                spaced = True
            elif ch in _QUOTES:
                quoted = True
            gap += 1
            if ch == "\n":
                if len(tokens) - mark == 1 or _item_line(t, i + 1, line_end):
                    del tokens[mark:]  # a list item, or one word alone: a column of values
                    break
                mark, line_end = len(tokens), i
        tokens.reverse()
        counts = Counter(word for _, word in tokens)
        k = 0
        while k < len(tokens) and counts[tokens[k][1]] < SALAD_WORD_REPEAT:
            k += 1
        run = [word for _, word in tokens[k:]]
        if len(run) < self.params.salad_min_words:
            return None
        unique = len(set(run))
        if len(set(zip(run, run[1:]))) < SALAD_PAIRS_PER_WORD * unique:
            return None
        cut = tokens[k][0]
        if _inside_brackets(t, cut):
            return None
        return self.buffer.map(cut), self.buffer.map(cut), {"unit": "word", "unique": unique, "tokens": len(run)}
