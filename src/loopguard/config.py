"""Text detector configuration: profiles and validation (SPEC §2, §2.7, §7)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ConfigError

__all__ = ["TextConfig", "PROFILES", "PROFILE_OVERRIDES", "DETECTOR_KINDS"]

#: Detector kinds, in evaluation order, with the seed letter each one has in SPEC §2.
DETECTOR_KINDS: dict[str, str] = {
    "E": "exact_tail",
    "L": "lowdiv_tail",
    "S": "lowdiv_sliding",
    "C": "cycle",
    "P": "pool",
    "N": "near_cycle",
    "T": "salad",
}
_KIND_ORDER = tuple(DETECTOR_KINDS.values())
_FUSE = frozenset({"exact_tail", "lowdiv_tail", "lowdiv_sliding"})
_RESCUE = frozenset({"cycle", "pool"})
_NEAR = frozenset({"near_cycle"})
_SALAD = frozenset({"salad"})

#: Detectors each profile enables.  ``fuse`` and ``rescue`` are the seeds' own
#: sets (002 and 003) and never change; ``default`` is loopguard's tuned set.
#: ``default`` = C, P, N: C for verbatim cycles (exact cut), P for rotating phrases, N for
#: near-verbatim cycles -- copies with edits, which is how most loops of real models look.
#: L and S (the seed's low-diversity checks) are not in it: every loop they catch on the labelled
#: cases, the real records and the probe is caught by C or N, and their one class of their own is a
#: false positive (LaTeX derivations: few distinct characters plus a constant scaffold, gemma
#: ``[527]``); E adds nothing C does not catch.  See docs/detection.md.
PROFILES: dict[str, frozenset[str]] = {
    "fuse": _FUSE,
    "rescue": _RESCUE,
    "default": _RESCUE | _NEAR | _SALAD,
}

#: Where a profile departs from the SPEC numbers, and why (SPEC §2.7: only ``default`` is tuned).
#: ``ngram`` 40 for L and S: a repeated 24-gram is what the fixed boilerplate of structured
#: records (JSON Lines keys and punctuation, log prefixes) already gives, so the seed's 24 lets
#: L fire on every JSON Lines text of ``benchmarks/quality.py`` (100 of 100) and L/S on three of
#: the four borderline real reasoning records; 40-grams need the repeat to span more than that
#: boilerplate: JSON Lines 0 of 100 and the borderline records 0 of 4, while every labelled loop
#: and real loop caught with 24 is still caught (cases 14/17, real 13/14; probe recall 143 vs
#: 144 of 200).  See ``docs/detection.md``.
#: ``pool_skip_key_value`` True: ``key: value`` data lines (YAML, headers, config dumps) are
#: not sentences for P (as list, table and quote lines already are not): the YAML family of
#: ``benchmarks/quality.py`` is flagged by P in 94 % of its texts with it off and 0 % with it on,
#: and P catches the same labelled loops either way.
#: The phrase pool as "sentences recurring in the recent window" rather than 2–8 phrases of
#: 48 characters seen 3 times: ``pool_min_occurrences`` 2, ``pool_max_distinct`` 16,
#: ``pool_max_phrase_chars`` 64.  Model loops rotate more and longer sentences than the seed
#: allows (case 011: 14 sentences in a random walk; R1-Distill ``tasks[352]``: a near-verbatim
#: paragraph): with these, P catches both, the labelled cases go from 14 to 15 of 17 and the
#: real loops from 13 to 14 of 14, the probe gains 2 loops, and no legitimate text anywhere
#: fires more (the YAML case 023 would, without the data-line rule).  64 is the shortest phrase
#: length that catches ``tasks[352]`` (48 and 56 do not); each character of it costs the pool
#: 480 bytes of record text per channel.
#: ``lowdiv_max_data_share`` 0.8: L and S hold back on a window made more than 80 % of hex-dump
#: characters (hex digits, blanks, ``.``, ``:``): a hex dump of a zeroed region is as repetitive
#: as a loop (case 033; 90 % of the probe's hex dumps fired), while the loops L and S catch are
#: at most 55 % such characters (case 004) and prose about 25–40 %.
#: ``cycle_min_period`` 2: C also looks at periods 2–15 (still verbatim, at least 600 code points
#: and 3 copies), so the short verbatim floods L and S now hold back on as data runs (a digit ruler
#: ``1234567890``…) and floods of several symbols (``!!!???...``, kaomoji, emoji cycles) are
#: caught: probe loops +6 of 200, no legitimate text anywhere fires.  Single-character runs (period
#: 1, e.g. long blank padding) stay L's and S's.
PROFILE_OVERRIDES: dict[str, dict[str, Any]] = {
    "default": {
        "ngram": 40,
        "pool_skip_key_value": True,
        "pool_min_occurrences": 2,
        "pool_max_distinct": 16,
        "pool_max_phrase_chars": 64,
        "lowdiv_max_data_share": 0.8,
        "cycle_min_period": 2,
        "fence_repeat_lines": 8,
    }
}

_BIG = 1_000_000  # bound on windows and spans: keeps memory per channel bounded

# key -> (default, minimum, maximum); the integer keys of SPEC §2.
_INT_KEYS: dict[str, tuple[int, int, int]] = {
    "check_every": (200, 1, _BIG),
    # E -- exact tail repeat (002 ①a)
    "min_chars": (2000, 0, _BIG),
    "window": (600, 1, _BIG),
    "history": (4000, 0, _BIG),
    "repeats": (3, 2, _BIG),
    # L -- low diversity, tail (002 ①b)
    "lowdiv_window": (2000, 1, _BIG),
    "ngram": (24, 1, 10_000),
    "lowdiv_max_unique": (45, 1, _BIG),
    "lowdiv_min_repeat": (10, 1, _BIG),
    # S -- low diversity, sliding (002 ①b-2)
    "slide_window": (400, 1, _BIG),
    "slide_step": (100, 1, _BIG),
    "slide_max_unique": (30, 1, _BIG),
    "slide_min_repeat": (3, 1, _BIG),
    # C -- verbatim cycle (003)
    "cycle_min_period": (16, 1, _BIG),
    "cycle_max_period": (4000, 1, _BIG),
    "cycle_min_copies": (3, 2, _BIG),
    "cycle_min_chars": (600, 0, _BIG),
    "cycle_scan_chars": (12000, 1, _BIG),
    # P -- phrase pool (003)
    "pool_window": (30, 1, 1_000),
    "pool_max_phrase_chars": (48, 1, 1_000),
    "pool_min_occurrences": (3, 1, 1_000),
    "pool_min_distinct": (2, 1, 1_000),
    "pool_max_distinct": (8, 1, 1_000),
    # N -- near-verbatim cycle (loopguard's own, SPEC §2.7 default; off in the seed profiles)
    "near_ngram": (5, 1, 64),
    "near_min_period": (1, 1, 16_000),
    "near_max_period": (4000, 1, 16_000),
    "near_min_window": (600, 1, 100_000),
    "near_tolerance": (16, 1, _BIG),
    "near_recurrence_window": (1000, 1, 32_000),
    # T -- salad of symbols or words (loopguard's own; off in the seed profiles)
    "salad_window": (600, 1, 100_000),
    "salad_max_unique": (32, 1, _BIG),
    # T's word salad: at most this many distinct words (0: off), in a run of this many tokens
    "salad_max_words": (8, 0, 16),
    "salad_min_words": (60, 2, 300),
    # masking: a code line repeated this many times in a row inside a fence is shown to the
    # detectors (0: fenced code is masked whole, as SPEC §2.6 and the seeds)
    "fence_repeat_lines": (0, 0, _BIG),
    # policy
    "fuse_hits_before_action": (2, 1, _BIG),
}
_WATCH = ("both", "reasoning", "text")
#: N's shares: key -> default, each a number in (0, 1].
_SHARE_KEYS: dict[str, float] = {
    "near_min_lag_share": 0.35,
    "near_min_coverage": 0.82,
    "near_max_record_share": 0.5,
    "near_min_recurrence": 0.95,
    "salad_max_alnum": 0.25,
    "salad_max_space": 0.5,
}


def _check_int(key: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, value, f"an integer from {lo} to {hi}")
    if not lo <= value <= hi:
        raise ConfigError(key, value, f"an integer from {lo} to {hi}")
    return value


def _parse_enabled(value: Any) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError("enabled", value, "a collection of detector kinds or letters (" + " ".join(DETECTOR_KINDS) + ")")
    kinds = set()
    for item in value:
        if not isinstance(item, str):
            raise ConfigError("enabled", value, "a collection of detector kinds or letters (" + " ".join(DETECTOR_KINDS) + ")")
        if item in DETECTOR_KINDS:
            kinds.add(DETECTOR_KINDS[item])
        elif item in _KIND_ORDER:
            kinds.add(item)
        else:
            raise ConfigError(
                "enabled", value, f"detector kinds from {', '.join(_KIND_ORDER)} (or letters {' '.join(DETECTOR_KINDS)})"
            )
    return frozenset(kinds)


class TextConfig:
    """Configuration of the text loop detectors (SPEC §2).

    ``TextConfig(profile="default", **overrides)``.  The profile sets which
    detectors are enabled: ``"fuse"`` = E, L, S exactly as seed 002;
    ``"rescue"`` = C, P exactly as seed 003; ``"default"`` = C, P, N, T
    (docs/detection.md says why not E, L, S), at the
    SPEC numbers except where :data:`PROFILE_OVERRIDES` tunes them (with the
    reason).  Every other key defaults to the SPEC number; lengths and
    positions are Unicode code points.

    Keys (defaults): ``check_every`` (200); E: ``min_chars`` (2000), ``window``
    (600), ``history`` (4000), ``repeats`` (3); L: ``lowdiv_window`` (2000),
    ``ngram`` (24; 40 in ``default``), ``lowdiv_max_unique`` (45),
    ``lowdiv_min_repeat`` (10), ``lowdiv_max_data_share`` (1.0: off; 0.8 in
    ``default``: L and S hold back on hex-dump-like data runs),
    ``lowdiv_art_max_alnum`` (0: off in every profile; L and S hold back on
    ASCII-art runs when set); S:
    ``slide_window`` (400), ``slide_step`` (100), ``slide_max_unique`` (30),
    ``slide_min_repeat`` (3); C: ``cycle_min_period`` (16; 2 in ``default``),
    ``cycle_max_period`` (4000), ``cycle_min_copies`` (3), ``cycle_min_chars``
    (600), ``cycle_scan_chars`` (12000); P: ``pool_window`` (30),
    ``pool_min_coverage`` (0.75), ``pool_max_phrase_chars`` (48; 64 in
    ``default``), ``pool_min_occurrences`` (3; 2), ``pool_min_distinct`` (2),
    ``pool_max_distinct`` (8; 16), ``pool_skip_key_value`` (False; True in
    ``default``: ``key: value`` data lines are not phrases); N: ``near_ngram``
    (5), ``near_min_period`` (1), ``near_max_period`` (4000), ``near_min_window``
    (600), ``near_tolerance`` (16: lags within ``max(2, p // 16)`` of the
    period count), ``near_min_lag_share`` (0.35), ``near_min_coverage`` (0.82),
    ``near_max_record_share`` (0.5), ``near_recurrence_window`` (1000: restarts,
    copies of varying length), ``near_min_recurrence`` (0.95); T (token salad):
    ``salad_window`` (600), ``salad_max_unique`` (32), ``salad_max_alnum`` (0.25),
    ``salad_max_space`` (0.5), ``salad_max_words`` (8; 0: no word salad, at most 16),
    ``salad_min_words`` (60, at most 300: a quarter of the 1,200-code-point word window); ``skip_code_blocks``
    (True: fenced code is masked on the text channel), ``fence_repeat_lines`` (0; 8 in
    ``default``: a code line repeated that many times in a row inside a fence is shown to the
    detectors from that copy on, so a loop in code needs more evidence, never none; 0 = masked
    whole), ``fuse_hits_before_action`` (2), ``watch``
    (``"both"`` | ``"reasoning"`` | ``"text"``), ``enabled`` (the profile's
    kinds; a collection of kind names or seed letters).

    Raises
    ------
    ConfigError
        (a ``ValueError``) naming the key, the value and the rule, for an
        unknown profile or key, a value of the wrong type or out of range.

    Examples
    --------
    >>> TextConfig("fuse").enabled == frozenset({"exact_tail", "lowdiv_tail", "lowdiv_sliding"})
    True
    >>> TextConfig(window=0)
    Traceback (most recent call last):
    ...
    loopguard.errors.ConfigError: TextConfig: window=0 is invalid: must be an integer from 1 to 1000000
    """

    __slots__ = ("profile", "enabled", "watch", "skip_code_blocks", "pool_skip_key_value", "pool_min_coverage",
                 "lowdiv_max_data_share", "lowdiv_art_max_alnum", *_SHARE_KEYS, *_INT_KEYS)

    profile: str
    enabled: frozenset[str]
    watch: str
    skip_code_blocks: bool
    pool_skip_key_value: bool
    pool_min_coverage: float
    lowdiv_max_data_share: float
    lowdiv_art_max_alnum: float
    near_min_lag_share: float
    near_min_coverage: float
    near_max_record_share: float
    near_min_recurrence: float
    salad_max_alnum: float
    salad_max_space: float
    check_every: int
    min_chars: int
    window: int
    history: int
    repeats: int
    lowdiv_window: int
    ngram: int
    lowdiv_max_unique: int
    lowdiv_min_repeat: int
    slide_window: int
    slide_step: int
    slide_max_unique: int
    slide_min_repeat: int
    cycle_min_period: int
    cycle_max_period: int
    cycle_min_copies: int
    cycle_min_chars: int
    cycle_scan_chars: int
    pool_window: int
    pool_max_phrase_chars: int
    pool_min_occurrences: int
    pool_min_distinct: int
    pool_max_distinct: int
    near_ngram: int
    near_min_period: int
    near_max_period: int
    near_min_window: int
    near_recurrence_window: int
    salad_window: int
    salad_max_unique: int
    salad_max_words: int
    salad_min_words: int
    near_tolerance: int
    fence_repeat_lines: int
    fuse_hits_before_action: int

    def __init__(self, profile: str = "default", **overrides: Any) -> None:
        if not isinstance(profile, str) or profile not in PROFILES:
            raise ConfigError("profile", profile, "one of " + ", ".join(PROFILES))
        unknown = sorted(set(overrides) - set(self.__slots__) - {"profile"})
        if unknown:
            raise ConfigError(unknown[0], overrides[unknown[0]], "a known key (see TextConfig's docstring)")
        set_ = object.__setattr__
        set_(self, "profile", profile)
        tuned = PROFILE_OVERRIDES.get(profile, {})
        for key, (default, lo, hi) in _INT_KEYS.items():
            set_(self, key, _check_int(key, overrides.get(key, tuned.get(key, default)), lo, hi))
        coverage = overrides.get("pool_min_coverage", 0.75)
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not 0 < coverage <= 1:
            raise ConfigError("pool_min_coverage", coverage, "a number in (0, 1]")
        set_(self, "pool_min_coverage", float(coverage))
        share = overrides.get("lowdiv_max_data_share", tuned.get("lowdiv_max_data_share", 1.0))
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ConfigError("lowdiv_max_data_share", share, "a number in (0, 1]")
        set_(self, "lowdiv_max_data_share", float(share))
        art = overrides.get("lowdiv_art_max_alnum", tuned.get("lowdiv_art_max_alnum", 0.0))
        if isinstance(art, bool) or not isinstance(art, (int, float)) or not 0 <= art <= 1:
            raise ConfigError("lowdiv_art_max_alnum", art, "a number in [0, 1]")
        set_(self, "lowdiv_art_max_alnum", float(art))
        for key, share_default in _SHARE_KEYS.items():
            value = overrides.get(key, tuned.get(key, share_default))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise ConfigError(key, value, "a number in (0, 1]")
            set_(self, key, float(value))
        skip = overrides.get("skip_code_blocks", True)
        if not isinstance(skip, bool):
            raise ConfigError("skip_code_blocks", skip, "True or False")
        set_(self, "skip_code_blocks", skip)
        skip_kv = overrides.get("pool_skip_key_value", tuned.get("pool_skip_key_value", False))
        if not isinstance(skip_kv, bool):
            raise ConfigError("pool_skip_key_value", skip_kv, "True or False")
        set_(self, "pool_skip_key_value", skip_kv)
        watch = overrides.get("watch", "both")
        if watch not in _WATCH:
            raise ConfigError("watch", watch, "one of both, reasoning, text")
        set_(self, "watch", watch)
        enabled = overrides.get("enabled")
        set_(self, "enabled", PROFILES[profile] if enabled is None else _parse_enabled(enabled))
        if self.cycle_max_period < self.cycle_min_period:
            raise ConfigError(
                "cycle_max_period", self.cycle_max_period, f">= cycle_min_period ({self.cycle_min_period})"
            )
        if self.near_max_period < self.near_min_period:
            raise ConfigError(
                "near_max_period", self.near_max_period, f">= near_min_period ({self.near_min_period})"
            )
        if self.pool_max_distinct < self.pool_min_distinct:
            raise ConfigError(
                "pool_max_distinct", self.pool_max_distinct, f">= pool_min_distinct ({self.pool_min_distinct})"
            )

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("TextConfig is immutable; use .replace(**changes)")

    def replace(self, **changes: Any) -> TextConfig:
        """A copy with ``changes`` applied (validated like the constructor)."""
        values = self.to_dict()
        profile = changes.pop("profile", values.pop("profile"))
        if profile != self.profile:  # keep only what was set by hand, not the old profile's own values
            base = TextConfig(self.profile).to_dict()
            values = {k: v for k, v in values.items() if k != "profile" and v != base[k]}
        if "profile" in changes or ("enabled" not in changes and profile != self.profile):
            values.pop("enabled", None)
        values.update(changes)
        return TextConfig(profile, **values)

    def to_dict(self) -> dict[str, Any]:
        """All keys and values; ``enabled`` as a sorted list of kinds."""
        out: dict[str, Any] = {key: getattr(self, key) for key in self.__slots__}
        out["enabled"] = [k for k in _KIND_ORDER if k in self.enabled]
        return out

    def stream_params(self, channel: str) -> dict[str, Any]:
        """Keyword arguments of ``loopcore.ChannelStream`` for ``channel``."""
        on = self.enabled
        return {
            "mask_code": self.skip_code_blocks and channel == "text",
            "fence_repeat_lines": self.fence_repeat_lines,
            "check_every": self.check_every,
            "e_on": "exact_tail" in on,
            "min_chars": self.min_chars,
            "window": self.window,
            "history": self.history,
            "repeats": self.repeats,
            "l_on": "lowdiv_tail" in on,
            "lowdiv_window": self.lowdiv_window,
            "ngram": self.ngram,
            "lowdiv_max_unique": self.lowdiv_max_unique,
            "lowdiv_min_repeat": self.lowdiv_min_repeat,
            "lowdiv_max_data_share": self.lowdiv_max_data_share,
            "lowdiv_art_max_alnum": self.lowdiv_art_max_alnum,
            "s_on": "lowdiv_sliding" in on,
            "slide_window": self.slide_window,
            "slide_step": self.slide_step,
            "slide_max_unique": self.slide_max_unique,
            "slide_min_repeat": self.slide_min_repeat,
            "c_on": "cycle" in on,
            "cycle_min_period": self.cycle_min_period,
            "cycle_max_period": self.cycle_max_period,
            "cycle_min_copies": self.cycle_min_copies,
            "cycle_min_chars": self.cycle_min_chars,
            "cycle_scan_chars": self.cycle_scan_chars,
            "p_on": "pool" in on,
            "pool_window": self.pool_window,
            "pool_min_coverage": self.pool_min_coverage,
            "pool_max_phrase_chars": self.pool_max_phrase_chars,
            "pool_min_occurrences": self.pool_min_occurrences,
            "pool_min_distinct": self.pool_min_distinct,
            "pool_max_distinct": self.pool_max_distinct,
            "pool_skip_key_value": self.pool_skip_key_value,
            "n_on": "near_cycle" in on,
            "near_ngram": self.near_ngram,
            "near_min_period": self.near_min_period,
            "near_max_period": self.near_max_period,
            "near_min_window": self.near_min_window,
            "near_tolerance": self.near_tolerance,
            "near_min_lag_share": self.near_min_lag_share,
            "near_min_coverage": self.near_min_coverage,
            "near_max_record_share": self.near_max_record_share,
            "near_recurrence_window": self.near_recurrence_window,
            "near_min_recurrence": self.near_min_recurrence,
            "t_on": "salad" in on,
            "salad_window": self.salad_window,
            "salad_max_unique": self.salad_max_unique,
            "salad_max_alnum": self.salad_max_alnum,
            "salad_max_space": self.salad_max_space,
            "salad_max_words": self.salad_max_words,
            "salad_min_words": self.salad_min_words,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, str(v)) for k, v in self.to_dict().items())))

    def __repr__(self) -> str:
        base = TextConfig(self.profile).to_dict()
        diff = {k: v for k, v in self.to_dict().items() if k != "profile" and base[k] != v}
        extra = "".join(f", {k}={v!r}" for k, v in diff.items())
        return f"TextConfig({self.profile!r}{extra})"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TextConfig:
        """Build from a mapping such as a parsed config file (``profile`` optional)."""
        values = dict(data)
        return cls(values.pop("profile", "default"), **values)
