"""Pure-Python reference of the loopguard text detectors (SPEC §2).

This module is the specification written down as code, in the most literal way:
it keeps the whole masked text ``t`` of the channel, and at every checkpoint it
recomputes each detector's condition from scratch with plain ``str`` operations,
``set`` and ``collections.Counter``.  It is slow (quadratic in places) on
purpose: it exists so that the compiled core (``loopcore._core``) can be proven
to give the same detections on every input and every chunking.

Select it for the whole process with ``LOOPCORE_IMPLEMENTATION=python``.

Conventions shared with the compiled core
-----------------------------------------
* Positions are Unicode code points (Python ``str`` indices) into the
  *original* channel text of one attempt.
* ``t`` is the text the detectors see: the original text with fenced code
  blocks removed when ``skip_code_blocks`` is true (SPEC §2.6).
* Checkpoints happen whenever ``len(t)`` reaches a multiple of
  ``check_every``, and once more at :meth:`ChannelStream.finish` when the last
  length was not a checkpoint.
* Each raw detection is a tuple ``(kind, position, start, cut, evidence)``.
"""

from __future__ import annotations

from collections import Counter
import re
import sys
import threading
from typing import Any

from . import _params, _tokens

#: A detector's finding at a checkpoint: ``(start, cut, evidence)``.
Found = tuple[int, int, dict[str, Any]]
#: A raw detection: ``(kind, position, start, cut, evidence)``.
RawDetection = tuple[str, int, int, int, dict[str, Any]]

__all__ = [
    "ChannelStream",
    "KINDS",
    "WHITESPACE",
    "smallest_periods",
    "split_sentences",
]

#: Detection kinds in evaluation order (E, L, S, C, P, N).
KINDS = ("exact_tail", "lowdiv_tail", "lowdiv_sliding", "cycle", "pool", "near_cycle", "salad")

#: At most this many phrases are listed in a pool detection's evidence (SPEC §2.5).
MAX_EVIDENCE_PHRASES = 8

#: Exactly the code points for which ``str.isspace()`` is true.
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

_STRONG_END = "。！？"  # a sentence always ends after these
_WEAK_END = ".!?…"  # ... only when the next character is whitespace

_LIST_RE = re.compile(r"[ \t]*(?:[-*+][ \t]|[0-9]{1,9}[.)][ \t])")
_TABLE_RE = re.compile(r"[ \t]*\|")
_QUOTE_RE = re.compile(r"[ \t]*>[ \t]")


#: A ``key: value`` data line (YAML, config dumps, logfmt): an ASCII identifier starting with a
#: lower-case letter or ``_`` (then letters, digits, ``_ . -``) at the start of the line, then
#: ``:`` and a blank or the end of the line.  Capitalised labels (``Wait: …``, ``Answer: …``) are
#: prose, the way reasoning rotates them.  Excluded from the phrase pool with ``pool_skip_key_value``.
_KEY_VALUE_RE = re.compile(r"[ \t]*[a-z_][A-Za-z0-9_.-]*:(?:[ \t]|$)")


#: Characters of hex/byte dumps (xxd, od, hexdump): hex digits, blanks, ``.`` and ``:``.
DATA_CHARS = frozenset("0123456789abcdefABCDEF \t\r\n.:")


#: A data run uses at least this many different :data:`DATA_CHARS` (a dump's offsets and bytes);
#: fewer is a flood of one or two symbols (``eeee``, ``3 3 3``), which stays a loop.
DATA_MIN_DISTINCT = 8


def data_share_exceeds(w: str, max_share: float) -> bool:
    """Whether ``w`` is a data run: more than ``max_share`` of it :data:`DATA_CHARS`, of at
    least :data:`DATA_MIN_DISTINCT` different ones (a hex dump).  L and S hold back on data
    runs; ``max_share`` 1.0 never holds back."""
    data = [ch for ch in w if ch in DATA_CHARS]
    return len(data) > max_share * len(w) and len(set(data)) >= DATA_MIN_DISTINCT


#: An art run uses at least this many different symbols (neither alphanumeric nor blank: a
#: banner's ``# = |``); fewer is a flood of one or two symbols (``!!!!``, ``. . .``), which stays
#: a loop.
ART_MIN_SYMBOLS = 3


def art_run(w: str, max_alnum: float) -> bool:
    """Whether ``w`` is an art run (ASCII art, banners, box drawing): fewer than ``max_alnum``
    of it alphanumeric and at least :data:`ART_MIN_SYMBOLS` different symbols.  L and S hold
    back on art runs; ``max_alnum`` 0 never holds back."""
    if max_alnum <= 0:
        return False
    alnum = sum(1 for ch in w if ch.isalnum())
    symbols = {ch for ch in w if not ch.isalnum() and not ch.isspace()}
    return alnum < max_alnum * len(w) and len(symbols) >= ART_MIN_SYMBOLS


#: N holds back on record lines longer than this are never records (code points, without the newline).
RECORD_MAX_LINE = 200

_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_RECORD_KEY_RE = re.compile(r"[a-z_][A-Za-z0-9_.-]*:(?:[ \t]|$)")
_UTC_OFFSET_RE = re.compile(r"(?<=[0-9])\+[0-9][0-9](?::?[0-9][0-9])?\Z")


def _first_field(token: str) -> str:
    """``token`` up to its first comma that is not between two digits (``1,000`` is a number):
    the first field of a CSV line."""
    for j, ch in enumerate(token):
        if ch == "," and not (0 < j < len(token) - 1 and token[j - 1] in _DIGITS and token[j + 1] in _DIGITS):
            return token[:j]
    return token


def _json_string_item(s: str) -> bool:
    """Whether ``s`` (starting with ``"``) is a JSON string followed by ``: ] }``, or by ``,`` and
    then the line's end, a field with no blank before it (CSV) or, after blanks, a JSON value
    (``" { [ -`` or a digit); ``", she said`` is dialogue, not a record."""
    j = 1
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == '"':
            rest = s[j + 1:].lstrip(" \t")
            if rest[:1] != ",":
                return rest != "" and rest[0] in ":]}"
            after = rest[1:]  # a comma: a field or element follows, or the line ends
            return after == "" or after[0] not in " \t" or after.lstrip(" \t")[:1] in ('"', "{", "[", "-", *_DIGITS)
        j += 1
    return False


def is_record_line(line: str) -> bool:
    """Whether ``line`` (without its newline) is a machine record line for N (near_cycle).

    Records repeat a template with new field values on every line -- near-verbatim by
    nature -- so N holds back on windows made mostly of them.  A record line is at most
    :data:`RECORD_MAX_LINE` code points and, after leading blanks/tabs, either

    * opens a JSON value or a table row: ``{ [ |``; or a JSON string or quoted CSV field:
      ``"``, where the string's closing ``"`` (not escaped by ``\\``) is followed, after
      blanks, by ``: ] }`` or by a comma and then the end, a field (no blank between) or a
      JSON value (:func:`_json_string_item`; a line of quoted prose -- dialogue, a quotation,
      ``"...", she said`` -- is not a record, even when a model loops on it);
    * is a ``key: value`` line (a lower-case identifier, ``:`` and a blank or the end;
      a leading ``- `` as in YAML lists is skipped);
    * is a diff/patch line: ``@@``, ``+++``, ``---``, ``diff ``, ``index `` after the
      blanks, or ``+``/``-`` in column 0 followed by the end, a non-blank, or two blanks
      (a changed code line; ``- item`` stays a bullet);
    * starts with a location: its first token (up to a blank or tab) contains ``/``,
      ``\\`` or ``::`` (paths, test ids, ``file.py:12:`` compiler and log lines, URLs);
    * starts with a number: its first token without one trailing ``:`` is a time, date
      or version (only digits and ``:.-,``, at least 3 digits, a separator between two
      digits; also ISO 8601's ``T`` between two digits and a final ``Z`` after one, as in
      ``2024-06-11T03:58:56.013Z``, and a final UTC offset ``+HH``, ``+HHMM`` or ``+HH:MM``
      after a digit, as in ``2024-05-01T12:00:00+00:00``: timestamped logs, timetables) or,
      without a ``0x``
      prefix too, an offset
      (at least 6 hexadecimal digits with a decimal digit among them:
      ``xxd``/``hexdump``/``od`` lines).
    """
    if len(line) > RECORD_MAX_LINE:
        return False
    s = line.lstrip(" \t")
    if not s:
        return False
    if s[0] in "{[|":
        return True
    if s[0] == '"' and _json_string_item(s):
        return True
    if _RECORD_KEY_RE.match(s[2:] if s.startswith("- ") else s):
        return True
    if s.startswith(("@@", "+++", "---", "diff ", "index ")):
        return True
    if line[0] in "+-" and (len(line) == 1 or line[1] not in " \t" or (len(line) > 2 and line[2] in " \t")):
        return True
    token = s.split(" ", 1)[0].split("\t", 1)[0]
    if "/" in token or "\\" in token or "::" in token:
        return True
    token = _first_field(token)  # a CSV line: its first field ("2024-03-01,EU,5")
    offset = token[:-1] if token.endswith(":") else token
    digits = sum(1 for ch in offset if ch in _DIGITS)
    body = offset[:-1] if len(offset) > 1 and offset[-1] == "Z" and offset[-2] in _DIGITS else offset
    utc = _UTC_OFFSET_RE.search(body)
    body = body[:utc.start()] if utc else body

    def inner(j: int) -> bool:  # a separator between two digits
        return 0 < j < len(body) - 1 and body[j] in ":.-,T" and body[j - 1] in _DIGITS and body[j + 1] in _DIGITS

    if sum(1 for ch in body if ch in _DIGITS) >= 3 and all(
        ch in _DIGITS or ch in ":.-," or inner(j) for j, ch in enumerate(body)
    ) and any(
        inner(j) for j in range(len(body))
    ):
        return True  # a time, date or version: timestamped logs, timetables
    offset = offset[2:] if offset[:2] in ("0x", "0X") else offset
    return len(offset) >= 6 and all(ch in _HEX for ch in offset) and digits >= 1


def record_chars(t: str, lo: int, n: int) -> int:
    """How many code points of ``t[lo:n]`` lie on record lines (:func:`is_record_line`).

    Lines are those of ``t[:n]``; a newline belongs to the line it ends.
    """
    total = 0
    a = t.rfind("\n", 0, lo) + 1
    while a < n:
        b = t.find("\n", a, n)
        end = n if b < 0 else b
        if is_record_line(t[a:end]):
            total += (n if b < 0 else b + 1) - max(a, lo)
        a = end + 1
    return total


#: N indexes a k-gram when its key is the smallest of the last ``NEAR_WINNOW`` keys
#: (winnowing): about one position in four on prose, at least one per copy of any
#: period up to four, and the same positions in every copy of a loop.
NEAR_WINNOW = 6
_HB = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


def near_packed(t: str, i: int, k: int) -> int:
    """The k-gram ending at ``i`` packed into an integer:
    ``sum(ord(t[i-j]) << 8*j for j < k) mod 2**min(8k, 64)`` (exact for Latin-1 and
    ``k <= 8``, a hash otherwise)."""
    h = 0
    for j in range(k):
        h += ord(t[i - j]) << (8 * j)
    return h & ((1 << min(8 * k, 64)) - 1)


def near_key(t: str, i: int, k: int) -> int:
    """The anchor key of the k-gram ending at ``i``: the top 16 bits of
    ``near_packed * HB mod 2**64`` (``HB`` = 0x9E3779B97F4A7C15)."""
    return ((near_packed(t, i, k) * _HB) & _M64) >> 48


def near_anchors(t: str, k: int, lo: int, n: int) -> list[int]:
    """The anchor positions ``i`` in ``[lo, n)`` (``i >= k - 1``) for N: ``near_key`` of
    ``i`` is at most that of each of the ``NEAR_WINNOW - 1`` previous positions that end
    a k-gram (ties count, so a period-1 flood anchors everywhere)."""
    start = max(k - 1, lo)
    keys = {j: near_key(t, j, k) for j in range(max(k - 1, start - NEAR_WINNOW + 1), n)}
    return [
        i for i in range(start, n)
        if all(keys[i] <= keys[j] for j in range(max(k - 1, i - NEAR_WINNOW + 1), i))
    ]


#: N's right extension skips at most this many edited code points at a time.
NEAR_GAP = 8
#: An exact piece of N's walk this long (or as long as its lag, when that is shorter) is a whole
#: copy equal to the one before it: the copies stopped changing.
NEAR_WHOLE_CAP = 300
#: ... and at least this long, whatever the lag: for a short period a whole copy is many copies
#: in a row (a list of two values, ``true, false, true, ...``, repeats a short stretch by chance).
NEAR_WHOLE_MIN = 48

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

#: N's smallest lag tolerance: an insertion and a deletion between two copies.
NEAR_MIN_TOL = 2
#: ... and for periods of 16 or more (a quarter of the period below that) at least this much: a
#: cluster of insertions or deletions in a short noisy unit shifts its lag by a few code points.
NEAR_SHORT_TOL = 4
#: Each copy segment N's coverage walk finds from a new seed costs this many code points of
#: coverage: a template (code's switch arms, log lines) is many short copies between its
#: varying slots, a noisy loop a few long copies across small edits.
NEAR_SEED_COST = 2
#: A pending period whose window is at least this share covered stays pending one checkpoint
#: more (a short noisy loop grows into its window over two or three checkpoints).
NEAR_PENDING_KEEP = 0.5

#: N tries this many lags: the most frequent nearest lag, then the most voted others (a unit
#: with an inner repeat, "the the the", makes the inner lag the most frequent nearest one).
NEAR_CANDIDATES = 3
#: ... where each anchor votes for the lags of its first ``NEAR_VOTES`` earlier occurrences,
#: when at least ``NEAR_VOTE_GATE`` of the block's anchors occurred before (prose: about half).
NEAR_VOTES = 4
NEAR_VOTE_GATE = 0.7
#: A voted period above this many code points (its window, two periods, is long to walk) is
#: tried only when at least ``NEAR_LONG_VOTE_GATE`` of the block's anchors occurred before: a
#: long loop in full swing repeats all of its block; structured text (LaTeX, tables) repeats much
#: of it and voted long lags across it.
NEAR_LONG_VOTE = 500
NEAR_LONG_VOTE_GATE = 0.95


def near_extend(t: str, e: int, n: int, q: int, p: int, tol: int, k: int, link: int, c: int = 0,
                run: list[int] | None = None) -> tuple[int, int]:
    """Extend a copy of ``t`` at lag ``q`` rightwards from ``e`` (``t[x] == t[x - q]``)
    across small edits, up to ``n``; returns ``(end, gaps)``.

    At a mismatch at ``x`` (compared at the current lag ``c``, first ``c`` if given, else
    ``q``) it resynchronises at the first ``(g, L)`` in the order ``g = 0, 1, ... NEAR_GAP``
    then ``L = q, q + 1, q - 1, q + 2, q - 2, q + p, q + p + 1, q + p - 1, q + p + 2,
    q + p - 2`` (not ``g = 0, L = c``; ``q ± 2``: two insertions or deletions close together;
    two periods back is this copy's lag ``q`` plus the previous copy's, about ``p``: ``2q``
    misses it when the previous copy's edits shifted ``q``) for which
    ``t[x+g : x+g+k] == t[x+g-L : x+g-L+k]``, with ``|L - p| <= tol`` (one period back: a
    substitution, insertion or deletion in either copy; ``q`` becomes ``L``) or
    ``|L - 2p| <= 2 tol`` and ``L <= link`` (two periods back: the copy one period back was
    edited there);
    ``L`` becomes the current lag.  The ``g`` skipped code points count as ``gaps`` (not
    covered).  It stops where no resynchronisation fits and at a mismatch of an ASCII digit
    against an ASCII digit (numbers that change make an enumeration -- a table, a counter --
    not a noisy copy; a digit against a letter is an edit) -- unless ``t[e - c:e]`` is all
    digits (the copy itself is a number, as in ``197197197``: a loop of digits, not a field).

    ``run``, when given, is ``[piece_start, longest, whole]``: the exact piece ending at the
    first mismatch started at ``piece_start``; ``longest`` becomes the longest exact piece (a
    stretch with ``t[x] == t[x - lag]`` throughout, at one lag) seen, ``whole`` true once a
    piece is at least as long as its lag (a whole copy equal to the one before it; at most
    :data:`NEAR_WHOLE_CAP`, at least :data:`NEAR_WHOLE_MIN` code points), and each
    resynchronisation starts a new piece where its k-gram begins.
    """
    gaps, c = 0, c or q
    while e < n:
        if t[e] == t[e - c]:
            e += 1
            continue
        if run is not None:  # an exact piece ends here
            run[1] = max(run[1], e - run[0])
            run[2] = run[2] or e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN)
        if t[e] in _DIGITS and t[e - c] in _DIGITS and not all(ch in _DIGITS for ch in t[e - c:e]):
            return e, gaps  # a number that changes: an enumeration, not noise
        for g in range(NEAR_GAP + 1):
            a = e + g
            hit = next(
                (L for L in (q, q + 1, q - 1, q + 2, q - 2, q + p, q + p + 1, q + p - 1, q + p + 2, q + p - 2)
                 if (g > 0 or L != c) and (abs(L - p) <= tol or (abs(L - 2 * p) <= 2 * tol and L <= link))
                 and L >= 1 and a + k <= n and a - L >= 0 and t[a:a + k] == t[a - L:a - L + k]),
                0,
            )
            if hit:
                break
        else:
            return e, gaps
        gaps += g
        e, c = a + k, hit
        if run is not None:  # the next exact piece begins at the resynchronisation
            run[0] = a
        if abs(hit - p) <= tol:
            q = hit
    if run is not None:
        run[1] = max(run[1], e - run[0])
        run[2] = run[2] or e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN)
    return e, gaps


def near_walk_back(t: str, cut: int, p: int, floor: int) -> int:
    """N's cut moved back while the code point before it equals the one a period before that:
    ``cut -= 1`` while ``cut - 1 - p >= floor`` and ``t[cut - 1] == t[cut - 1 - p]`` (the loop
    began before the window N measured; the cut lands on the start of its second copy, so one
    copy is kept).  ``floor`` bounds the walk to the text both implementations keep (a window
    and a link before the checkpoint).

    >>> near_walk_back("x" + "ab" * 10, 15, 2, 0)
    3
    """
    while cut - 1 - p >= floor and t[cut - 1] == t[cut - 1 - p]:
        cut -= 1
    return cut


#: The lag share counts a nearest lag within the tolerance of up to this many periods: where a
#: copy was edited, the k-grams there (and the anchors they select) next occur one or more
#: copies further back.  A short unit at 5 % noise has an edit in most copies: about half of a
#: block's anchors recur at all, and only 0.1-0.3 of them at one period.
NEAR_MULTIPLES = 4


def near_multiple(d: int, p: int, tol: int) -> bool:
    """Whether the lag ``d`` is within ``tol`` of ``m * p`` for some ``1 <= m <=
    NEAR_MULTIPLES``."""
    return any(abs(d - m * p) <= tol for m in range(1, NEAR_MULTIPLES + 1))


def near_tolerance(period: int, divisor: int) -> int:
    """N's lag tolerance for ``period``: ``max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, period // 4),
    period // divisor)`` code points."""
    return max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, period // 4), period // divisor)


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


def _line_is_excluded(line: str, skip_key_value: bool = False) -> bool:
    """True for list items, table rows and block quotes (SPEC §2.5), and with
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
    SPEC §2.5: split after ``。！？`` always, after ``. ! ? …`` only when the
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


def smallest_periods(s: str) -> list[int]:
    """``q[L]`` = smallest period of the suffix of ``s`` of length ``L``.

    Computed with the prefix function of the reversed string: the suffix of
    length ``L`` reversed is the prefix of length ``L`` of ``s[::-1]``, whose
    smallest period is ``L - pi[L-1]``.  ``q[0]`` is 0.
    """
    r = s[::-1]
    pi = [0] * len(r)
    for i in range(1, len(r)):
        k = pi[i - 1]
        while k and r[i] != r[k]:
            k = pi[k - 1]
        if r[i] == r[k]:
            k += 1
        pi[i] = k
    return [0] + [length - pi[length - 1] for length in range(1, len(r) + 1)]


#: The parameters of :class:`ChannelStream` (all keyword-only and required).
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


class ChannelStream:
    """Reference detector state for one channel of one attempt.

    Parameters are the detector keys of SPEC §2 (``loopcore._params.PARAMS``, the one
    schema: names, types, defaults, bounds and docs); all are keyword-only and
    required, and validated by ``loopcore._params.check``.

    Raises
    ------
    TypeError, ValueError
        from the constructor, for invalid parameters (``loopcore._params.check``).
    TypeError
        from :meth:`feed` when ``delta`` is not a ``str``.
    RuntimeError
        from :meth:`feed` or :meth:`finish` after :meth:`finish`.
    """

    def __init__(self, **params: Any) -> None:
        _params.check(params)
        self.skip_code_blocks: bool = params["skip_code_blocks"]
        self.fence_repeat_lines: int = params["fence_repeat_lines"]
        self.check_every: int = params["check_every"]
        self.exact_tail, self.min_chars, self.window = params["exact_tail"], params["min_chars"], params["window"]
        self.history, self.repeats = params["history"], params["repeats"]
        self.lowdiv_tail, self.lowdiv_window, self.ngram = params["lowdiv_tail"], params["lowdiv_window"], params["ngram"]
        self.lowdiv_max_unique = params["lowdiv_max_unique"]
        self.lowdiv_max_data_share = params["lowdiv_max_data_share"]
        self.lowdiv_art_max_alnum = params["lowdiv_art_max_alnum"]
        self.lowdiv_min_repeat = params["lowdiv_min_repeat"]
        self.lowdiv_sliding, self.slide_window, self.slide_step = params["lowdiv_sliding"], params["slide_window"], params["slide_step"]
        self.slide_max_unique, self.slide_min_repeat = params["slide_max_unique"], params["slide_min_repeat"]
        self.cycle = params["cycle"]
        self.cycle_min_period, self.cycle_max_period = params["cycle_min_period"], params["cycle_max_period"]
        self.cycle_min_copies, self.cycle_min_chars = params["cycle_min_copies"], params["cycle_min_chars"]
        self.cycle_scan_chars = params["cycle_scan_chars"]
        self.pool, self.pool_window = params["pool"], params["pool_window"]
        self.pool_min_coverage = params["pool_min_coverage"]
        self.pool_max_phrase_chars = params["pool_max_phrase_chars"]
        self.pool_min_occurrences = params["pool_min_occurrences"]
        self.pool_min_distinct, self.pool_max_distinct = params["pool_min_distinct"], params["pool_max_distinct"]
        self.pool_skip_key_value = params["pool_skip_key_value"]
        self.near_cycle, self.near_ngram = params["near_cycle"], params["near_ngram"]
        self.near_min_period, self.near_max_period = params["near_min_period"], params["near_max_period"]
        self.near_min_window, self.near_tolerance = params["near_min_window"], params["near_tolerance"]
        self.near_min_lag_share = params["near_min_lag_share"]
        self.near_min_coverage = params["near_min_coverage"]
        self.near_max_record_share = params["near_max_record_share"]
        self.near_recurrence_window = params["near_recurrence_window"]
        self.near_min_recurrence = params["near_min_recurrence"]
        self._near_hold = 0  # the period N held at the previous checkpoint (0: it did not)
        self._near_pending = 0  # a period whose window fell short at the previous checkpoint
        self._near_covered = 0
        self._near_exact = 0  # the longest exact piece of the last window walk
        self._near_whole = False  # ... and whether one was a whole copy (as long as its lag)
        self._near_whole_prev = False  # N held with a whole copy at the previous checkpoint
        self.salad, self.salad_window = params["salad"], params["salad_window"]
        self.salad_max_unique = params["salad_max_unique"]
        self.salad_max_alnum, self.salad_max_space = params["salad_max_alnum"], params["salad_max_space"]
        self.salad_max_words, self.salad_min_words = params["salad_max_words"], params["salad_min_words"]

        self._t: list[str] = []  # the masked text, one character per item
        self._orig: list[int] = []  # original offset of each character of t
        self._length = 0  # original characters consumed
        self._finished = False
        self._mode = ""  # "text" or "tokens" once anything was fed
        self._busy = threading.Lock()  # one feeder at a time, as in the compiled core
        # fence masking state (a plain character state machine)
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
        # detector state
        self._holding = dict.fromkeys(KINDS, False)
        self._reported_strong = dict.fromkeys(KINDS, True)  # the strength of each episode's last report
        self._hits = dict.fromkeys(KINDS, 0)
        self._fuse_checkpoints = 0
        self._windows: dict[int, tuple[bool, int, int]] = {}

    # ------------------------------------------------------------------ input
    @property
    def length(self) -> int:
        """Original characters fed so far (code points)."""
        return self._length

    @property
    def masked_length(self) -> int:
        """Length of ``t``, the text the detectors have seen (code points)."""
        return len(self._t)

    @property
    def hits(self) -> dict[str, int]:
        """Checkpoints at which each detector held, by kind."""
        return dict(self._hits)

    @property
    def fuse_checkpoints(self) -> int:
        """Checkpoints at which at least one of exact_tail/lowdiv_tail/lowdiv_sliding held."""
        return self._fuse_checkpoints

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` has been called."""
        return self._finished

    @property
    def memory_bytes(self) -> int:
        """Bytes held by this reference stream (it keeps the whole text: unbounded)."""
        return sys.getsizeof(self._t) + sys.getsizeof(self._orig) + 8 * len(self._orig)

    def feed(self, delta: str) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """Append ``delta`` and return the detections reported meanwhile."""
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        if delta and self._mode == "tokens":
            raise RuntimeError("this stream holds token ids: feed it with feed_tokens() only")
        if delta:
            self._mode = "text"
        return self._feed(delta)

    def feed_tokens(self, ids: Any) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """Append token ids (one symbol each; positions count tokens) and return the
        detections reported meanwhile (see ``loopcore._tokens``)."""
        view = _tokens.token_view(ids)
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        symbols = _tokens.token_symbols(view)
        if symbols and self._mode == "text":
            raise RuntimeError("this stream holds text: feed it with feed() only")
        if symbols:
            self._mode = "tokens"
            self.skip_code_blocks = False  # ids are symbols: there is no fenced code to mask
        return self._feed(symbols)

    def _feed(self, delta: str) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("ChannelStream is being fed by another thread; use one stream per thread")
        try:
            out: list[tuple[str, int, int, int, dict[str, Any]]] = []
            for ch in delta:
                self._take(self._length, ch, out)
                self._length += 1
            return out
        finally:
            self._busy.release()

    def finish(self) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """End of stream: release held characters and run the last checkpoint."""
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("ChannelStream is being fed by another thread; use one stream per thread")
        try:
            return self._finish()
        finally:
            self._busy.release()

    def _finish(self) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        self._finished = True
        out: list[tuple[str, int, int, int, dict[str, Any]]] = []
        pending, self._pending = self._pending, []
        for pos, ch in pending:
            self._emit(pos, ch, out)
        n = len(self._t)
        if n and n % self.check_every:
            self._checkpoint(out, final=True)
        return out

    def _take(self, pos: int, ch: str, out: list[RawDetection]) -> None:
        """Fence masking, one original character at a time (SPEC §2.6)."""
        if not self.skip_code_blocks:
            self._emit(pos, ch, out)
            return
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
            return
        if self._in_code:
            if ch != "\n":
                self._code_line.append(ch)
                return
            raw = "".join(self._code_line)
            line = raw.strip(" \t")
            self._code_line = []
            run = len(line) - len(line.lstrip(self._fence_char))
            if run >= self._fence_len and not line[run:].strip():
                self._in_code = False
                self._line_start = True
                return
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
                    self._emit(self._code_start + j, c, out)
                self._emit(pos, "\n", out)
            self._code_start = pos + 1
            return
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
                return
            pending, self._pending = self._pending, []
            for p, c in pending:
                self._emit(p, c, out)
            self._line_start = False
        elif self._line_start and ch in "`~":
            self._pending.append((pos, ch))
            return
        self._emit(pos, ch, out)
        if ch == "\n":
            self._line_start = True
        elif ch not in " \t":
            self._line_start = False

    def _emit(self, pos: int, ch: str, out: list[RawDetection]) -> None:
        self._t.append(ch)
        self._orig.append(pos)
        n = len(self._t)
        if n % self.check_every == 0:
            self._checkpoint(out, final=False)

    # ------------------------------------------------------------ checkpoints
    def _map(self, k: int) -> int:
        """Original offset of ``t`` offset ``k`` (``k == n`` maps past the end)."""
        if k < len(self._t):
            return self._orig[k]
        return self._orig[-1] + 1 if self._t else 0

    def _checkpoint(self, out: list[RawDetection], final: bool) -> None:
        t = "".join(self._t)
        n = len(t)
        results: dict[str, Found | None] = {
            "exact_tail": self._exact_tail(t) if self.exact_tail else None,
            "lowdiv_tail": self._lowdiv_tail(t) if self.lowdiv_tail else None,
            "lowdiv_sliding": self._lowdiv_sliding(t, final) if self.lowdiv_sliding else None,
            "cycle": self._cycle(t) if self.cycle else None,
            "pool": self._pool(t) if self.pool else None,
            "near_cycle": self._near_cycle(t) if self.near_cycle else None,
            "salad": self._salad(t) if self.salad else None,
        }
        position = self._map(n)
        if any(results[kind] is not None for kind in KINDS[:3]):
            self._fuse_checkpoints += 1
        for kind in KINDS:
            found = results[kind]
            holds = found is not None
            if found is not None:
                self._hits[kind] += 1
                start, cut, evidence = found
                strong = evidence.get("strong", True)
                # a report per episode, and one more when a weak episode turns strong
                if not self._holding[kind] or (strong and not self._reported_strong[kind]):
                    out.append((kind, position, start, cut, evidence))
                    self._reported_strong[kind] = strong
            self._holding[kind] = holds

    def _exact_tail(self, t: str) -> Found | None:
        n, w = len(t), self.window
        if n < self.min_chars or w < 40 or n < w:
            return None
        tail = t[n - w:]
        lo = max(0, n - w - self.history)
        region = t[lo:n - w]
        found = []
        i = region.find(tail)
        while i != -1:
            found.append(lo + i)
            i = region.find(tail, i + w)
        if len(found) < self.repeats - 1:
            return None
        cut = found[1] if len(found) > 1 else n - w
        return self._map(found[0]), self._map(cut), {"count": len(found)}

    @staticmethod
    def _max_ngram(w: str, k: int) -> int:
        counts = Counter(w[i:i + k] for i in range(len(w) - k + 1))
        return max(counts.values(), default=0)

    def _lowdiv_tail(self, t: str) -> Found | None:
        n = len(t)
        if n < self.min_chars:
            return None
        lo = max(0, n - self.lowdiv_window)
        w = t[lo:]
        unique = len(set(w))
        if unique >= self.lowdiv_max_unique:
            return None
        top = self._max_ngram(w, self.ngram)
        if top < self.lowdiv_min_repeat:
            return None
        if data_share_exceeds(w, self.lowdiv_max_data_share) or art_run(w, self.lowdiv_art_max_alnum):
            return None
        at = self._map(lo)
        return at, at, {"unique": unique, "max_ngram": top}

    def _window_fires(self, t: str, end: int) -> tuple[bool, int, int]:
        if end not in self._windows:
            w = t[end - self.slide_window:end]
            unique = len(set(w))
            top = self._max_ngram(w, self.ngram) if unique < self.slide_max_unique else 0
            fires = (
                unique < self.slide_max_unique
                and top >= self.slide_min_repeat
                and not data_share_exceeds(w, self.lowdiv_max_data_share)
                and not art_run(w, self.lowdiv_art_max_alnum)
            )
            self._windows[end] = (fires, unique, top)
        return self._windows[end]

    def _lowdiv_sliding(self, t: str, final: bool) -> Found | None:
        n, size, step = len(t), self.slide_window, self.slide_step
        ends = list(range(size, n + 1, step))
        if final and n >= size and (n - size) % step:
            ends.append(n)
        for end in ends:
            fires, unique, top = self._window_fires(t, end)
            if fires:
                if n < self.min_chars:
                    return None
                at = self._map(end - size)
                return at, at, {"unique": unique, "max_ngram": top, "window_start": at}
        return None

    def _cycle(self, t: str) -> Found | None:
        n = len(t)
        span = min(n, self.cycle_scan_chars)
        q = smallest_periods(t[n - span:])
        for length in range(span, 0, -1):
            p = q[length]
            if (
                length >= self.cycle_min_chars
                and self.cycle_min_period <= p <= self.cycle_max_period
                and length >= self.cycle_min_copies * p
            ):
                start = n - length
                evidence = {"period": p, "copies": length // p, "length": length}
                return self._map(start), self._map(start + p), evidence
        return None

    def _near_cycle(self, t: str) -> Found | None:
        """N -- a near-verbatim cycle: copies of a period p with small edits (SPEC §2.7 default).

        ``k = near_ngram``; the k-gram ending at ``i`` is ``t[i-k+1:i+1]``.  Only *anchor*
        k-grams are indexed (:func:`near_anchors`: about one position in
        :data:`NEAR_WINNOW`, chosen by content, so copies share their anchors).

        1. Lag: for each anchor ``i`` since the previous checkpoint (``b0 <= i < n``; the
           last ``check_every`` positions, fewer at the end of the stream),
           the distance to the most recent earlier anchor ending the same k-gram (at most
           ``link = lim + near_tolerance(lim)`` back, ``lim = near_max_period +
           near_tolerance(near_max_period)``), counted when
           within ``[near_min_period, lim]`` (a period of ``near_max_period`` with insertions
           has lags a little above it).  ``p`` = the most frequent counted
           lag (ties: the smallest), then ``p`` = the mean (rounded, halves up) of the counted lags
           within its tolerance (edits scatter a noisy loop's lags around the period);
           ``tol = near_tolerance(p)``.  Needs at least
           ``near_min_lag_share * anchors`` counted lags within ``tol`` of a multiple of ``p``
           (:func:`near_multiple`: up to :data:`NEAR_MULTIPLES` periods back).  When that
           ``p`` fails this or step 2 (not step 3) and at least :data:`NEAR_VOTE_GATE` of the
           block's anchors occurred before (within ``link``), :data:`NEAR_CANDIDATES` - 1 more
           lags are tried in turn: the most voted other lags, each anchor voting for the lags of its
           first :data:`NEAR_VOTES` earlier occurrences (each at most ``link`` before the
           next, within ``[near_min_period, lim]``; at most ``min(check_every, lim)``
           distinct lags, the first met; ties: the
           smallest), each
           needing ``near_min_lag_share`` of the block's anchors to occur earlier at a lag
           within its tolerance: a unit with an inner repeat ("the the the") makes the inner
           lag the most frequent nearest one.
        2. Coverage: the window ``t[n-w:n]``, ``w = max(2p, near_min_window)`` (two copies
           after the first).  An anchor ``i`` of the window *matches* at lag ``c`` when the
           nearest earlier anchor ``j`` ending the same k-gram with ``|i - j - p| <= tol``
           has ``c = i - j`` (an insertion or deletion shifts the lag a little; ``q = c``), or
           else, when the copy one period back was edited there, the nearest with
           ``|i - j - 2p| <= 2 tol`` and ``i - j <= link`` (``q = c // 2``).  Walking the
           matching anchors left to right, each one not yet covered *seeds* a segment: its
           k-gram extended left (down to what is covered already) while ``t[x] == t[x - c]``
           and right across small edits (:func:`near_extend` at lag ``q``, comparing at ``c``
           first).  Each segment adds its length less its skipped code points and
           :data:`NEAR_SEED_COST`.  Needs ``covered >= near_min_coverage * w``.  When it
           falls short, the last segment of at least ``2k`` ends at ``end`` with
           ``2k <= n - end < check_every`` (the copies stopped inside the last block) and
           ``covered + (n - end)`` could reach it, the window ``t[end-w:end]`` is walked
           instead (what a checkpoint at ``end`` would have seen).
        3. Records: holds back when ``record_chars >= near_max_record_share * w``
           (:func:`is_record_line`).

        ``cut`` = the start of the window's first segment at least ``2k`` long (the second
        copy: one copy is kept; a lone k-gram recurs by chance), ``start = max(0, cut - p)``.
        Evidence: ``period``, ``coverage``.

        Pending: when the first lag passes its share (or a voted one) but its window falls
        short (not records), the next checkpoint first tries the window at that period (after
        the held one): a noisy loop's lags scatter, so its block may not pass the share when
        its window would.  A pending window that falls short again but is at least
        :data:`NEAR_PENDING_KEEP` covered stays pending.

        Holding: when N held at the previous checkpoint with period ``p <= lim``, steps 2-3 at
        that ``p`` come first (a loop in progress stays one episode even when a block's anchors
        are few or its lags scattered).

        When that does not fire, the *recurrence* check (restarts: copies whose lengths vary,
        such as a sentence re-emitted cut at different words), if at least
        ``near_min_recurrence`` of the anchors since the previous checkpoint have an earlier
        anchor ending the same k-gram within ``link``: the window
        ``t[n-wr:n]``, ``wr = near_recurrence_window``, walked as above but each anchor
        extended exactly (no edits) at its own lag, the distance to the nearest earlier anchor
        ending the same k-gram (within ``link``); a segment counts when it is at least ``2k``
        long.  Fires when ``covered >= near_min_recurrence * wr`` and the window is not
        mostly record lines; ``period`` is then the lag of the first segment, which starts
        at ``cut``.
        """
        n, k = len(t), self.near_ngram
        if n < self.near_min_window or n < k:
            return None
        max_p, div = self.near_max_period, self.near_tolerance
        lim = max_p + near_tolerance(max_p, div)
        link = lim + near_tolerance(lim, div)  # how far back an anchor is linked
        # + 2 link: a recurrence seed's source anchor and the occurrence before it
        reach = max(2 * lim, self.near_min_window, self.near_recurrence_window) + 2 * link + self.check_every + k
        first = max(k - 1, n - reach)
        anchors = near_anchors(t, k, first, n)
        ends: dict[str, list[int]] = {}
        for i in anchors:
            ends.setdefault(t[i - k + 1:i + 1], []).append(i)

        def before(i: int) -> list[int]:
            """Earlier anchors ending the k-gram that ends at anchor ``i``, nearest first."""
            return [j for j in reversed(ends[t[i - k + 1:i + 1]]) if j < i]

        found: Found | None = None
        if 0 < self._near_hold <= lim:  # a loop N holds on: its window at the same period, first
            p = self._near_hold
            window = self._near_window(t, anchors, before, p, near_tolerance(p, div), link)
            found = None if isinstance(window, str) else window  # "no", "records": none
        pending, self._near_pending = self._near_pending, 0
        if found is None and 0 < pending <= lim and pending != self._near_hold:
            window = self._near_window(t, anchors, before, pending, near_tolerance(pending, div), link)
            if window == "no" and self._near_covered >= self._pending_min(pending):
                self._near_pending = pending  # a loop still growing into its window: once more
            found = None if isinstance(window, str) else window
        if found is None:
            found = self._near_periodic(t, anchors, before, lim, link) or self._near_recurrence(t, anchors, before, link)
        self._near_hold = found[2]["period"] if found else 0
        # strong: a whole copy equal to the one before it, at this checkpoint and the previous one
        whole = found is not None and found[2]["strong"]
        if found is not None:  # a block of new text confirms (not the end of the stream)
            found[2]["strong"] = whole and self._near_whole_prev and n % self.check_every == 0
        self._near_whole_prev = whole
        return found

    def _pending_min(self, p: int) -> float:
        """The coverage a window at period ``p`` needs to become or stay pending: half of it
        (:data:`NEAR_PENDING_KEEP`), and no less than one block short of passing (a window
        gains at most a block of coverage per checkpoint)."""
        w = max(2 * p, self.near_min_window)
        return float(max(NEAR_PENDING_KEEP * w, self.near_min_coverage * w - self.check_every))

    def _near_periodic(self, t: str, anchors: list[int], before: Any, lim: int, link: int) -> Found | None:
        n, k = len(t), self.near_ngram
        div = self.near_tolerance
        b0 = max(k - 1, n - (n % self.check_every or self.check_every))
        block = [i for i in anchors if i >= b0]
        lags = []
        for i in block:
            earlier = before(i)
            if earlier and i - earlier[0] <= link and self.near_min_period <= i - earlier[0] <= lim:
                lags.append(i - earlier[0])
        if not lags:
            return None
        counts = Counter(lags)
        mode = min(counts, key=lambda d: (-counts[d], d))
        near = [d for d in lags if abs(d - mode) <= near_tolerance(mode, div)]
        p = (2 * sum(near) + len(near)) // (2 * len(near))  # their mean, rounded (halves up)
        tol = near_tolerance(p, div)
        if sum(1 for d in lags if near_multiple(d, p, tol)) >= self.near_min_lag_share * len(block):
            found = self._near_window(t, anchors, before, p, tol, link)
            if found != "no":
                return None if isinstance(found, str) else found  # "records": held back
            if self._near_covered >= self._pending_min(p):
                self._near_pending = p  # close: the loop may be growing into its window
        recurring = sum(1 for i in block if before(i) and i - before(i)[0] <= link)
        if recurring < NEAR_VOTE_GATE * len(block):
            return None  # the votes only where the block's k-grams mostly repeat
        # each anchor: the lags of its first NEAR_VOTES earlier occurrences; at most ``cap``
        # distinct lags (the first met, anchors in order, nearest occurrence first)
        votes: dict[int, int] = {}
        cap = min(self.check_every, lim)
        for i in block:
            newer = i
            for j in before(i)[:NEAR_VOTES]:
                if newer - j > link or i - j > lim:
                    break
                d = i - j
                if d >= self.near_min_period and d != p and (d in votes or len(votes) < cap):
                    votes[d] = votes.get(d, 0) + 1
                newer = j
        for p in sorted(votes, key=lambda d: (-votes[d], d))[:NEAR_CANDIDATES - 1]:
            if p > NEAR_LONG_VOTE and recurring < NEAR_LONG_VOTE_GATE * len(block):
                continue  # a long period's window (2p) is walked only where the block all repeats
            tol = near_tolerance(p, div)
            within = sum(1 for i in block if any(abs(i - j - p) <= tol for j in before(i)))
            if within >= self.near_min_lag_share * len(block):
                found = self._near_window(t, anchors, before, p, tol, link)
                if not isinstance(found, str):  # not "no", not "records"
                    return found
                if found == "no" and not self._near_pending and \
                        self._near_covered >= self._pending_min(p):
                    self._near_pending = p
        return None

    def _near_window(self, t: str, anchors: list[int], before: Any, p: int, tol: int, link: int) -> Found | str:
        """Steps 2-3 at period ``p``: the detection, or ``"no"``, or ``"records"``."""
        n = len(t)
        w = max(2 * p, self.near_min_window)
        self._near_covered = 0  # the covered code points of the last walk (pending keeps on it)
        if n < w:
            return "no"
        need = self.near_min_coverage * w
        # below this the walk's exact coverage decides nothing (it fails here, the retry below
        # and the pending minimum, which is at least this): a walk that can no longer reach it
        # stops (the cost on prose)
        floor = need - self.check_every
        covered, cut, end = self._near_cover(t, anchors, before, p, tol, link, n, w, floor)
        hi = n
        k = self.near_ngram
        if covered < need and 2 * k <= n - end < self.check_every and end >= w and covered + (n - end) >= need:
            # the copies ended inside the last block: the window that ends with them
            hi = end
            covered, cut, end = self._near_cover(t, anchors, before, p, tol, link, hi, w, floor)
        self._near_covered = covered
        if cut < 0 or covered < need:
            return "no"
        if record_chars(t, hi - w, hi) >= self.near_max_record_share * w:
            return "records"
        max_p, div = self.near_max_period, self.near_tolerance
        lim = max_p + near_tolerance(max_p, div)
        span = max(2 * lim, self.near_min_window, self.near_recurrence_window)
        cut = near_walk_back(t, cut, p, max(0, n - span - link))
        return self._map(max(0, cut - p)), self._map(cut), {
            "period": p, "coverage": covered / w, "exact": self._near_exact, "strong": self._near_whole}

    def _near_cover(self, t: str, anchors: list[int], before: Any, p: int, tol: int, link: int, hi: int, w: int,
                    floor: float = 0.0) -> tuple[int, int, int]:
        """The coverage walk over the window ``t[hi-w:hi]``: ``(covered, cut, end)``: ``cut`` the
        start of the first segment at least ``2k`` long (-1: none), ``end`` the end of the last
        one (``hi - w``: none; shorter segments are chance k-grams, as in the prose after a
        loop).  The walk stops with ``(covered, -1, hi - w)`` as soon as ``covered + (hi -
        done)`` (what it can still reach: a segment walks back at most to ``done``) is below
        ``floor``.  Sets ``_near_exact``: the longest exact piece of the walk (a stretch equal to
        the text one lag back throughout: its segments split at each skipped edit)."""
        k = self.near_ngram
        lo = hi - w
        covered, done, cut, last = 0, lo, -1, lo
        run = [lo, 0, False]  # [the current exact piece's start, the longest exact piece, a whole copy]
        for i in anchors:
            if i >= hi:
                break
            if i < max(lo, done):
                continue
            if covered + (hi - done) < floor:
                self._near_exact, self._near_whole = run[1], bool(run[2])
                return covered, -1, lo
            c = next((i - j for j in before(i) if abs(i - j - p) <= tol), 0)
            q = c
            if c == 0:  # the copy one period back was edited here: two periods back
                c = next((i - j for j in before(i) if abs(i - j - 2 * p) <= 2 * tol and i - j <= link), 0)
                q = c // 2
            if c == 0:
                continue
            s = max(lo, i - k + 1)
            while s > max(lo, done) and s - 1 - c >= 0 and t[s - 1] == t[s - 1 - c]:
                s -= 1
            run[0] = s
            e, gaps = near_extend(t, i + 1, hi, q, p, tol, k, link, c, run)
            if cut < 0 and e - s >= 2 * k:  # a k-gram alone recurs by chance (" the ")
                cut = s
            covered += e - max(s, done) - gaps - NEAR_SEED_COST
            if e - s >= 2 * k:
                last = e
            done = e
        self._near_exact, self._near_whole = run[1], bool(run[2])
        return covered, cut, last

    def _near_recurrence(self, t: str, anchors: list[int], before: Any, link: int) -> Found | None:
        n, k, w = len(t), self.near_ngram, self.near_recurrence_window
        if n < w:
            return None
        b0 = max(k - 1, n - (n % self.check_every or self.check_every))
        block = [i for i in anchors if i >= b0]
        recurring = sum(1 for i in block if before(i) and i - before(i)[0] <= link)
        if not block or recurring < self.near_min_recurrence * len(block):
            return None  # the gate: the block's anchors nearly all occurred before
        lo = n - w
        covered, done, cut, lag, exact, strong = 0, lo, -1, 0, 0, False
        for i in anchors:
            if i < max(lo, done):
                continue
            earlier = before(i)
            if not earlier or i - earlier[0] > link:
                continue
            if len(earlier) < 2 or earlier[0] - earlier[1] > link:
                continue  # the copied k-gram occurred once before: two copies are not a loop
            q = i - earlier[0]
            s = max(lo, i - k + 1)
            while s > max(lo, done) and s - 1 - q >= 0 and t[s - 1] == t[s - 1 - q]:
                s -= 1
            e = i + 1
            while e < n and t[e] == t[e - q]:
                e += 1
            if e - s < 2 * k:
                continue
            if cut < 0:
                cut, lag = s, q
            covered += e - max(s, done)
            exact = max(exact, e - s)
            strong = strong or e - s >= q
            done = e
        if cut < 0 or covered < self.near_min_recurrence * w:
            return None
        if record_chars(t, lo, n) >= self.near_max_record_share * w:
            return None
        return self._map(max(0, cut - lag)), self._map(cut), {
            "period": lag, "coverage": covered / w, "exact": exact, "strong": strong}

    def _salad(self, t: str) -> Found | None:
        """T -- salad: random picks from a handful of symbols (:meth:`_symbol_salad`) or, when
        ``salad_max_words`` is not 0, of words (:meth:`_word_salad`); no fixed period."""
        found = self._symbol_salad(t)
        if found is None and self.salad_max_words:
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
        n, w = len(t), self.salad_window
        if n < w:
            return None
        gate = t[n - min(SALAD_GATE, w):]
        if sum(1 for ch in gate if ch.isalnum()) >= self.salad_max_alnum * len(gate):
            return None
        window = t[n - w:]
        alnum = sum(1 for ch in window if ch.isalnum())
        if alnum >= self.salad_max_alnum * w:
            return None
        if sum(1 for ch in window if ch.isspace()) >= self.salad_max_space * w:
            return None
        if sum(1 for ch in window if ch in _DIGITS) >= SALAD_MAX_DIGITS * w:
            return None  # numbers: an enumeration, not a salad
        unique = len(set(window))
        if unique >= self.salad_max_unique:
            return None
        cut, run = n - w, 0
        for i in range(n - w, n):
            run = run + 1 if t[i].isalnum() else 0
            if run >= SALAD_WORD:
                cut = i + 1
        return self._map(cut), self._map(cut), {"unit": "symbol", "unique": unique, "alnum": alnum / w}

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
                    if len(words) == self.salad_max_words:
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
        if len(run) < self.salad_min_words:
            return None
        unique = len(set(run))
        if len(set(zip(run, run[1:]))) < SALAD_PAIRS_PER_WORD * unique:
            return None
        cut = tokens[k][0]
        if _inside_brackets(t, cut):
            return None
        return self._map(cut), self._map(cut), {"unit": "word", "unique": unique, "tokens": len(run)}


    def _pool(self, t: str) -> Found | None:
        sentences = split_sentences(t, self.pool_skip_key_value)
        size = self.pool_window
        if len(sentences) < size:
            return None
        recent = [text for _, text in sentences[-size:]]
        counts = Counter(recent)
        phrases = {
            s for s, c in counts.items()
            if len(s) <= self.pool_max_phrase_chars and c >= self.pool_min_occurrences
        }
        covered = sum(1 for s in recent if s in phrases)
        if covered < self.pool_min_coverage * size:
            return None
        if not self.pool_min_distinct <= len(phrases) <= self.pool_max_distinct:
            return None
        retained = sentences[-4 * size:]
        m = len(retained)
        for j in range(m):
            start, text = retained[j]
            if text not in phrases:
                continue
            inside = sum(1 for _, s in retained[j:] if s in phrases)
            if inside >= self.pool_min_coverage * (m - j):
                cut = self._map(start)
                ordered = list(dict.fromkeys(s for s in recent if s in phrases))[:MAX_EVIDENCE_PHRASES]
                evidence = {
                    "coverage": covered / size,
                    "phrases": tuple(s[: self.pool_max_phrase_chars] for s in ordered),
                }
                return cut, cut, evidence
        raise AssertionError("unreachable: the window itself satisfies the coverage")
