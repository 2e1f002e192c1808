"""Pure-Python reference of the loopguard text detectors (spec §2).

This package is the specification written down as code, in the most literal way:
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
  blocks removed when ``skip_code_blocks`` is true (spec §2.6).
* Checkpoints happen whenever ``len(t)`` reaches a multiple of
  ``check_every``, and once more at :meth:`ChannelStream.finish` when the last
  length was not a checkpoint.
* Each raw detection is a tuple ``(kind, position, start, cut, evidence)``.

Modules
-------
* :mod:`.chars` -- character classes and shared definitions (``KINDS``, ``Found``, ...);
* :mod:`.params` -- the parameters of a stream, one attribute each;
* :mod:`.buffer` -- the masked text ``t`` and its map to original offsets;
* :mod:`.fences` -- fence masking (spec §2.6);
* :mod:`.records` -- machine record lines (N holds back on them);
* one module per detector, each a class built from the stream's parameters and ``t``'s buffer,
  holding its own state across checkpoints, with ``check(t, final) -> Found | None`` (``final``:
  the checkpoint of :meth:`ChannelStream.finish`; only S reads it):
  :mod:`.exact` (E), :mod:`.lowdiv` (L and S), :mod:`.cycle` (C), :mod:`.pool` (P),
  :mod:`.near` (N), :mod:`.salad` (T);
* :mod:`.stream` -- :class:`ChannelStream`: feeding, the checkpoints and the reports.

Every name the reference had when it was one module is imported here under that name: code
outside the package (``loopcore``, the compiled core reading its constants at import, the tests)
reads them as ``_reference.NAME``.
"""

from __future__ import annotations

from .chars import (
    _CLOSERS,
    _DIGITS,
    _GLUE,
    _HEX,
    _ITEM_MARKERS,
    _OPENERS,
    _QUOTES,
    _SENTENCE_MARKS,
    _STRONG_END,
    _WEAK_END,
    _WIDE_STOPS,
    KINDS,
    WHITESPACE,
    Found,
    RawDetection,
)
from .cycle import smallest_periods
from .fences import FENCE_MAX_LINE, FENCE_MIN_CHARS, FENCE_MIN_LETTERS, fence_line_counts
from .lowdiv import ART_MIN_SYMBOLS, DATA_CHARS, DATA_MIN_DISTINCT, art_run, data_share_exceeds
from .near import (
    _HB,
    _M64,
    NEAR_CANDIDATES,
    NEAR_GAP,
    NEAR_LONG_VOTE,
    NEAR_LONG_VOTE_GATE,
    NEAR_MIN_TOL,
    NEAR_MULTIPLES,
    NEAR_PENDING_KEEP,
    NEAR_SEED_COST,
    NEAR_SHORT_TOL,
    NEAR_VOTE_GATE,
    NEAR_VOTES,
    NEAR_WHOLE_CAP,
    NEAR_WHOLE_MIN,
    NEAR_WINNOW,
    near_anchors,
    near_extend,
    near_key,
    near_multiple,
    near_packed,
    near_tolerance,
    near_walk_back,
)
from .pool import (
    _KEY_VALUE_RE,
    _LIST_RE,
    _QUOTE_RE,
    _TABLE_RE,
    MAX_EVIDENCE_PHRASES,
    _line_is_excluded,
    split_sentences,
)
from .records import (
    _RECORD_KEY_RE,
    _UTC_OFFSET_RE,
    RECORD_MAX_LINE,
    _first_field,
    _json_string_item,
    is_record_line,
    record_chars,
)
from .salad import (
    SALAD_BRACKET_REACH,
    SALAD_GATE,
    SALAD_MAX_DIGITS,
    SALAD_MAX_ITEM_LINE,
    SALAD_PAIRS_PER_WORD,
    SALAD_WORD,
    SALAD_WORD_REPEAT,
    SALAD_WORD_WINDOW,
    _inside_brackets,
    _item_line,
    _item_start,
)
from .stream import ChannelStream, finish_streams

__all__ = [
    "ChannelStream",
    "KINDS",
    "WHITESPACE",
    "finish_streams",
    "smallest_periods",
    "split_sentences",
]
