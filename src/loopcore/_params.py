"""The one parameter schema of the stream core (spec §2): every detector key, once.

Each :class:`Param` has the name used everywhere (the ``ChannelStream`` keyword, the
attribute of both implementations, the :class:`loopguard.TextConfig` key), its type,
its spec default, its bounds, the detector that reads it and a line of doc.
:data:`RULES` are the cross-field rules.  :func:`check` validates a parameter dict
(both implementations call it first); :class:`loopguard.TextConfig` builds its fields,
validation and docstring from the same table; ``_core.pyx``, ``_core.pyi`` and the
reference are kept in line with it by ``tests/test_params.py``.

The enable flags are named after the detector kinds (``exact_tail`` … ``salad``);
lengths, periods and positions are Unicode code points.

>>> [p.name for p in PARAMS if p.detector == "cycle"][:3]
['cycle', 'cycle_min_period', 'cycle_max_period']
>>> check({**defaults(), "cycle_min_period": 50, "cycle_max_period": 20})
Traceback (most recent call last):
...
ValueError: cycle_max_period=20 is invalid: must be >= cycle_min_period (50)
>>> rule_errors({**defaults(), "exact_tail": True, "window": 10}, inert=True)
[('window', '>= 40 for exact_tail to fire (spec §2.1: with a shorter tail E never fires)')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Param", "Rule", "PARAMS", "RULES", "KIND_FLAGS", "BY_NAME", "check", "defaults", "rule_errors"]

_BIG = 1_000_000  # bound on windows and spans: keeps memory per channel bounded


@dataclass(frozen=True)
class Param:
    """One core parameter.

    ``kind`` is ``bool``, ``int`` or ``float`` (a number: ``int`` accepted, ``bool`` not);
    ``low``/``high`` bound it (``low_open``: ``low`` itself is refused); ``detector`` is
    the kind that reads it (``"stream"``: the buffer, masking, checkpoints).
    """

    name: str
    kind: type
    default: Any
    detector: str
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def rule(self) -> str:
        """The range as words (``an integer from 1 to 1000000``, ``a number in (0, 1]``)."""
        if self.kind is bool:
            return "True or False"
        if self.kind is int:
            return f"an integer from {self.low} to {self.high}"
        return f"a number in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}]"

    def problem(self, value: Any) -> tuple[type[Exception], str] | None:
        """``None`` when ``value`` is valid, else the error type and the rule it breaks."""
        if self.kind is bool:
            return None if isinstance(value, bool) else (TypeError, self.rule())
        if isinstance(value, bool) or not isinstance(value, int if self.kind is int else (int, float)):
            return TypeError, self.rule()
        assert self.low is not None and self.high is not None
        below = value <= self.low if self.low_open else value < self.low
        if below or value > self.high:
            return ValueError, self.rule()
        return None


def _num(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)


def _flag(name: str, doc: str) -> Param:
    return Param(name, bool, False, name, doc)


def _int(name: str, default: int, low: int, high: int, detector: str, doc: str) -> Param:
    return Param(name, int, default, detector, doc, low, high)


def _share(name: str, default: float, detector: str, doc: str, *, closed: bool = False) -> Param:
    return Param(name, float, default, detector, doc, 0.0, 1.0, low_open=not closed)


#: Every parameter of ``ChannelStream``, in the order of spec §2.
PARAMS: tuple[Param, ...] = (
    Param(
        "skip_code_blocks",
        bool,
        True,
        "stream",
        "mask fenced code from what the detectors see (spec §2.6; TextConfig: on the text channel only)",
    ),
    _int(
        "fence_repeat_lines",
        0,
        0,
        _BIG,
        "stream",
        "a code line repeated this many times in a row inside a fence is shown to the detectors (0: masked whole)",
    ),
    _int("check_every", 200, 1, _BIG, "stream", "code points between checkpoints"),
    # E -- exact tail repeat (002 ①a)
    _flag("exact_tail", "enable E, the exact tail repeat (seed 002 ①a)"),
    _int("min_chars", 2000, 0, _BIG, "exact_tail", "E, L and S wait for this many code points"),
    _int("window", 600, 1, _BIG, "exact_tail", "E's tail length (E fires only with 40 or more, spec §2.1)"),
    _int("history", 4000, 0, _BIG, "exact_tail", "how far before the tail E looks for copies"),
    _int("repeats", 3, 2, _BIG, "exact_tail", "copies of the tail E needs"),
    # L -- low diversity, tail (002 ①b)
    _flag("lowdiv_tail", "enable L, low diversity of the tail (seed 002 ①b)"),
    _int("lowdiv_window", 2000, 1, _BIG, "lowdiv_tail", "L's tail length"),
    _int("ngram", 24, 1, 10_000, "lowdiv_tail", "n-gram length of L and S"),
    _int("lowdiv_max_unique", 45, 1, _BIG, "lowdiv_tail", "L fires below this many distinct code points"),
    _int("lowdiv_min_repeat", 10, 1, _BIG, "lowdiv_tail", "... with an n-gram seen this many times"),
    _share(
        "lowdiv_max_data_share",
        1.0,
        "lowdiv_tail",
        "L and S hold back on windows with more than this share of hex-dump characters (1: off)",
    ),
    _share(
        "lowdiv_art_max_alnum",
        0.0,
        "lowdiv_tail",
        "L and S hold back on ASCII-art runs with at most this share of letters and digits (0: off)",
        closed=True,
    ),
    # S -- low diversity, sliding (002 ①b-2)
    _flag("lowdiv_sliding", "enable S, low diversity in sliding windows (seed 002 ①b-2)"),
    _int("slide_window", 400, 1, _BIG, "lowdiv_sliding", "S's window length"),
    _int("slide_step", 100, 1, _BIG, "lowdiv_sliding", "S's window step"),
    _int("slide_max_unique", 30, 1, _BIG, "lowdiv_sliding", "S fires below this many distinct code points"),
    _int("slide_min_repeat", 3, 1, _BIG, "lowdiv_sliding", "... with an n-gram seen this many times"),
    # C -- verbatim cycle (003)
    _flag("cycle", "enable C, the verbatim cycle (seed 003)"),
    _int("cycle_min_period", 16, 1, _BIG, "cycle", "shortest period C looks for"),
    _int("cycle_max_period", 4000, 1, _BIG, "cycle", "longest period C looks for"),
    _int("cycle_min_copies", 3, 2, _BIG, "cycle", "whole copies C needs"),
    _int("cycle_min_chars", 600, 0, _BIG, "cycle", "code points the copies must cover"),
    _int("cycle_scan_chars", 12000, 1, _BIG, "cycle", "how far back C looks"),
    # P -- phrase pool (003)
    _flag("pool", "enable P, the phrase pool (seed 003)"),
    _int("pool_window", 30, 1, 1_000, "pool", "sentences P keeps"),
    _share("pool_min_coverage", 0.75, "pool", "share of the window the recurring phrases must cover"),
    _int("pool_max_phrase_chars", 48, 1, 1_000, "pool", "longest sentence that can be a phrase"),
    _int("pool_min_occurrences", 3, 1, 1_000, "pool", "times a phrase must recur"),
    _int("pool_min_distinct", 2, 1, 1_000, "pool", "fewest distinct phrases in rotation"),
    _int("pool_max_distinct", 8, 1, 1_000, "pool", "most distinct phrases in rotation"),
    Param("pool_skip_key_value", bool, False, "pool", "``key: value`` data lines are not phrases"),
    # N -- near-verbatim cycle (loopguard's own; 16-bit distances: period + period // tolerance < 65,536)
    _flag("near_cycle", "enable N, the near-verbatim cycle (loopguard's own)"),
    _int("near_ngram", 5, 1, 64, "near_cycle", "anchor k-gram length"),
    _int("near_min_period", 1, 1, 16_000, "near_cycle", "shortest period N looks for"),
    _int("near_max_period", 4000, 1, 16_000, "near_cycle", "longest period N looks for"),
    _int("near_min_window", 600, 1, 100_000, "near_cycle", "code points the copies must span"),
    _int("near_tolerance", 16, 1, _BIG, "near_cycle", "lags within max(2, p // tolerance) of the period count"),
    _share("near_min_lag_share", 0.35, "near_cycle", "share of anchors whose lag is the period"),
    _share("near_min_coverage", 0.82, "near_cycle", "share of the window the copies must cover"),
    _share("near_max_record_share", 0.5, "near_cycle", "N holds back on windows with more records than this"),
    _int("near_recurrence_window", 1000, 1, 32_000, "near_cycle", "window of the recurrence test (restarts)"),
    _share("near_min_recurrence", 0.95, "near_cycle", "share of recurring anchors in that window"),
    # T -- salad of symbols or words (loopguard's own)
    _flag("salad", "enable T, salads of symbols or words (loopguard's own)"),
    _int("salad_window", 600, 1, 100_000, "salad", "T's window length"),
    _int("salad_max_unique", 32, 1, _BIG, "salad", "T fires below this many distinct code points"),
    _share("salad_max_alnum", 0.25, "salad", "... with at most this share of letters and digits"),
    _share("salad_max_space", 0.5, "salad", "... and at most this share of blanks"),
    _int("salad_max_words", 8, 0, 16, "salad", "word salad: at most this many distinct words (0: off)"),
    _int("salad_min_words", 60, 2, 300, "salad", "word salad: in a run of this many words"),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
#: The enable flag of each detector kind, in evaluation order.
KIND_FLAGS: tuple[str, ...] = ("exact_tail", "lowdiv_tail", "lowdiv_sliding", "cycle", "pool", "near_cycle", "salad")


@dataclass(frozen=True)
class Rule:
    """A cross-field rule: ``test(params)`` is True when it holds; ``key`` is the
    parameter named in the error, ``text`` the rule as words.  ``inert``: breaking it is
    legal (the spec defines what happens: a detector never fires), so it is reported as a
    warning by :class:`loopguard.TextConfig`, not an error."""

    key: str
    text: Callable[[Mapping[str, Any]], str]
    test: Callable[[Mapping[str, Any]], bool]
    inert: bool = False


RULES: tuple[Rule, ...] = (
    Rule(
        "cycle_max_period",
        lambda p: f">= cycle_min_period ({p['cycle_min_period']})",
        lambda p: p["cycle_max_period"] >= p["cycle_min_period"],
    ),
    Rule(
        "near_max_period",
        lambda p: f">= near_min_period ({p['near_min_period']})",
        lambda p: p["near_max_period"] >= p["near_min_period"],
    ),
    Rule(
        "pool_max_distinct",
        lambda p: f">= pool_min_distinct ({p['pool_min_distinct']})",
        lambda p: p["pool_max_distinct"] >= p["pool_min_distinct"],
    ),
    Rule(
        "window",
        lambda p: ">= 40 for exact_tail to fire (spec §2.1: with a shorter tail E never fires)",
        lambda p: not p["exact_tail"] or p["window"] >= 40,
        inert=True,
    ),
)


def defaults() -> dict[str, Any]:
    """Every parameter at its spec default (every detector off; fenced code masked)."""
    return {p.name: p.default for p in PARAMS}


def rule_errors(params: Mapping[str, Any], *, inert: bool = False) -> list[tuple[str, str]]:
    """The ``(key, rule)`` pairs of the cross-field rules ``params`` breaks (valid fields
    assumed): the errors, or with ``inert=True`` the legal ones that leave a detector inert."""
    return [(r.key, r.text(params)) for r in RULES if r.inert == inert and not r.test(params)]


def check(params: Mapping[str, Any]) -> None:
    """Validate ``ChannelStream`` parameters (both implementations call it first).

    :class:`loopguard.TextConfig` validates the same keys, raising ``ConfigError``;
    this is the core's own guard for direct use.

    Raises
    ------
    TypeError
        for a missing or unknown parameter, or a value of the wrong type (``bool``
        is not an integer or a number).
    ValueError
        for a value out of its range, or a broken cross-field rule (:data:`RULES`).
    """
    missing = [k for k in BY_NAME if k not in params]
    unknown = sorted(set(params) - set(BY_NAME))
    if missing or unknown:
        raise TypeError(f"ChannelStream parameters: missing {missing}, unknown {unknown}")
    for p in PARAMS:
        value = params[p.name]
        problem = p.problem(value)
        if problem is not None:
            error, rule = problem
            raise error(f"{p.name}={value!r} is invalid: must be {rule}")
    for key, rule in rule_errors(params):
        raise ValueError(f"{key}={params[key]!r} is invalid: must be {rule}")
